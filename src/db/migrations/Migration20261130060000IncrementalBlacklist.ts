import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 27 item 3: a regeneration that grows with the change (docs/scaling.md, "The blacklist
 * regeneration").
 *
 * - `blacklist_scores`: every listed address as last scored (the whitelist left out), with
 *   `changes_at`, the last moment its score is known to hold (its decay crosses to the next lower
 *   integer just after; null: it never changes again). A snapshot is written from this table.
 * - `blacklist_dirty`: addresses whose inputs changed since the last regeneration, appended by
 *   triggers on `ip_stats` (reports, feedback, clear-address, retention, severity changes) and on
 *   `whitelist` (every reported address inside an added, removed or changed range). Append-only
 *   without a unique key, so a writer never waits on the regeneration that consumes it.
 * - `blacklist_regeneration`: one row, when `blacklist_scores` was last scored in whole and in part.
 * - `blacklist_entries` as versions shared between snapshots: an entry is alive from the
 *   snapshot that wrote it (`from_snapshot`) until the one that replaced or removed it
 *   (`until_snapshot`, null while current), so a regeneration writes only what changed. The
 *   list's order is read from an index on (score desc, last_reported_at desc, ip) instead of a
 *   stored position. The snapshots written before are dropped: the next regeneration (within
 *   BLACKLIST_INTERVAL_MINUTES) writes the list again, and clients holding an older ETag or
 *   delta base get the whole list once.
 */
export class Migration20261130060000IncrementalBlacklist extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table blacklist_scores (
        ip text primary key,
        score smallint not null,
        last_reported_at timestamptz not null,
        total_reports integer not null,
        categories smallint[] not null,
        country_code text,
        changes_at timestamptz
      )`);
    this.addSql('drop table blacklist_entries');
    this.addSql('delete from blacklist_snapshots');
    this.addSql(`
      create table blacklist_entries (
        ip text not null,
        from_snapshot bigint not null,
        until_snapshot bigint,
        score smallint not null,
        last_reported_at timestamptz not null,
        total_reports integer not null,
        categories smallint[] not null,
        country_code text,
        refresh_phase integer not null default 0,
        primary key (ip, from_snapshot)
      )`);
    this.addSql('create index blacklist_entries_order_idx on blacklist_entries (score desc, last_reported_at desc, ip)');
    this.addSql('create index blacklist_entries_address_idx on blacklist_entries ((ip::inet))');
    this.addSql('create index blacklist_entries_refresh_idx on blacklist_entries (refresh_phase)');
    // Only closed versions are looked up by it (to delete those no kept snapshot holds): a new version adds nothing to it.
    this.addSql('create index blacklist_entries_until_idx on blacklist_entries (until_snapshot) where until_snapshot is not null');
    this.addSql('create unique index blacklist_entries_current_idx on blacklist_entries (ip) where until_snapshot is null');
    this.addSql('create index blacklist_scores_changes_idx on blacklist_scores (changes_at)');
    this.addSql(`
      create table blacklist_dirty (
        id bigint generated always as identity primary key,
        ip text not null
      )`);
    this.addSql(`
      create table blacklist_regeneration (
        id smallint primary key,
        full_at timestamptz not null,
        scored_at timestamptz not null
      )`);
    this.addSql(`
      create function blacklist_dirty_stats() returns trigger language plpgsql as $$
      begin
        insert into blacklist_dirty (ip) select ip from changed;
        return null;
      end $$`);
    for (const [event, table] of [['insert', 'new'], ['update', 'new'], ['delete', 'old']]) {
      this.addSql(
        `create trigger ip_stats_dirty_${event} after ${event} on ip_stats
           referencing ${table} table as changed for each statement execute function blacklist_dirty_stats()`,
      );
    }
    this.addSql(`
      create function blacklist_dirty_whitelist() returns trigger language plpgsql as $$
      begin
        insert into blacklist_dirty (ip) select s.ip from ip_stats s join changed w on s.ip::inet <<= w.range;
        return null;
      end $$`);
    this.addSql(`
      create function blacklist_dirty_whitelist_update() returns trigger language plpgsql as $$
      begin
        insert into blacklist_dirty (ip)
          select s.ip from ip_stats s
           where exists (select 1 from old_ranges w where s.ip::inet <<= w.range)
              or exists (select 1 from new_ranges w where s.ip::inet <<= w.range);
        return null;
      end $$`);
    this.addSql(
      `create trigger whitelist_dirty_insert after insert on whitelist
         referencing new table as changed for each statement execute function blacklist_dirty_whitelist()`,
    );
    this.addSql(
      `create trigger whitelist_dirty_delete after delete on whitelist
         referencing old table as changed for each statement execute function blacklist_dirty_whitelist()`,
    );
    this.addSql(
      `create trigger whitelist_dirty_update after update on whitelist
         referencing old table as old_ranges new table as new_ranges for each statement execute function blacklist_dirty_whitelist_update()`,
    );
  }

  override async down(): Promise<void> {
    for (const event of ['insert', 'update', 'delete']) {
      this.addSql(`drop trigger ip_stats_dirty_${event} on ip_stats`);
      this.addSql(`drop trigger whitelist_dirty_${event} on whitelist`);
    }
    this.addSql('drop function blacklist_dirty_whitelist_update()');
    this.addSql('drop function blacklist_dirty_whitelist()');
    this.addSql('drop function blacklist_dirty_stats()');
    this.addSql('drop table blacklist_regeneration');
    this.addSql('drop table blacklist_dirty');
    this.addSql('drop table blacklist_scores');
    this.addSql('drop table blacklist_entries');
    this.addSql('delete from blacklist_snapshots');
    this.addSql(`
      create table blacklist_entries (
        snapshot_id bigint not null references blacklist_snapshots (id) on delete cascade,
        position integer not null,
        ip text not null,
        score smallint not null,
        last_reported_at timestamptz not null,
        total_reports integer not null,
        categories smallint[] not null,
        country_code text,
        refresh_phase integer not null default 0,
        primary key (snapshot_id, position)
      )`);
    this.addSql('create index blacklist_entries_address_idx on blacklist_entries (snapshot_id, (ip::inet))');
    this.addSql('create index blacklist_entries_refresh_idx on blacklist_entries (snapshot_id, refresh_phase)');
  }
}
