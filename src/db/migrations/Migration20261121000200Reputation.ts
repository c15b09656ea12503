import { Migration } from '@mikro-orm/migrations';

/**
 * Reports, the per-IP aggregate maintained on write, the reporters seen per IP, and the
 * operator's whitelist.
 *
 * Addresses are stored as text in canonical form (IPv4 dotted quad, IPv6 RFC 5952), so that a
 * prefix search is a range scan on a `text_pattern_ops` index.
 */
export class Migration20261121000200Reputation extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table reports (
        id bigint generated always as identity primary key,
        ip text not null,
        account_id integer not null references accounts (id) on delete cascade,
        reporter_role text not null,
        categories smallint[] not null,
        comment text not null default '',
        reported_at timestamptz not null,
        aggregation_count integer not null default 0
      )`);
    // Report history of an IP, newest first.
    this.addSql('create index reports_ip_reported_at_idx on reports (ip, reported_at desc, id desc)');
    // Aggregation: the latest report of a reporter for an IP.
    this.addSql('create index reports_account_ip_reported_at_idx on reports (account_id, ip, reported_at desc)');

    this.addSql(`
      create table ip_stats (
        ip text primary key,
        total_reports integer not null,
        report_rows integer not null,
        unique_reporters integer not null,
        honeypot_reports integer not null,
        first_reported_at timestamptz not null,
        last_reported_at timestamptz not null,
        categories smallint[] not null,
        max_severity smallint not null,
        decay_sum double precision not null,
        country_code text null,
        asn integer null,
        isp text null
      )`);
    this.addSql('create index ip_stats_ip_prefix_idx on ip_stats (ip text_pattern_ops)');
    this.addSql('create index ip_stats_country_idx on ip_stats (country_code, total_reports desc)');
    this.addSql('create index ip_stats_asn_idx on ip_stats (asn, total_reports desc)');

    this.addSql(`
      create table ip_reporters (
        ip text not null,
        account_id integer not null,
        primary key (ip, account_id)
      )`);

    this.addSql(`
      create table whitelist (
        range cidr primary key,
        note text not null default '',
        created_at timestamptz not null default now()
      )`);
    this.addSql('create index whitelist_range_idx on whitelist using gist (range inet_ops)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table whitelist');
    this.addSql('drop table ip_reporters');
    this.addSql('drop table ip_stats');
    this.addSql('drop table reports');
  }
}
