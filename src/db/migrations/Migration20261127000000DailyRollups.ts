import { Migration } from '@mikro-orm/migrations';

/**
 * The daily and all-time rollups from the hourly one (into an empty activity_daily; the
 * all-time totals of reports are kept where they exist): the backfill, and the synthetic seed.
 */
export const ROLLUPS_FROM_HOURLY = [
  `insert into activity_daily (day, category, reports, new_ips)
   select date_bin('1 day', hour, timestamptz '2000-01-01T00:00:00Z'), category, sum(reports), sum(new_ips)
     from activity_hourly group by 1, 2`,
  `insert into category_totals (category, reports, new_ips)
   select category, sum(reports), sum(new_ips) from activity_hourly group by category
   on conflict (category) do update set new_ips = excluded.new_ips`,
];

/**
 * Found by the benchmark at 10 million reports (issue 15): statistics summed the hourly rollup
 * for all-time counts and for every day of a 30-day trend. Reports now also keep activity per
 * UTC day and category, and all-time totals of every category with the new addresses beside
 * the reports; category 0 counts all, as in activity_hourly. Both are backfilled from the
 * hourly rollup, which counts exactly what they count (reports never rescanned: an address
 * whose reports were cleared stays counted, as it does in the hourly rollup).
 */
export class Migration20261127000000DailyRollups extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table activity_daily (
        day timestamptz not null,
        category smallint not null,
        reports integer not null default 0,
        new_ips integer not null default 0,
        primary key (day, category)
      )`);
    this.addSql('alter table category_totals add column new_ips bigint not null default 0');
    for (const sql of ROLLUPS_FROM_HOURLY) this.addSql(sql);
  }

  override async down(): Promise<void> {
    this.addSql('delete from category_totals where category = 0');
    this.addSql('alter table category_totals drop column new_ips');
    this.addSql('drop table activity_daily');
  }
}
