import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { call } from '../support/http.js';
import { startSmsProvider } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * L5 (review of 2026-11-26, F6 residual): free-text SMS were on for every relay role by default,
 * and a free text could carry a link ("PayPal: your account is locked. Verify at
 * https://paypa1-secure.example/login"). Now RELAY_SMS_FREE_TEXT_ROLES is empty by default
 * (templates only), and where an operator allows free text, a text with a link is refused with
 * 422 url_not_allowed. Nothing refused is stored, queued or charged.
 */
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
let byDefault: TestServer;
let allowed: TestServer;

beforeAll(async () => {
  sms = await startSmsProvider();
  byDefault = await startTestServer({ config: { relay: { sms: { url: sms.url, token: sms.token } } } });
  allowed = await byDefault.sibling({ relay: { sms: { url: sms.url, token: sms.token }, smsFreeTextRoles: ['professional', 'business', 'enterprise'] } });
});
afterAll(async () => {
  await allowed?.close();
  await byDefault?.close();
  await sms?.close();
});

const text = (s: TestServer, key: string, recipient_phone: string, message: string) => call(s.base, '/relay-sms', { key, json: { recipient_phone, message } });

async function storedFor(s: TestServer, accountId: number) {
  const { rows } = await s.pool.query<{ messages: number; used: number }>(
    `select (select count(*)::int from relay_messages where account_id = $1) as messages,
            (select coalesce(sum(inclusive_used), 0)::int from relay_usage where account_id = $1) as used`,
    [accountId],
  );
  return rows[0]!;
}

describe('free-text SMS by default', () => {
  it('RELAY_SMS_FREE_TEXT_ROLES is empty unless the operator sets it', () => {
    expect(loadConfig({}).relay.smsFreeTextRoles).toEqual([]);
    expect(loadConfig({ RELAY_SMS_FREE_TEXT_ROLES: 'business,enterprise' }).relay.smsFreeTextRoles).toEqual(['business', 'enterprise']);
  });

  it('refuses free text for every relay tier with 422 template_required, and stores nothing; templates still go', async () => {
    for (const role of ['professional', 'business', 'enterprise'] as const) {
      const created = await byDefault.createKey(role, role === 'business' ? { licences: 2 } : {});
      const res = await text(byDefault, created.key, '+4915112340101', 'Your code is 123456');
      expect(res.status, role).toBe(422);
      expect(res.body).toMatchObject({ ok: false, code: 'template_required' });
      expect(await storedFor(byDefault, created.accountId)).toEqual({ messages: 0, used: 0 });
      const templated = await call(byDefault.base, '/relay-sms', {
        key: created.key,
        json: { recipient_phone: '+4915112340102', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 }, site_url: 'https://shop.example.com' },
      });
      expect(templated.status, role).toBe(200);
    }
  });
});

describe('links in free text, where the operator allows it', () => {
  const links = [
    'PayPal: your account is locked. Verify at https://paypa1-secure.example/login within 24h',
    'Verify at http://paypa1.example',
    'Verify at HTTPS://PAYPA1.EXAMPLE',
    'Open hxxp://x or ftp://files.example.net',
    'Verify at www.paypa1-secure.example',
    'Verify at WWW.paypa1.example now',
    'Verify at paypa1-secure.example/login',
    'Short link: bit.ly/3xYz',
    'Go to 203.0.113.9/login',
    'Go to paypa1.example:8443/login',
    'Go to paypal\u3002example/login',
    'Go to münchen-bank.example/konto',
  ];
  for (const message of links) {
    it(`refuses ${JSON.stringify(message)} with 422 url_not_allowed, storing and charging nothing`, async () => {
      const created = await allowed.createKey('professional');
      const res = await text(allowed, created.key, '+4915112340201', message);
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ ok: false, code: 'url_not_allowed' });
      expect(res.body.errors).toEqual([expect.objectContaining({ location: 'body', name: 'message' })]);
      expect(await storedFor(allowed, created.accountId)).toEqual({ messages: 0, used: 0 });
    });
  }

  it('lets a text through that names a site without a link, or has none', async () => {
    const created = await allowed.createKey('professional');
    for (const [i, message] of [
      'Your sign-in code for shop.example.com is 482913.',
      'Code 123456, valid 5 min (e.g. for the app). Rated 4.5/5.',
      'Ihr Code: 123456. Gültig 10 Min.',
    ].entries()) {
      const res = await text(allowed, created.key, `+491511234030${i}`, message);
      expect(res.status, message).toBe(200);
    }
    expect(await storedFor(allowed, created.accountId)).toEqual({ messages: 3, used: 3 });
  });
});
