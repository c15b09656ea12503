import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../src/relay/payments.js';
import { call, rawCall } from '../support/http.js';
import { startSmsProvider } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Finding 6 (LOW), one part each: free-text SMS per role and a bounded site prefix; the ASN
 * overflow of search-public; the public limit per wider IPv6 prefix; /metrics private by
 * default; bundle ids from a prototype; OPTIONS on relay paths.
 */
let s: TestServer;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const SECRET = 'whsec_0123456789abcdef';

beforeAll(async () => {
  sms = await startSmsProvider();
  s = await startTestServer({
    config: {
      trustProxy: true,
      relay: { sms: { url: sms.url, token: sms.token }, smsFreeTextRoles: ['enterprise'] },
      publicLimits: { perAddress: 100, v6AggregatePrefix: 48, v6AggregateLimit: 5 },
      payments: { secret: SECRET, toleranceSeconds: 300 },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await sms?.close();
});

describe('free-text SMS and the site prefix', () => {
  it('lets the operator keep free text to some tiers: the others must use a template', async () => {
    const pro = (await s.createKey('professional')).key;
    const ent = (await s.createKey('enterprise')).key;
    const raw = { recipient_phone: '+4915112340001', message: 'Call +44 909 879 0000 now to unlock your account' };
    const refused = await call(s.base, '/relay-sms', { key: pro, json: raw });
    expect(refused.status).toBe(422);
    expect(refused.body.code).toBe('template_required');
    expect((await call(s.base, '/relay-sms', { key: ent, json: raw })).status).toBe(200);
    const templated = { recipient_phone: '+4915112340002', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 } };
    expect((await call(s.base, '/relay-sms', { key: pro, json: templated })).status).toBe(200);
  });

  it('bounds the site name that prefixes a templated SMS', async () => {
    const pro = (await s.createKey('professional')).key;
    const body = (site_url: string) => ({ recipient_phone: '+4915112340003', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 }, site_url });
    const long = await call(s.base, '/relay-sms', { key: pro, json: body(`https://your-bank-account-is-locked-call-us-now.example/`) });
    expect(long.status).toBe(422);
    expect(long.body.code).toBe('invalid_request');
    expect((await call(s.base, '/relay-sms', { key: pro, json: body('https://www.shop.example/') })).status).toBe(200);
  });
});

describe('search-public with an AS number out of range', () => {
  it('answers 400, not 500, without a key', async () => {
    for (const q of ['AS9999999999', 'AS4294967296', '9999999999']) {
      const res = await call(s.base, `/search-public?q=${q}`);
      expect(res.status, q).toBe(400);
      expect(res.body.meta).toMatchObject({ success: false, code: 400 });
    }
    expect((await call(s.base, '/search-public?q=AS4294967295')).status).toBe(200);
  });
});

describe('the public limit per wider IPv6 prefix', () => {
  it('counts every /64 of one /48 together, and another /48 apart', async () => {
    const from = (ip: string) => call(s.base, '/check-public?ip=8.8.8.8', { headers: { 'X-Forwarded-For': ip } });
    const statuses: number[] = [];
    for (let i = 1; i <= 7; i++) statuses.push((await from(`2001:db8:aa:${i.toString(16)}::1`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect((await from('2001:db8:bb:1::1')).status).toBe(200);
    expect((await from('198.51.100.7')).status).toBe(200);
  });
});

describe('/metrics', () => {
  it('answers loopback callers without a token, never a proxied one', async () => {
    expect((await rawCall(s.origin, '/metrics')).status).toBe(200);
    expect((await rawCall(s.origin, '/metrics', { headers: { 'X-Forwarded-For': '203.0.113.5' } })).status).toBe(403);
    expect((await rawCall(s.origin, '/metrics', { headers: { Forwarded: 'for=203.0.113.5' } })).status).toBe(403);
  });

  it('with METRICS_TOKEN set, needs the bearer token from anywhere', async () => {
    const token = 'metrics-token-0123456789';
    const t = await startTestServer({ config: { metricsToken: token } });
    try {
      expect((await rawCall(t.origin, '/metrics')).status).toBe(401);
      expect((await rawCall(t.origin, '/metrics', { headers: { Authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
      expect((await rawCall(t.origin, '/metrics', { headers: { Authorization: `Bearer ${token}` } })).status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe('payment events naming a prototype property', () => {
  it('refuses constructor, __proto__ and friends as unknown bundles, never 500', async () => {
    const { accountId } = await s.createKey('professional');
    for (const bundle_id of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const body = JSON.stringify({ id: `evt_${bundle_id}`, type: 'bundle.purchased', data: { account_id: accountId, bundle_id } });
      const res = await call(s.origin, '/webhooks/payments', {
        body,
        headers: { 'content-type': 'application/json', 'X-Signature': sign(SECRET, Math.floor(s.clock.now().getTime() / 1000), body) },
      });
      expect(res.status, bundle_id).toBe(422);
      expect(res.body).toMatchObject({ ok: false, code: 'unknown_bundle' });
    }
  });
});

describe('OPTIONS on relay paths', () => {
  it('answers 405 with method_not_allowed and the allowed method', async () => {
    const key = (await s.createKey('professional')).key;
    for (const [path, allowed] of [['/relay-mail', 'POST'], ['/relay-sms', 'POST'], ['/relay-quota', 'GET']] as const) {
      const res = await call(s.base, path, { method: 'OPTIONS', key });
      expect(res.status).toBe(405);
      expect(res.body).toMatchObject({ ok: false, code: 'method_not_allowed' });
      expect(res.headers.get('allow')).toBe(allowed);
    }
  });
});
