import { Migration } from '@mikro-orm/migrations';

/**
 * Rollups maintained as reports arrive (so statistics never scan the reports) and the blacklist
 * snapshots the scheduled job writes (so every process serves the same list and ETag).
 */
export class Migration20261121000300Statistics extends Migration {
  override async up(): Promise<void> {
    // The country of the reporter's address at report time: the target of an attack-map connection.
    this.addSql('alter table reports add column reporter_country text null');

    // Report submissions and newly reported addresses per UTC hour; category 0 counts all.
    this.addSql(`
      create table activity_hourly (
        hour timestamptz not null,
        category smallint not null,
        reports integer not null default 0,
        new_ips integer not null default 0,
        primary key (hour, category)
      )`);
    // Reported addresses and submissions per country of the reported address.
    this.addSql(`
      create table country_totals (
        country_code text primary key,
        ips integer not null default 0,
        reports bigint not null default 0
      )`);
    // Cross-country connections per hour: reported address's country -> reporter's country.
    this.addSql(`
      create table connections_hourly (
        hour timestamptz not null,
        source_country text not null,
        target_country text not null,
        reports integer not null default 0,
        score_sum bigint not null default 0,
        primary key (hour, source_country, target_country)
      )`);

    this.addSql(`
      create table blacklist_snapshots (
        id bigint generated always as identity primary key,
        generated_at timestamptz not null,
        checked_at timestamptz not null,
        content_hash text not null,
        entry_count integer not null,
        score_positions integer[] not null,
        stats jsonb not null
      )`);
    this.addSql(`
      create table blacklist_entries (
        snapshot_id bigint not null references blacklist_snapshots (id) on delete cascade,
        position integer not null,
        ip text not null,
        score smallint not null,
        last_reported_at timestamptz not null,
        total_reports integer not null,
        categories smallint[] not null,
        country_code text null,
        primary key (snapshot_id, position)
      )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table blacklist_entries');
    this.addSql('drop table blacklist_snapshots');
    this.addSql('drop table connections_hourly');
    this.addSql('drop table country_totals');
    this.addSql('drop table activity_hourly');
    this.addSql('alter table reports drop column reporter_country');
  }
}
