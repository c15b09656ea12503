import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The daily and all-time rollups (activity_daily, category_totals) count exactly what the hourly
 * rollup counts, whatever writes reports; the statistics read from them answer what summing
 * the hourly rollup answers; and their migration builds them from the hourly rollup.
 */
let s: TestServer;
let pro: string;
const DE = '5.9.10.10';
const GB = '81.2.69.142';

const api = (path: string, o: Parameters<typeof call>[2] & { from?: string } = {}) =>
  call(s.origin, `/api/v2${path}`, { ...o, headers: { ...o.headers, ...(o.from ? { 'X-Forwarded-For': o.from } : {}) } });
const report = async (key: string, ip: string, categories: number[], from = DE) =>
  expect((await api('/report', { key, json: { ip, categories }, from })).status).toBe(200);
const bulk = async (key: string, lines: string[], from = GB) =>
  expect((await api('/bulk-report', { key, json: { csv: lines.join('\n') }, from })).status).toBe(200);

/** Rows of the daily and all-time rollups that differ from the sums of the hourly rollup (none, when exact). */
async function drift() {
  const { rows } = await s.pool.query(`
    with d as (select date_bin('1 day', hour, timestamptz '2000-01-01Z') as day, category, sum(reports)::int as reports, sum(new_ips)::int as new_ips
                 from activity_hourly group by 1, 2),
         t as (select category, sum(reports)::bigint as reports, sum(new_ips)::bigint as new_ips from activity_hourly group by 1)
    (select 'daily' as rollup, * from d except all select 'daily', day, category, reports, new_ips from activity_daily)
    union all (select 'daily', day, category, reports, new_ips from activity_daily except all select 'daily', * from d)
    union all (select 'totals', null::timestamptz, * from t except all select 'totals', null, category, reports, new_ips from category_totals)
    union all (select 'totals', null::timestamptz, category, reports, new_ips from category_totals except all select 'totals', null, * from t)`);
  return rows;
}

/** What the statistics said when they summed the hourly rollup (the reference they must still give). */
async function fromHourly(now: Date) {
  const hour = (ms: number) => new Date(Math.floor(ms / 3_600_000) * 3_600_000);
  const day = new Date(Math.floor(now.getTime() / 86_400_000) * 86_400_000);
  const sum = async (from: Date | null) =>
    (
      await s.pool.query(
        'select coalesce(sum(reports), 0)::int as reports, coalesce(sum(new_ips), 0)::int as new_ips from activity_hourly where category = 0 and ($1::timestamptz is null or hour >= $1)',
        [from],
      )
    ).rows[0];
  const first30 = new Date(day.getTime() - 29 * 86_400_000);
  const series = await s.pool.query(
    `select to_char(date_bin('1 day', hour, $1::timestamptz) at time zone 'UTC', 'YYYY-MM-DD') as date, sum(reports)::int as reports, sum(new_ips)::int as "newIPs"
       from activity_hourly where category = 0 and hour >= $1 group by 1`,
    [first30],
  );
  const top = await s.pool.query(
    `select category as id, sum(reports)::int as count from activity_hourly where category <> 0 and hour >= $1
      group by 1 having sum(reports) > 0 order by count desc, id limit 5`,
    [first30],
  );
  const breakdown = await s.pool.query(
    `select category as id, sum(reports)::int as count from activity_hourly where category <> 0 group by 1 having sum(reports) > 0 order by count desc, id`,
  );
  return {
    all: await sum(null),
    last24h: await sum(hour(now.getTime() - 86_400_000)),
    last7d: await sum(hour(now.getTime() - 7 * 86_400_000)),
    today: await sum(day),
    series: series.rows,
    top: top.rows,
    breakdown: breakdown.rows,
  };
}

/** The statistics answered over HTTP agree with the hourly rollup's sums, and no rollup drifts. */
async function expectExact() {
  expect(await drift()).toEqual([]);
  const want = await fromHourly(s.clock.now());
  const pub = (await api('/stats-public')).body.data;
  expect({ totalIPs: pub.totalIPs, totalReports: pub.totalReports, last24h: pub.last24h, last7d: pub.last7d }).toEqual({
    totalIPs: want.all.new_ips,
    totalReports: want.all.reports,
    last24h: { newIPs: want.last24h.new_ips, newReports: want.last24h.reports },
    last7d: { newIPs: want.last7d.new_ips, newReports: want.last7d.reports },
  });
  expect(pub.categoryBreakdown.map(({ id, count }: any) => ({ id, count }))).toEqual(want.breakdown);
  expect((await api('/statistics')).body.data).toMatchObject({ total_ips: want.all.new_ips, total_reports: want.all.reports, reports_today: want.today.reports });
  const month = (await api('/trends?period=30d', { key: pro })).body.data;
  expect(month.timeSeries.filter((p: any) => p.reports > 0 || p.newIPs > 0)).toEqual(
    [...want.series].sort((a, b) => a.date.localeCompare(b.date)).filter((p) => p.reports > 0 || p.newIPs > 0),
  );
  expect(month.topCategories.map(({ id, count }: any) => ({ id, count }))).toEqual(want.top);
  return { pub, month, statistics: (await api('/statistics')).body.data, day: (await api('/trends?period=24h', { key: pro })).body.data };
}

