import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** GET /check-block: every reported address of a network with its score, charged per address. */
let s: TestServer;
let reporters: string[];
const IN_24 = ['45.155.205.7', '45.155.205.90', '45.155.205.200'];
const V6 = ['2a0d:5600:24::1', '2a0d:5600:24:ffff::9'];

const api = (p: string, key?: string) => call(s.origin, `/api/v2${p}`, { key });
const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));

beforeAll(async () => {
  s = await startTestServer();
  reporters = [];
  for (let r = 0; r < 5; r++) reporters.push((await s.createKey('enterprise')).key);
  // .7 by five accounts, .90 by two, .200 by one: three scores. Outside: .6.1 and 45.155.204.255.
  for (const [ip, n] of [[IN_24[0]!, 5], [IN_24[1]!, 2], [IN_24[2]!, 1], ['45.155.206.1', 1], ['45.155.204.255', 1], [V6[0]!, 2], [V6[1]!, 1]] as const) {
    for (let r = 0; r < n; r++) {
      const res = await call(s.origin, '/api/v2/report', { key: reporters[r], json: { ip, categories: [18, 22] } });
      expect(res.status).toBe(200);
    }
  }
});
afterAll(async () => {
  await s?.close();
});

describe('GET /check-block', () => {
  it('lists the reported addresses of a /24, highest score first, charging one check each', async () => {
    const { key } = await s.createKey('free');
    const res = await api('/check-block?network=45.155.205.77/24', key);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      network: '45.155.205.0/24',
      networkAddress: '45.155.205.0',
      prefixLength: 24,
      netmask: '255.255.255.0',
      firstAddress: '45.155.205.0',
      lastAddress: '45.155.205.255',
      addressCount: '256',
      reportedCount: 3,
      truncated: false,
    });
    expect(res.body.data.reported.map((r: any) => r.ip)).toEqual(IN_24);
    const scores = res.body.data.reported.map((r: any) => r.abuseConfidencePercentage);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(res.body.data.reported[0]).toMatchObject({ totalReports: 5, categories: [18, 22], countryCode: expect.stringMatching(/^[A-Z]{2}$/) });
    expect(remaining(res)).toBe(1000 - 3);
  });

  it('cuts at limit and charges what it returns; an empty network costs one check', async () => {
    const { key } = await s.createKey('free');
    const cut = await api('/check-block?network=45.155.205.0/24&limit=1', key);
    expect(cut.body.data.reported.map((r: any) => r.ip)).toEqual([IN_24[0]]);
    expect(cut.body.data).toMatchObject({ reportedCount: 3, truncated: true });
    expect(remaining(cut)).toBe(999);
    const empty = await api('/check-block?network=185.220.0.0/16', key);
    expect(empty.body.data).toMatchObject({ reportedCount: 0, reported: [], addressCount: '65536' });
    expect(remaining(empty)).toBe(998);
  });

  it('takes IPv6 networks from /48, and /32 or /128 single addresses', async () => {
    const { key } = await s.createKey('professional');
    const v6 = await api(`/check-block?network=${encodeURIComponent('2a0d:5600:24::/48')}`, key);
    expect(v6.status).toBe(200);
    expect(v6.body.data.reported.map((r: any) => r.ip)).toEqual(V6);
    expect(v6.body.data.addressCount).toBe(String(2n ** 80n));
    const host = await api('/check-block?network=45.155.205.90/32', key);
    expect(host.body.data.reported.map((r: any) => r.ip)).toEqual([IN_24[1]]);
  });

  it('shows a whitelisted address with score 0', async () => {
    const { key } = await s.createKey('free');
    await new Whitelist(s.orm.em).add(IN_24[0]!, 'ours');
    const res = await api('/check-block?network=45.155.205.0/28', key);
    expect(res.body.data.reported).toEqual([expect.objectContaining({ ip: IN_24[0], abuseConfidencePercentage: 0 })]);
    await new Whitelist(s.orm.em).remove(IN_24[0]!);
  });

  it('refuses wide networks (422), malformed ones (400) and a charge beyond the quota (429, nothing charged)', async () => {
    const { key, accountId } = await s.createKey('free');
    for (const network of ['45.155.0.0/15', '10.0.0.0/8', '2a0d::/47']) {
      const res = await api(`/check-block?network=${encodeURIComponent(network)}`, key);
      expect(res.status, network).toBe(422);
      expect(res.body).toMatchObject({ code: 'network_too_large', meta: { errors: [{ location: 'query', name: 'network' }] } });
    }
    for (const network of ['45.155.205.0', '45.155.205.0/33', '45.155.205/24', 'x.1.2.3/24', '1.2.3.4/24%0a']) {
      expect((await api(`/check-block?network=${network}`, key)).status, network).toBe(400);
    }
    expect((await api('/check-block?network=45.155.205.0/24&limit=0', key)).status).toBe(400);
    expect((await api('/check-block?network=45.155.205.0/24')).status).toBe(401);
    const day = s.clock.now().toISOString().slice(0, 10);
    await s.pool.query(`insert into usage_counters (subject, counter, day, used) values ($1, 'check', $2, 998)`, [`a:${accountId}`, day]);
    const refused = await api('/check-block?network=45.155.205.0/24', key);
    expect(refused.status).toBe(429);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(remaining(refused)).toBe(2);
    const fits = await api('/check-block?network=45.155.205.0/24&limit=2', key);
    expect(fits.status).toBe(200);
    expect(remaining(fits)).toBe(0);
  });
});
