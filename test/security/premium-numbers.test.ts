import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { eventually, startSmsProvider } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Finding 3 (MEDIUM): SMS to premium-rate numbers were accepted and delivered. Only numbers that
 * can receive a 2FA SMS (mobile, or fixed-line-or-mobile where a plan cannot tell) are taken;
 * every other type is refused with 422 `number_type_not_supported`, uncharged and unsent.
 */
let s: TestServer;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
let key: string;

beforeAll(async () => {
  sms = await startSmsProvider();
  s = await startTestServer({ config: { relay: { sms: { url: sms.url, token: sms.token } } } });
  key = (await s.createKey('professional')).key;
});
afterAll(async () => {
  await s?.close();
  await sms?.close();
});

const send = (recipient_phone: string) =>
  call(s.base, '/relay-sms', { key, json: { recipient_phone, template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 } } });

const usage = async () => (await s.pool.query('select coalesce(sum(inclusive_used), 0)::int as n from relay_usage')).rows[0].n;

describe('number types', () => {
  const refusedNumbers: [string, string][] = [
    ['+499001234567', 'German 0900 premium rate'],
    ['+448431234567', 'UK 0843 premium rate'],
    ['+19005551234', 'US 900 premium rate'],
    ['+18005551234', 'US toll-free'],
    ['+498001234567', 'German toll-free'],
    ['+443001234567', 'UK 03 UAN'],
    ['+447012345678', 'UK 070 personal number'],
    ['+4930123456', 'German fixed line'],
  ];
  for (const [number, kind] of refusedNumbers) {
    it(`refuses a ${kind} number (${number}) without charging or sending`, async () => {
      const before = await usage();
      const res = await send(number);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ ok: false, code: 'number_type_not_supported' });
      expect(res.body.message).toMatch(/mobile numbers only/);
      expect(await usage()).toBe(before);
    });
  }

  it('sends to mobile numbers, and to US numbers that may be mobile', async () => {
    for (const number of ['+4915112345678', '+33612345678', '+14155552671']) expect((await send(number)).status).toBe(200);
    await eventually(() => sms.requests.length === 3);
    expect(sms.requests.map((r) => r.body.to).sort()).toEqual(['+14155552671', '+33612345678', '+4915112345678']);
  });

  it('still refuses mobile numbers outside the country list first', async () => {
    const res = await send('+919876543210');
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('country_not_supported');
  });
});
