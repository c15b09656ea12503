import { Migration } from '@mikro-orm/migrations';

/**
 * Enforcement (issue 17): CrowdSec bouncers and the lookups that serve them, deltas and
 * network checks.
 *
 * - `bouncers`: one row per bouncer key an operator made (only the key's SHA-256 is kept),
 *   with its choice of list, the snapshot and choice its last pull answered from (the base of
 *   its next delta; no foreign key, snapshots come and go) and when, from where and as what it
 *   was last seen.
 * - `blacklist_entries.refresh_phase`: the second of a 12-hour cycle at which the address's
 *   decision is renewed for bouncers (from a hash of the address, so renewals spread out).
 * - Indexes by address on the entries of a snapshot (live bouncers' lookups, ranges) and on
 *   `ip_stats` (the reported addresses of a network), and by renewal second.
 */
export class Migration20261126000050Enforcement extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table bouncers (
        id integer generated always as identity primary key,
        name text not null unique,
        key_hash bytea not null unique,
        key_prefix text not null,
        confidence_minimum smallint not null default 90 check (confidence_minimum between 0 and 100),
        categories smallint[] null,
        entry_limit integer null check (entry_limit > 0),
        created_at timestamptz not null,
        last_pull_at timestamptz null,
        last_snapshot_id bigint null,
        last_choice jsonb null,
        last_seen_at timestamptz null,
        last_ip text null,
        user_agent text null
      )`);
    this.addSql('alter table blacklist_entries add column refresh_phase integer not null default 0');
    this.addSql('update blacklist_entries set refresh_phase = (hashtextextended(ip, 0) & 2147483647) % 43200');
    this.addSql('create index blacklist_entries_address_idx on blacklist_entries (snapshot_id, (ip::inet))');
    this.addSql('create index blacklist_entries_refresh_idx on blacklist_entries (snapshot_id, refresh_phase)');
    this.addSql('create index ip_stats_address_idx on ip_stats ((ip::inet))');
  }

  override async down(): Promise<void> {
    this.addSql('drop index ip_stats_address_idx');
    this.addSql('drop index blacklist_entries_refresh_idx');
    this.addSql('drop index blacklist_entries_address_idx');
    this.addSql('alter table blacklist_entries drop column refresh_phase');
    this.addSql('drop table bouncers');
  }
}
