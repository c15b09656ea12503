import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Positive feedback (POST /whitelist) through HTTP: what it does to an address's reputation
 * as /check shows it, and what it costs.
 */
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await s?.close();
});

const api = (path: string, options: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${path}`, options);
const today = () => s.clock.now().toISOString().slice(0, 10);
const setCounter = (accountId: number, counter: string, used: number) =>
  s.pool.query(
    `insert into usage_counters (subject, counter, day, used) values ($1, $2, $3::date, $4)
     on conflict (subject, counter, day) do update set used = excluded.used`,
    [`a:${accountId}`, counter, today(), used],
  );

describe('POST /whitelist and the reputation of the address', () => {
  it('lowers the score /check gives and counts each account once', async () => {
    const ip = '45.155.205.233';
    for (let i = 0; i < 4; i++) {
      const reporter = (await s.createKey('contributor')).key;
      expect((await api('/report', { key: reporter, json: { ip, categories: [18, 22] } })).status).toBe(200);
    }
    const reader = (await s.createKey('professional')).key;
    const before = (await api(`/check?ip=${ip}&verbose=true`, { key: reader })).body.data;
    expect(before.debugInfo.positiveFeedbackCount).toBe(0);
    expect(before.confidenceBreakdown.feedbackWeight).toBe(1);
    expect(before.abuseConfidencePercentage).toBeGreaterThan(10);

    const site = (await s.createKey('contributor')).key;
    const first = await api('/whitelist', { key: site, json: { ipAddress: ip, reason: 'our customer' } });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ ip, positiveFeedbackCount: 1, duplicate: false });
    const after = (await api(`/check?ip=${ip}&verbose=true`, { key: reader })).body.data;
    expect(after.debugInfo.positiveFeedbackCount).toBe(1);
    expect(after.confidenceBreakdown.feedbackWeight).toBeCloseTo(0.8, 5);
    expect(after.abuseConfidencePercentage).toBeLessThan(before.abuseConfidencePercentage);
    expect(first.body.data.abuseConfidencePercentage).toBe(after.abuseConfidencePercentage);

    // The same account again: recorded once, the score unchanged.
    const again = await api('/whitelist', { key: site, json: { ipAddress: ip, reason: 'still our customer' } });
    expect(again.body.data).toMatchObject({ positiveFeedbackCount: 1, duplicate: true });
    expect((await api(`/check?ip=${ip}&verbose=true`, { key: reader })).body.data.abuseConfidencePercentage).toBe(after.abuseConfidencePercentage);

    // A second account lowers it further.
    const other = (await s.createKey('professional')).key;
    expect((await api('/whitelist', { key: other, json: { ipAddress: ip } })).body.data.positiveFeedbackCount).toBe(2);
    const twice = (await api(`/check?ip=${ip}&verbose=true`, { key: reader })).body.data;
    expect(twice.debugInfo.positiveFeedbackCount).toBe(2);
    expect(twice.abuseConfidencePercentage).toBeLessThan(after.abuseConfidencePercentage);
  });
});

describe('POST /whitelist and the quotas', () => {
  it('is not charged to the report quota: a site whose reports are used up can still send it', async () => {
    const created = await s.createKey('contributor');
    await setCounter(created.accountId, 'report', 200); // the whole day's reports
    expect((await api('/report', { key: created.key, json: { ip: '8.8.8.8', categories: [18] } })).status).toBe(429);
    const res = await api('/whitelist', { key: created.key, json: { ipAddress: '8.8.8.8', reason: 'unblocked' } });
    expect(res.status).toBe(200);
    // Its headers describe the feedback counter: as large as the report quota, one used.
    expect(res.headers.get('x-ratelimit-limit')).toBe('200');
    expect(res.headers.get('x-ratelimit-remaining')).toBe('199');
    const verify = (await api('/verify-key', { key: created.key })).body.data;
    expect(verify.usage.reportsToday).toBe(200);
  });

  it('charges new feedback only, and refuses it with 429 once the feedback counter is used up', async () => {
    const created = await s.createKey('contributor');
    await setCounter(created.accountId, 'feedback', 199);
    const first = await api('/whitelist', { key: created.key, json: { ipAddress: '8.8.4.4' } });
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('0');
    // A repeat for the same address (a retry after a lost answer) costs nothing.
    const repeat = await api('/whitelist', { key: created.key, json: { ipAddress: '8.8.4.4' } });
    expect(repeat.status).toBe(200);
    expect(repeat.body.data.duplicate).toBe(true);
    const refused = await api('/whitelist', { key: created.key, json: { ipAddress: '9.9.9.9' } });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const { rows } = await s.pool.query("select count(*)::int as n from ip_feedback where ip = '9.9.9.9'");
    expect(rows[0].n).toBe(0);
    const { rows: counters } = await s.pool.query("select counter, used from usage_counters where subject = $1 and day = $2::date order by counter", [
      `a:${created.accountId}`,
      today(),
    ]);
    expect(counters).toEqual([{ counter: 'feedback', used: 200 }]);
  });
});
