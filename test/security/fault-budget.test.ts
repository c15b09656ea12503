import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Finding 7: a 500 gave its charge back, so a request that made the server fail was a free
 * probe. Server errors now count against a daily budget per account (all its keys together, so
 * a new key is no way out) and per source address: within it the charge is given back, past it
 * the charge stands and the caller is refused until the next UTC day. A real 500 is made here
 * by taking a table away under the running server.
 */
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ config: { faultBudget: 3, trustProxy: ['loopback'] } });
});
afterAll(async () => {
  await s?.close();
});

const checksToday = async (accountId: number) =>
  (await s.pool.query("select coalesce(sum(used), 0)::int as n from usage_counters where subject = $1 and counter = 'check'", [`a:${accountId}`])).rows[0].n;

describe('the server-error budget', () => {
  it('refunds server errors within the budget, then charges them and refuses the caller', async () => {
    const { key, accountId } = await s.createKey('free');
    const other = await s.createKey('free');
    await s.pool.query('alter table ip_stats rename to ip_stats_away');
    try {
      // /search-public with a key is charged before its lookup, in a statement of its own
      for (let i = 1; i <= 3; i++) {
        const failed = await call(s.base, '/search-public?q=8.8.8.8', { key });
        expect(failed.status).toBe(500);
        // The error's log line is the request's: it carries the id its answer gave.
        const reqId = failed.headers.get('x-request-id');
        const logged = s.logs.map((line) => JSON.parse(line) as { msg?: string; reqId?: string }).filter((line) => line.msg === 'unexpected error');
        expect(logged.map((line) => line.reqId)).toContain(reqId);
        await new Promise((r) => setTimeout(r, 100));
        expect(await checksToday(accountId), `fault ${i} is refunded`).toBe(0);
      }
      expect((await call(s.base, '/search-public?q=8.8.8.8', { key })).status).toBe(500);
      await new Promise((r) => setTimeout(r, 100));
      expect(await checksToday(accountId), 'the fault past the budget is charged').toBe(1);
    } finally {
      await s.pool.query('alter table ip_stats_away rename to ip_stats');
    }
    const refused = await call(s.base, '/check?ip=8.8.8.8', { key });
    expect(refused.status).toBe(429);
    expect(refused.body.meta.success).toBe(false);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The source address is past its budget too: another key from it is refused as well.
    expect((await call(s.base, '/verify-key', { key: other.key })).status).toBe(429);
    const faults = await s.pool.query("select subject, used from usage_counters where counter = 'faults' order by subject");
    expect(faults.rows).toEqual([
      { subject: `a:${accountId}`, used: 4 },
      { subject: 'ip:127.0.0.1', used: 4 },
    ]);
    // The next UTC day the caller is served again.
    s.clock.advance(86_400_000);
    expect((await call(s.base, '/check?ip=8.8.8.8', { key })).status).toBe(200);
  });

  it('never charges a check whose lookup failed: the charge is in the statement that reads', async () => {
    const { key, accountId } = await s.createKey('free');
    await s.pool.query('alter table ip_stats rename to ip_stats_away');
    try {
      expect((await call(s.base, '/check?ip=8.8.8.8', { key, headers: { 'X-Forwarded-For': '198.51.100.90' } })).status).toBe(500);
    } finally {
      await s.pool.query('alter table ip_stats_away rename to ip_stats');
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(await checksToday(accountId)).toBe(0);
    const served = await call(s.base, '/check?ip=8.8.8.8', { key, headers: { 'X-Forwarded-For': '198.51.100.90' } });
    expect(served.status).toBe(200);
    expect(served.headers.get('x-ratelimit-remaining')).toBe('999');
    expect(await checksToday(accountId)).toBe(1);
  });

  it('counts per account: a new key of the account, from another source, is refused too', async () => {
    const { key, accountId } = await s.createKey('professional');
    const from = (ip: string) => ({ 'X-Forwarded-For': ip });
    await s.pool.query('alter table ip_stats rename to ip_stats_away');
    try {
      // Four server errors, each from a source of its own: no source reaches the budget.
      for (let i = 1; i <= 4; i++) expect((await call(s.base, '/check?ip=8.8.8.8', { key, headers: from(`198.51.100.${i}`) })).status).toBe(500);
      await new Promise((r) => setTimeout(r, 200));
    } finally {
      await s.pool.query('alter table ip_stats_away rename to ip_stats');
    }
    const fresh = await s.createKey('professional', { accountId });
    const refused = await call(s.base, '/check?ip=8.8.8.8', { key: fresh.key, headers: from('198.51.100.50') });
    expect(refused.status).toBe(429);
    expect(refused.body.meta.code).toBe(429);
    // Another account from that same fresh source is served.
    const stranger = await s.createKey('professional');
    expect((await call(s.base, '/check?ip=8.8.8.8', { key: stranger.key, headers: from('198.51.100.50') })).status).toBe(200);
  });
});
