import { Migration } from '@mikro-orm/migrations';

/**
 * Closing a blacklist entry's version without touching an index (issue 27 item 3: a 1% change
 * at 1M addresses regenerated in at most a tenth of a full pass).
 *
 * A regeneration closes the current version of each address whose entry changed or left:
 * `until_snapshot` goes from null to the new snapshot. While `until_snapshot` was named by two
 * partial indexes (the current version of an address; the closed versions, for their deletion
 * and the deltas), PostgreSQL wrote each close as a new row version with an entry in every index
 * of the table: five index insertions per closed address, the largest single cost of an
 * incremental pass. With no index naming the column the close is a HOT update (the new version
 * on the same page, no index touched), for which the table keeps room on each page
 * (fillfactor 85). What the two indexes answered:
 * - an address's current version: the primary key (ip, from_snapshot), whose prefix holds the
 *   few versions of one address;
 * - which versions a snapshot closed (the deltas' summary, the deletion of versions no kept
 *   snapshot holds): `blacklist_closures`, one narrow row per close, written by the same
 *   statement that closes, deleted with the version.
 *
 * And the whitelist's triggers return at once when their statement changed no row: the
 * regeneration's purge of expired entries runs before every pass, usually deleting nothing, and
 * the join of an empty transition table with every reported address still cost ~200 ms at 1M.
 */
export class Migration20261201020000BlacklistClosures extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table blacklist_closures (
        until_snapshot bigint not null,
        ip text not null,
        from_snapshot bigint not null,
        primary key (until_snapshot, ip)
      )`);
    this.addSql(`
      insert into blacklist_closures (until_snapshot, ip, from_snapshot)
      select until_snapshot, ip, from_snapshot from blacklist_entries where until_snapshot is not null`);
    this.addSql('drop index blacklist_entries_until_idx');
    this.addSql('drop index blacklist_entries_current_idx');
    this.addSql('alter table blacklist_entries set (fillfactor = 85)');
    this.addSql(`
      create or replace function blacklist_dirty_whitelist() returns trigger language plpgsql as $$
      begin
        if not exists (select 1 from changed) then return null; end if;
        insert into blacklist_dirty (ip) select s.ip from ip_stats s join changed w on s.ip::inet <<= w.range;
        return null;
      end $$`);
    this.addSql(`
      create or replace function blacklist_dirty_whitelist_update() returns trigger language plpgsql as $$
      begin
        if not exists (select 1 from new_ranges) then return null; end if;
        insert into blacklist_dirty (ip)
          select s.ip from ip_stats s
           where exists (select 1 from old_ranges w where s.ip::inet <<= w.range)
              or exists (select 1 from new_ranges w where s.ip::inet <<= w.range);
        return null;
      end $$`);
  }

  override async down(): Promise<void> {
    // The triggers' functions as the IncrementalBlacklist migration made them.
    this.addSql(`
      create or replace function blacklist_dirty_whitelist() returns trigger language plpgsql as $$
      begin
        insert into blacklist_dirty (ip) select s.ip from ip_stats s join changed w on s.ip::inet <<= w.range;
        return null;
      end $$`);
    this.addSql(`
      create or replace function blacklist_dirty_whitelist_update() returns trigger language plpgsql as $$
      begin
        insert into blacklist_dirty (ip)
          select s.ip from ip_stats s
           where exists (select 1 from old_ranges w where s.ip::inet <<= w.range)
              or exists (select 1 from new_ranges w where s.ip::inet <<= w.range);
        return null;
      end $$`);
    this.addSql('alter table blacklist_entries reset (fillfactor)');
    this.addSql('create unique index blacklist_entries_current_idx on blacklist_entries (ip) where until_snapshot is null');
    this.addSql('create index blacklist_entries_until_idx on blacklist_entries (until_snapshot) where until_snapshot is not null');
    this.addSql('drop table blacklist_closures');
  }
}
