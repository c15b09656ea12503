import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintainReports } from '../../src/account/job.js';
import { DAY_MS, MINUTE_MS } from '../../src/clock.js';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 27: reports are partitioned by month and kept REPORT_RETENTION_DAYS (365); a month
 * whose every report is older is dropped whole, older rows of the first partition
 * (reports_before: what the table held before partitioning) and of the default partition are
 * deleted, and each address they concerned is recomputed. An address must then read exactly
 * as one that never had the expired reports.
 */
let s: TestServer;
const RETENTION_MS = 365 * DAY_MS;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const api = (path: string, key: string, o: Parameters<typeof call>[2] = {}) => call(s.base, path, { key, ...o });
const report = async (key: string, ip: string, categories: number[]) => {
  const res = await api('/report', key, { json: { ip, categories, comment: 'seen' } });
  expect(res.status).toBe(200);
  return res.body.data.reportId as number;
};
const count = async (sql: string, values: unknown[] = []) => (await s.pool.query<{ n: number }>(`select count(*)::int as n from ${sql}`, values)).rows[0]!.n;
const partitionOf = async (id: number) =>
  (await s.pool.query<{ name: string }>('select tableoid::regclass::text as name from reports where id = $1', [id])).rows[0]?.name;
/** What of an address's aggregate the score is made of, and what /check and /reports show. */
const seen = async (ip: string, key: string) => {
  const check = (await api(`/check?ip=${ip}&verbose=true`, key)).body.data;
  const history = (await api(`/reports/${ip}`, key)).body.data;
  const { rows } = await s.pool.query(
    `select total_reports, report_rows, unique_reporters, honeypot_reports, first_reported_at, last_reported_at, categories, max_severity, decay_sum
       from ip_stats where ip = $1`,
    [ip],
  );
  return {
    score: check.abuseConfidencePercentage,
    totalReports: check.totalReports,
    distinctUsers: check.numDistinctUsers,
    categories: check.categories,
    lastReportedAt: check.lastReportedAt,
    debug: check.debugInfo,
    history: history.reports.map((r: Record<string, unknown>) => ({ ...r, id: undefined })),
    total: history.total,
    aggregate: rows[0],
  };
};

