import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawCall } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The ReportedIP Hive-Light WordPress plugin (1.3.x) pointed at this server with only the host
 * of its endpoint option changed: it sends JSON (categories as one string), a JSON content type
 * even on GET, no site header, and IPv6 addresses unencoded in the query.
 */
const BASE = '/wp-json/reportedip/v2';
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const headers = (key: string) => ({
  Accept: 'application/json',
  'Content-Type': 'application/json',
  'X-Key': key,
  'User-Agent': 'ReportedIP-Hive/1.3.5',
});

describe('Hive-Light', () => {
  it('tests the connection: 200 means the key is valid, 401 that it is not', async () => {
    const { key } = await s.createKey('free');
    expect((await rawCall(s.origin, `${BASE}/verify-key`, { headers: headers(key) })).status).toBe(200);
    expect((await rawCall(s.origin, `${BASE}/verify-key`, { headers: headers('trs_' + 'L'.repeat(43)) })).status).toBe(401);
  });

  it('checks an address on login (IPv4, and IPv6 unencoded), reading the score from data', async () => {
    const { key } = await s.createKey('free');
    for (const ip of ['8.8.8.8', '2001:4860:4860::8888']) {
      const res = await rawCall(s.origin, `${BASE}/check?ip=${ip}`, { headers: headers(key) });
      expect(res.status, ip).toBe(200);
      const data = res.body.data ?? res.body;
      expect(typeof data.abuseConfidencePercentage).toBe('number');
    }
  });

  it('reports failed logins and password sprays with categories as one JSON string', async () => {
    const { key } = await s.createKey('free');
    const cases = [
      { ip: '8.8.7.1', categories: '18', comment: '12 failed logins in 10 minutes' },
      { ip: '8.8.7.2', categories: '18,31', comment: '5 distinct usernames sprayed in 10 minutes' },
      { ip: '8.8.7.3', categories: '18' }, // the comment is left out when empty
    ];
    for (const body of cases) {
      const res = await rawCall(s.origin, `${BASE}/report`, { method: 'POST', headers: headers(key), body: JSON.stringify(body) });
      expect([200, 201], JSON.stringify(res.body)).toContain(res.status);
      expect(res.body.data.categories).toEqual([18]);
    }
    // 31 is not in the default catalogue: stored without it, and said so.
    const { rows } = await s.pool.query("select categories from reports where ip = '8.8.7.2'");
    expect(rows[0].categories).toEqual([18]);
  });

  it('sets its global rate-limit flag from a 429 with Retry-After in whole seconds', async () => {
    const { key, accountId } = await s.createKey('free');
    await s.pool.query("insert into usage_counters (subject, counter, day, used) values ($1, 'check', $2::date, 1000)", [
      `a:${accountId}`,
      s.clock.now().toISOString().slice(0, 10),
    ]);
    const res = await rawCall(s.origin, `${BASE}/check?ip=8.8.8.8`, { headers: headers(key) });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toMatch(/^[1-9]\d*$/);
  });
});
