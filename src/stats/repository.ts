import type { Queryable } from '../db/pool.js';

/**
 * Reads of the statistics rollups that reports maintain (activity per hour and category,
 * totals per category and country, connections between countries per hour), and of the keys
 * for the service's key count. Never a scan of the reports.
 */
export class StatsRepository {
  constructor(private readonly db: Queryable) {}

  /** Reports and newly reported addresses (all categories) since `from`, or ever. */
  async activitySince(from: Date | null): Promise<{ reports: number; new_ips: number }> {
    const { rows } = await this.db.query<{ reports: number; new_ips: number }>({
      name: 'activity-since',
      text: `select coalesce(sum(reports), 0)::int as reports, coalesce(sum(new_ips), 0)::int as new_ips
               from activity_hourly where category = 0 and ($1::timestamptz is null or hour >= $1)`,
      values: [from],
    });
    return rows[0]!;
  }

  /** Reports per category, most first: all time from the totals, or since `from` from the hourly rollup. */
  async categoryCounts(from: Date | null, limit: number | null, only: number | null): Promise<{ category: number; count: number }[]> {
    const { rows } =
      from === null
        ? await this.db.query<{ category: number; count: number }>({
            name: 'category-totals',
            text: `select category, reports::int as count from category_totals
                    where reports > 0 and ($2::smallint is null or category = $2)
                    order by count desc, category limit $1`,
            values: [limit, only],
          })
        : await this.db.query<{ category: number; count: number }>({
            name: 'category-counts',
            text: `select category, sum(reports)::int as count from activity_hourly
                    where category <> 0 and hour >= $1 and ($3::smallint is null or category = $3)
                    group by category having sum(reports) > 0
                    order by count desc, category limit $2`,
            values: [from, limit, only],
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

  /** Reports and new addresses per bucket (`step`: an interval) from `first`, one category or all. */
  async buckets(first: Date, step: '1 hour' | '1 day', category: number | null): Promise<{ bucket: Date; reports: number; new_ips: number }[]> {
    const { rows } = await this.db.query<{ bucket: Date; reports: number; new_ips: number }>({
      name: 'trend-buckets',
      text: `select date_bin($3::interval, hour, $1::timestamptz) as bucket,
                    sum(reports)::int as reports, sum(new_ips)::int as new_ips
               from activity_hourly
              where hour >= $1 and category = coalesce($2::smallint, 0)
              group by 1`,
      values: [first, category, step],
    });
    return rows;
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
