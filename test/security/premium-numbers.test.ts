import { parsePhoneNumberFromString, type NumberType } from 'libphonenumber-js/max';
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
  // Each number with the type libphonenumber (the metadata the relay checks against) gives it:
  // the test asserts that type first, so a label here cannot claim what the number is not.
  const refusedNumbers: [string, NumberType, string][] = [
    ['+499001234567', 'PREMIUM_RATE', 'German 0900 premium rate'],
    ['+449098790123', 'PREMIUM_RATE', 'UK 09 premium rate (0909 879, an Ofcom drama range)'],
    ['+448431234567', 'PREMIUM_RATE', 'UK 0843 service number (084x, classed premium rate)'],
    ['+19005551234', 'PREMIUM_RATE', 'US 900 premium rate'],
    ['+18005551234', 'TOLL_FREE', 'US toll-free'],
    ['+498001234567', 'TOLL_FREE', 'German toll-free'],
    ['+4918012345678', 'SHARED_COST', 'German 0180 shared cost'],
    ['+33810123456', 'SHARED_COST', 'French 0810 shared cost'],
    ['+41840123456', 'SHARED_COST', 'Swiss 0840 shared cost'],
    ['+49177991234567', 'VOICEMAIL', 'German mobile voicemail access'],
    ['+3933101234501', 'VOICEMAIL', 'Italian voicemail access'],
    ['+443001234567', 'UAN', 'UK 03 UAN'],
    ['+447012345678', 'PERSONAL_NUMBER', 'UK 070 personal number'],
    ['+4930123456', 'FIXED_LINE', 'German fixed line'],
  ];
  for (const [number, type, kind] of refusedNumbers) {
    it(`refuses a ${kind} number (${number}) without charging or sending`, async () => {
      expect(parsePhoneNumberFromString(number)?.getType()).toBe(type);
      expect(parsePhoneNumberFromString(number)?.isValid()).toBe(true);
      const before = await usage();
      const sentBefore = sms.requests.length;
      const res = await send(number);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ ok: false, code: 'number_type_not_supported' });
      expect(res.body.message).toMatch(/mobile numbers only/);
      expect(await usage()).toBe(before);
      expect((await s.pool.query('select count(*)::int as n from relay_messages where recipient = $1', [number])).rows[0].n).toBe(0);
      // Nothing reaches the provider, now or once the worker has had its turn.
      await new Promise((r) => setTimeout(r, 200));
      expect(sms.requests.length).toBe(sentBefore);
      expect(sms.requests.some((r) => r.body.to === number)).toBe(false);
    });
  }

  it('sends to mobile numbers, and to US numbers that may be mobile', async () => {
    expect(['+4915112345678', '+33612345678', '+14155552671'].map((n) => parsePhoneNumberFromString(n)?.getType())).toEqual(['MOBILE', 'MOBILE', 'FIXED_LINE_OR_MOBILE']);
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
