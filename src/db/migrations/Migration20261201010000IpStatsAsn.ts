import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 28, item 6: networks, not only addresses. `ip_stats.asn` has been written at report time
 * since the first schema (GeoIP's AS of the address when it was first reported; null where the
 * data had none). `GET /check-asn` reads an AS's addresses most recently reported first, and
 * counts those reported within `maxAgeInDays`: an index on `(asn, last_reported_at desc)`,
 * partial on `asn is not null` (addresses without an AS are never asked for by it). Rows left
 * null are filled by `trs geo backfill-asn`, or as their addresses are reported again.
 */
export class Migration20261201010000IpStatsAsn extends Migration {
  override async up(): Promise<void> {
    this.addSql('create index ip_stats_asn_recent_idx on ip_stats (asn, last_reported_at desc) where asn is not null');
  }

  override async down(): Promise<void> {
    this.addSql('drop index ip_stats_asn_recent_idx');
  }
}
