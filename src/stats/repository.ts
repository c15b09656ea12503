import type { Queryable } from '../db/pool.js';

const DAY = 86_400_000;

/**
 * How long the hourly rollups are read back: a window reads its partial first day by hour, and
 * the longest window by hours starts 7 days back (the 7-day activity), so 8 whole days of
 * activity_hourly are enough; connections are read over the last 24 hours (the attack map).
 * Older hourly rows are purged: the daily rollup and the all-time totals keep their counts.
 */
export const HOURLY_ACTIVITY_DAYS = 8;
export const HOURLY_CONNECTIONS_DAYS = 2;
/** The first UTC midnight at or after `t`: a window from `t` reads hours up to it, then days. */
const dayAfter = (t: Date) => new Date(Math.ceil(t.getTime() / DAY) * DAY);

/**
 * The activity rows since the hour `from`, as rows of (category, reports, new_ips): the hourly
 * rollup up to the next midnight (`day`, see dayAfter), the daily rollup from there. `where`
 * narrows both.
 */
const activityFrom = (from: string, day: string, where: string) => `(
  select category, reports, new_ips from activity_hourly where hour >= ${from} and hour < ${day} and ${where}
  union all
  select category, reports, new_ips from activity_daily where day >= ${day} and ${where})`;

export interface Activity {
  reports: number;
  new_ips: number;
}

/**
 * Reads of the statistics rollups that reports maintain (activity per hour, per day and all
 * time per category, totals per country, connections between countries per hour), and of
 * the keys for the service's key count. Never a scan of the reports: a window reads its
 * partial first day by hour and its whole days by day.
 */
export class StatsRepository {
  constructor(private readonly db: Queryable) {}

  /** Reports and newly reported addresses (all categories) ever, and since each hour of `since`, in one statement. */
  async activity(since: Date[]): Promise<{ all: Activity; since: Activity[] }> {
    const { rows } = await this.db.query<Activity & { n: number }>({
      name: 'activity-windows',
      text: `select 0 as n, reports::int as reports, new_ips::int as new_ips from category_totals where category = 0
             union all
             select w.n::int, coalesce(sum(a.reports), 0)::int, coalesce(sum(a.new_ips), 0)::int
               from unnest($1::timestamptz[], $2::timestamptz[]) with ordinality as w(f, d, n)
               left join lateral ${activityFrom('w.f', 'w.d', 'category = 0')} a on true
              group by w.n`,
      values: [since, since.map(dayAfter)],
    });
    const byN = new Map(rows.map((r) => [r.n, { reports: r.reports, new_ips: r.new_ips }]));
    const none = { reports: 0, new_ips: 0 };
    return { all: byN.get(0) ?? none, since: since.map((_, i) => byN.get(i + 1) ?? none) };
  }

  /** Reports per category, most first: all time from the totals, or since the hour `from`. */
  async categoryCounts(from: Date | null, limit: number | null, only: number | null): Promise<{ category: number; count: number }[]> {
    const { rows } =
      from === null
        ? await this.db.query<{ category: number; count: number }>({
            name: 'category-totals',
            text: `select category, reports::int as count from category_totals
                    where category <> 0 and reports > 0 and ($2::smallint is null or category = $2)
                    order by count desc, category limit $1`,
            values: [limit, only],
          })
        : await this.db.query<{ category: number; count: number }>({
            name: 'category-counts',
            text: `select category, sum(reports)::int as count
                     from ${activityFrom('$1', '$2', 'category <> 0 and ($4::smallint is null or category = $4)')} a
                    group by category having sum(reports) > 0
                    order by count desc, category limit $3`,
            values: [from, dayAfter(from), limit, only],
          });
    return rows;
  }

  /** Countries by reported addresses, most first. */
  async topCountriesByAddresses(limit: number): Promise<{ code: string; count: number }[]> {
    const { rows } = await this.db.query<{ code: string; count: number }>({
      name: 'top-countries',
      text: 'select country_code as code, ips as count from country_totals where ips > 0 order by ips desc, country_code limit $1',
      values: [limit],
    });
    return rows;
  }

  /** Countries by reports, most first. */
  async topCountriesByReports(limit: number): Promise<{ code: string; reports: number }[]> {
    const { rows } = await this.db.query<{ code: string; reports: number }>({
      name: 'top-countries-reports',
      text: `select country_code as code, reports::int as reports from country_totals
              where reports > 0 order by reports desc, country_code limit $1`,
      values: [limit],
    });
    return rows;
  }

  async activeKeys(): Promise<number> {
    const { rows } = await this.db.query<{ count: number }>({
      name: 'active-keys',
      text: 'select count(*)::int as count from api_keys where revoked_at is null',
    });
    return rows[0]!.count;
  }

  /** Reports and new addresses per hour (from the hour `first`) or per day (from the day `first`), one category or all. */
  async buckets(first: Date, step: 'hour' | 'day', category: number | null): Promise<{ bucket: Date; reports: number; new_ips: number }[]> {
    const { rows } = await this.db.query<{ bucket: Date; reports: number; new_ips: number }>(
      step === 'hour'
        ? {
            name: 'trend-hours',
            text: 'select hour as bucket, reports, new_ips from activity_hourly where hour >= $1 and category = coalesce($2::smallint, 0)',
            values: [first, category],
          }
        : {
            name: 'trend-days',
            text: 'select day as bucket, reports, new_ips from activity_daily where day >= $1 and category = coalesce($2::smallint, 0)',
            values: [first, category],
          },
    );
    return rows;
  }

  /** Deletes hourly rollups older than any window reads (HOURLY_ACTIVITY_DAYS, HOURLY_CONNECTIONS_DAYS before `now`'s day). */
  async purgeHourly(now: Date): Promise<{ activity: number; connections: number }> {
    const day = Math.floor(now.getTime() / DAY) * DAY;
    const activity = await this.db.query('delete from activity_hourly where hour < $1', [new Date(day - HOURLY_ACTIVITY_DAYS * DAY)]);
    const connections = await this.db.query('delete from connections_hourly where hour < $1', [new Date(day - HOURLY_CONNECTIONS_DAYS * DAY)]);
    return { activity: activity.rowCount ?? 0, connections: connections.rowCount ?? 0 };
  }

  /** Reports between two different countries since `from`, the most frequent pairs first, with their mean score. */
  async connections(from: Date, limit: number): Promise<{ source: string; target: string; reports: number; score: number }[]> {
    const { rows } = await this.db.query<{ source: string; target: string; reports: number; score: number }>({
      name: 'country-connections',
      text: `select source_country as source, target_country as target, sum(reports)::int as reports,
                    round(sum(score_sum)::numeric / sum(reports))::int as score
               from connections_hourly
              where hour >= $1 and source_country <> target_country
              group by source_country, target_country
              order by reports desc, source_country, target_country limit $2`,
      values: [from, limit],
    });
    return rows;
  }
}
