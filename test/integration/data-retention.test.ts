import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeAccounts, purgeSettingsOf } from '../../src/account/job.js';
import { DAY_MS, HOUR_MS, startOfUtcDay, utcDay } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { HOURLY_ACTIVITY_DAYS, HOURLY_CONNECTIONS_DAYS } from '../../src/stats/repository.js';
import { call } from '../support/http.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 27, "everything else bounded": the tables that grew with every request and were never
 * purged. Daily usage counters (one row per key, and per public source address, per counter
 * and day) are read only on their day; the hourly statistics rollups are read back at most
 * 8 days (activity) and 24 hours (connections between countries). The hourly purge deletes the
 * rest, and every statistic answers exactly as before it.
 */
let s: TestServer;
const settings = purgeSettingsOf(loadConfig({}));

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const count = async (sql: string, values: unknown[] = []) => (await s.pool.query<{ n: number }>(`select count(*)::int as n from ${sql}`, values)).rows[0]!.n;

describe('the hourly purge of counters and rollups', () => {
  it('keeps what a window reads and deletes the rest, and every statistic answers the same', async () => {
    const ips = ['45.10.20.30', '45.10.20.31', '45.10.20.32'];
    s.clock.set('2026-06-10T12:00:00Z');
    await reportFromAccounts(s, ips, { reporters: 3 });
    // Two days later, in the hours the 7-day window reads by hour when it is read on 06-19 at noon
    // (from 06-12 12:00 to midnight): a purge that kept fewer days would change that window.
    s.clock.set('2026-06-12T14:00:00Z');
    await reportFromAccounts(s, ['45.10.20.40'], { reporters: 1 });
    s.clock.set('2026-06-10T12:30:00Z');
    const { key } = await s.createKey('professional');
    expect((await call(s.base, `/check?ip=${ips[0]}`, { key })).status).toBe(200);
    expect((await call(s.base, `/check-public?ip=${ips[1]}`)).status).toBe(200);
    const firstDay = utcDay(s.clock.now());
    expect(await count('usage_counters where day = $1::date', [firstDay])).toBeGreaterThanOrEqual(5);
    expect(await count('activity_hourly')).toBeGreaterThan(0);

    // A connection between two countries now, and one 3 days back (the attack map reads 24 hours).
    const hour = new Date(Math.floor(s.clock.now().getTime() / HOUR_MS) * HOUR_MS);
    await s.pool.query(
      `insert into connections_hourly (hour, source_country, target_country, reports, score_sum)
       values ($1, 'DE', 'US', 2, 80), ($2, 'FR', 'US', 5, 300)`,
      [new Date(hour.getTime() + 9 * DAY_MS - HOUR_MS), new Date(hour.getTime() + 6 * DAY_MS)],
    );

    // On 06-19 at noon: a check of today's, and the statistics as they answer before the purge.
    s.clock.set('2026-06-19T12:00:00Z');
    expect((await call(s.base, `/check?ip=${ips[2]}`, { key })).status).toBe(200);
    const read = async () =>
      Promise.all(
        ['/stats-public', '/statistics', '/statistics?period=week', '/statistics?period=month', '/trends?period=24h', '/trends?period=7d', '/trends?period=30d', '/trends?period=30d&category=18'].map(
          async (path) => {
            // /stats-public without a key: with one it would charge the key's counter.
            const res = await call(s.base, path, path === '/stats-public' ? {} : { key });
            expect(res.status, path).toBe(200);
            return res.body;
          },
        ),
      );
    const before = await read();
    const usage = await call(s.base, '/verify-key', { key });

    const purged = await purgeAccounts(s.pool, s.clock, settings);
    expect(purged!.usageCounters).toBeGreaterThanOrEqual(5);
    expect(purged!.hourlyRollups).toBeGreaterThan(1);

    const today = startOfUtcDay(s.clock.now());
    expect(await count('usage_counters where day < $1::date', [utcDay(new Date(today.getTime() - DAY_MS))])).toBe(0);
    expect(await count('usage_counters where day = $1::date', [utcDay(today)])).toBeGreaterThanOrEqual(1);
    expect(await count('activity_hourly where hour < $1', [new Date(today.getTime() - HOURLY_ACTIVITY_DAYS * DAY_MS)])).toBe(0);
    expect(await count('connections_hourly where hour < $1', [new Date(today.getTime() - HOURLY_CONNECTIONS_DAYS * DAY_MS)])).toBe(0);
    expect(await count("connections_hourly where source_country = 'DE'")).toBe(1);
    expect(await count('activity_daily')).toBeGreaterThan(0);

    expect(await read()).toEqual(before);
    expect((await call(s.base, '/verify-key', { key })).body).toEqual(usage.body);
    // Nothing left to purge at once after.
    expect(await purgeAccounts(s.pool, s.clock, settings)).toMatchObject({ usageCounters: 0, hourlyRollups: 0 });
  });
});