describe('reports past REPORT_RETENTION_DAYS', () => {
  it('go with their month, and an address reads as if they had never been made', async () => {
    const old1 = await s.createKey('business');
    const old2 = await s.createKey('business');
    const legacy = await s.createKey('business');
    const new1 = await s.createKey('business');
    const new2 = await s.createKey('enterprise');
    const reader = await s.createKey('enterprise');
    const A = '45.77.10.1';
    const B = '45.77.10.2';

    // Before any monthly partition: in reports_before.
    s.clock.set('2026-10-01T08:00:00Z');
    const inBefore = await report(legacy.key, A, [22]);
    expect(await partitionOf(inBefore)).toBe('reports_before');
    // In January 2027's partition, from two reporters.
    s.clock.set('2027-01-10T10:00:00Z');
    const inJanuary = await report(old1.key, A, [18]);
    s.clock.advance(10 * MINUTE_MS);
    await report(old2.key, A, [18, 21]);
    expect(await partitionOf(inJanuary)).toBe('reports_2027_01');

    // 14 months later, the same reports about A and about B (which never had the old ones).
    // No partition covers March 2028 yet: they wait in the default partition.
    s.clock.set('2028-03-05T10:00:00Z');
    const newReports = async (ip: string) => {
      const first = await report(new1.key, ip, [15]);
      s.clock.advance(MINUTE_MS); // within 5 minutes: aggregated into the first
      await report(new1.key, ip, [15, 16]);
      s.clock.advance(10 * MINUTE_MS);
      await report(new2.key, ip, [15]);
      s.clock.advance(MINUTE_MS);
      return first;
    };
    const firstNew = await newReports(A);
    s.clock.set('2028-03-05T10:00:00Z');
    await newReports(B);
    expect(await partitionOf(firstNew)).toBe('reports_default');
    const before = await seen(A, reader.key);
    expect(before.total).toBe(5);

    // reports_before ends where the first month made by the migration begins (the month after
    // the template was migrated): dropped whole once that bound is past the cutoff, else emptied.
    const { rows: bounds } = await s.pool.query<{ bound: string }>(
      "select pg_get_expr(c.relpartbound, c.oid) as bound from pg_class c where c.relname = 'reports_before'",
    );
    const beforeEnds = new Date(/TO \('([^']+)'\)/.exec(bounds[0]!.bound)![1]!);
    const cutoff = new Date(s.clock.now().getTime() - RETENTION_MS);
    const result = await maintainReports(s.pool, s.clock, { reportRetentionMs: RETENTION_MS });
    expect(result.partitions.includes('reports_before')).toBe(beforeEnds <= cutoff);
    expect(await count('pg_class where relname = $1', ['reports_before'])).toBe(beforeEnds <= cutoff ? 0 : 1);
    expect(result.created).toContain('reports_2028_03');
    expect(result.partitions).toContain('reports_2027_01');
    expect(result.reports).toBe(3);
    expect(result.addresses).toBeGreaterThanOrEqual(1);
    expect(await partitionOf(firstNew)).toBe('reports_2028_03');
    expect(await count('reports_default')).toBe(0);
    expect(await count('pg_class where relname in ($1, $2)', ['reports_2027_01', 'reports_expiring_2027_01'])).toBe(0);
    expect(await count('reports where reported_at < $1', [new Date(s.clock.now().getTime() - RETENTION_MS)])).toBe(0);
    expect(await count('ip_reporters where ip = $1', [A])).toBe(2);

    const a = await seen(A, reader.key);
    const b = await seen(B, reader.key);
    expect({ ...a, aggregate: { ...a.aggregate, decay_sum: undefined } }).toEqual({ ...b, aggregate: { ...b.aggregate, decay_sum: undefined } });
    // Recomputed, an aggregated report's second submission is weighed at its row's time, a
    // minute earlier than it came: 2^(1 min / 14 days) - 1 = 3.4e-5 of one submission.
    expect(Math.abs(a.aggregate.decay_sum / b.aggregate.decay_sum - 1)).toBeLessThan(1e-4);
    expect(a.categories).toEqual([15, 16]);
    expect(a.total).toBe(2);
    expect(a).not.toEqual(before);

    // Nothing left to take out; the next months exist.
    const again = await maintainReports(s.pool, s.clock, { reportRetentionMs: RETENTION_MS });
    expect(again).toMatchObject({ created: [], partitions: [], reports: 0 });
  });

  it('keep the 5-minute aggregation and clear-address working across a month boundary', async () => {
    const { key } = await s.createKey('business');
    const reader = await s.createKey('enterprise');
    const C = '45.77.10.3';
    s.clock.set('2028-03-31T23:58:00Z');
    await maintainReports(s.pool, s.clock, { reportRetentionMs: RETENTION_MS });
    const first = await report(key, C, [18]);
    s.clock.set('2028-04-01T00:01:00Z');
    expect(await report(key, C, [22])).toBe(first);
    expect(await partitionOf(first)).toBe('reports_2028_03');
    s.clock.set('2028-05-02T00:00:00Z');
    const later = await report(key, C, [14]);
    expect(await partitionOf(later)).toBe('reports_2028_05');
    expect((await api(`/check?ip=${C}`, reader.key)).body.data).toMatchObject({ totalReports: 3, categories: [14, 18, 22] });

    const cleared = await call(s.origin, `/abuseipdb/api/v2/clear-address?ipAddress=${C}`, { method: 'DELETE', headers: { Key: key, Accept: 'application/json' } });
    expect(cleared.body).toEqual({ data: { numReportsDeleted: 2 } });
    expect(await count('ip_stats where ip = $1', [C])).toBe(0);
    expect(await count('reports where ip = $1', [C])).toBe(0);
  });
});

describe('trs reports expire', () => {
  it('does the same at once and says what it did', { timeout: 120_000 }, async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI is a second process on the database
    const { key } = await s.createKey('business');
    s.clock.set(new Date(Date.now() - 400 * DAY_MS));
    await report(key, '45.77.10.9', [18]);
    const env = { ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn' };
    const { out, code } = await runCli(env, 'reports', 'expire', '--json');
    expect(code).toBe(0);
    const result = JSON.parse(out);
    expect(result).toMatchObject({ created: expect.any(Array), partitions: expect.any(Array), addresses: expect.any(Number) });
    expect(result.reports).toBeGreaterThanOrEqual(1);
    expect(await count('reports where ip = $1', ['45.77.10.9'])).toBe(0);
    expect(await count('ip_stats where ip = $1', ['45.77.10.9'])).toBe(0);
    const text = await runCli(env, 'reports', 'expire');
    expect(text.out).toMatch(/0 reports taken out, 0 addresses recomputed/);
  });
});
