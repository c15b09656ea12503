import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintainReports, purgeAccounts, purgeSettingsOf } from '../../src/account/job.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { DAY_MS } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 27, the growth test: fifteen months of mixed traffic at a fixed daily rate (bulk reports
 * of new addresses from two reporters, single reports, keyed and public checks, a regeneration of
 * the blacklist), each simulated day closed by the server's own maintenance (the hourly purge and
 * the report partitions' job). Once the retention window (365 days) is full, the data must stop
 * growing: measured at the same point of the monthly partition cycle two months apart, the rows
 * the traffic leaves behind and the database's size stay where they were, where without
 * retention every table of reports would have grown by the two months' traffic (about 16%).
 *
 * VACUUM once a simulated week stands in for autovacuum, which in production reclaims the space
 * of deleted rows by its own thresholds; without it, rows deleted here would still hold pages.
 */
let s: TestServer;
const settings = purgeSettingsOf(loadConfig({}));
const PER_DAY = 40;
const START = Date.parse('2027-01-01T00:00:00Z');
/**
 * After this day the 365-day window is full and the first month has been dropped. Measured in the
 * middle of a month: a month is dropped whole once its last day is past the window, so on the
 * first of a month the count depends on whether the previous one has just gone.
 */
const FIRST = Date.parse('2028-02-15T00:00:00Z');
/** Two whole months later: the same point of the monthly partition cycle. */
const SECOND = Date.parse('2028-04-15T00:00:00Z');

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const count = async (table: string) => (await s.pool.query<{ n: number }>(`select count(*)::int as n from ${table}`)).rows[0]!.n;

interface Measure {
  reports: number;
  ipStats: number;
  reporters: number;
  usageCounters: number;
  snapshots: number;
  partitions: number;
  bytes: number;
}

async function measure(): Promise<Measure> {
  await s.pool.query('vacuum');
  const { rows } = await s.pool.query<{ bytes: string }>(
    `select sum(pg_total_relation_size(c.oid))::bigint as bytes
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = current_schema() and c.relkind in ('r', 'm')`,
  );
  const partitions = await s.pool.query<{ n: number }>("select count(*)::int as n from pg_inherits where inhparent = 'reports'::regclass");
  return {
    reports: await count('reports'),
    ipStats: await count('ip_stats'),
    reporters: await count('ip_reporters'),
    usageCounters: await count('usage_counters'),
    snapshots: await count('blacklist_snapshots'),
    partitions: partitions.rows[0]!.n,
    bytes: Number(rows[0]!.bytes),
  };
}

describe('a year and more of traffic at a fixed rate', () => {
  it('reaches a steady state: rows and size stop growing once retention is full', { timeout: 600_000 }, async () => {
    const reporters = [(await s.createKey('enterprise')).key, (await s.createKey('enterprise')).key];
    const checker = (await s.createKey('professional')).key;
    const snapshots = blacklistSnapshots(s.pool, s.clock);
    const measures: Record<string, Measure> = {};

    for (let day = START, n = 0; day <= SECOND; day += DAY_MS, n++) {
      if (day === FIRST) measures.first = await measure();
      s.clock.set(new Date(day + 9 * 3600_000).toISOString());
      // Addresses new each day (45.a.b.i), so every one of them expires in turn.
      const prefix = `45.${(n >> 8) & 255}.${n & 255}`;
      const csv = Array.from({ length: PER_DAY }, (_, i) => `${prefix}.${i + 1},18|22,seen`).join('\n');
      const bulk = await call(s.origin, '/api/v2/bulk-report', { key: reporters[n % 2]!, json: { csv } });
      expect(bulk.status, new Date(day).toISOString()).toBe(200);
      s.clock.advance(3600_000);
      const single = await call(s.base, '/report', { key: reporters[(n + 1) % 2]!, json: { ip: `${prefix}.1`, categories: [18], comment: 'again' } });
      expect(single.status).toBe(200);
      for (const ip of [`${prefix}.1`, `${prefix}.2`, '45.200.0.1']) expect((await call(s.base, `/check?ip=${ip}`, { key: checker })).status).toBe(200);
      expect((await call(s.base, `/check-public?ip=${prefix}.3`)).status).toBe(200);
      await snapshots.regenerate();
      // The end of the day: the hourly maintenance, as the purge job runs it.
      s.clock.set(new Date(day + 23 * 3600_000).toISOString());
      await purgeAccounts(s.pool, s.clock, settings);
      await maintainReports(s.pool, s.clock, settings);
      if (n % 7 === 6) await s.pool.query('vacuum');
    }
    measures.second = await measure();
    const { first, second } = measures as { first: Measure; second: Measure };
    console.info('steady state', JSON.stringify(measures));

    // Bounded by the window: 365 days plus at most the month not yet dropped, 41 rows a day.
    const bound = (365 + 31) * (PER_DAY + 1);
    expect(first.reports).toBeLessThanOrEqual(bound);
    expect(second.reports).toBeLessThanOrEqual(bound);
    // Same point of the cycle two months apart: the same rows within the months' lengths (±3 days).
    expect(Math.abs(second.reports - first.reports)).toBeLessThanOrEqual(3 * (PER_DAY + 1));
    expect(Math.abs(second.ipStats - first.ipStats)).toBeLessThanOrEqual(3 * PER_DAY);
    expect(Math.abs(second.reporters - first.reporters)).toBeLessThanOrEqual(3 * PER_DAY * 2);
    expect(second.partitions).toBe(first.partitions);
    expect(second.usageCounters).toBeLessThanOrEqual(first.usageCounters + 2);
    expect(second.snapshots).toBeLessThanOrEqual(first.snapshots);
    // The stated bound on size: within 8% of the first measure (two months of growth would be ~16%).
    expect(second.bytes).toBeLessThanOrEqual(first.bytes * 1.08);
  });
});