beforeAll(async () => {
  s = await startTestServer({ config: { trustProxy: ['loopback'] } });
  pro = (await s.createKey('professional')).key;
});
afterAll(async () => {
  await s?.close();
});

describe('the daily and all-time statistics rollups', () => {
  it('stay exact through reports, merged reports, bulk reports and cleared reports, across midnights', async () => {
    const a = (await s.createKey('enterprise')).key;
    const b = (await s.createKey('enterprise')).key;
    s.clock.set('2026-06-10T23:50:00Z');
    await report(a, '8.8.8.1', [14]);
    await report(a, '77.88.8.8', [18, 22]);
    await expectExact();

    // Past midnight: a bulk report with a repeated address, a refused line and a known address.
    s.clock.set('2026-06-11T00:10:00Z');
    await bulk(a, ['8.8.8.1,18|22,again', '9.9.9.9,4', '9.9.9.9,14', '10.0.0.1,18', 'nope,18', '77.88.8.1,15']);
    // Within 5 minutes of its bulk report: merged into it, still counted as a submission.
    s.clock.set('2026-06-11T00:12:00Z');
    await report(a, '9.9.9.9', [22]);
    await report(b, '8.8.8.1', [14], GB);
    const before = await expectExact();
    expect(before.statistics).toMatchObject({ total_ips: 4, total_reports: 8, reports_today: 6 });

    // Clearing reports leaves what the statistics counted (as it always has): nothing moves.
    const cleared = await call(s.origin, '/abuseipdb/api/v2/clear-address?ipAddress=8.8.8.1', { method: 'DELETE', headers: { Key: a, Accept: 'application/json' } });
    expect(cleared.body).toEqual({ data: { numReportsDeleted: 2 } });
    expect((await expectExact()).statistics).toEqual(before.statistics);
    const all = await call(s.origin, '/abuseipdb/api/v2/clear-address?ipAddress=8.8.8.1', { method: 'DELETE', headers: { Key: b, Accept: 'application/json' } });
    expect(all.body).toEqual({ data: { numReportsDeleted: 1 } });
    expect((await expectExact()).statistics).toEqual(before.statistics);
    // An address whose reports were all cleared is new again when reported next.
    s.clock.set('2026-06-12T13:00:00Z');
    await report(b, '8.8.8.1', [4], GB);
    expect((await expectExact()).statistics).toMatchObject({ total_ips: 5, total_reports: 9, reports_today: 1 });

    // A week on: the windows have moved past the first days; a bulk report of many lines.
    s.clock.set('2026-06-18T08:30:00Z');
    await bulk(b, Array.from({ length: 40 }, (_, i) => `8.8.${4 + (i % 3)}.${i + 1},${[14, 18, 22, 4][i % 4]}`));
    const week = await expectExact();
    expect(week.pub.last7d).toEqual({ newIPs: 41, newReports: 41 });
    expect(week.day.timeSeries.find((p: any) => p.date === '2026-06-18T08:00:00Z')).toEqual({ date: '2026-06-18T08:00:00Z', reports: 40, newIPs: 40 });
  });

  it('are built by their migration from the hourly rollup of the reports made before it', async () => {
    const want = await expectExact();
    const migrator = s.orm.getMigrator();
    // Back to before the rollups' migration (the ones after it first, in reverse order).
    expect((await migrator.getExecutedMigrations()).map((m) => m.name)).toContain('Migration20261127000000DailyRollups');
    await migrator.down({ to: 'Migration20261127000000DailyRollups' });
    expect((await migrator.getExecutedMigrations()).at(-1)!.name).toBe('Migration20261126120000SenderNameBound');
    const { rows } = await s.pool.query("select to_regclass('activity_daily') as t, (select count(*)::int from category_totals where category = 0) as all_row");
    expect(rows[0]).toEqual({ t: null, all_row: 0 });
    await migrator.up();
    expect(await expectExact()).toEqual(want);
    expect((await s.pool.query('select count(*)::int as n from activity_daily')).rows[0].n).toBeGreaterThan(0);
  });
});
