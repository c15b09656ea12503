import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Finding 4 (MEDIUM): the per-site cap and the per-recipient throttle were shared by all
 * accounts, so one account could exhaust another's site cap or lock a phone number out of every
 * other account's 2FA SMS; and changing `site_url` on each send escaped the site cap. Both are
 * now scoped per account, a higher guard per recipient spans all accounts, and a key may be
 * used for a bounded number of distinct sites per day.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  s = await startTestServer({
    config: {
      relay: {
        mail: { smtpUrl: smtp.url, from: 'relay@example.net' },
        sms: { url: sms.url, token: sms.token },
        siteDailyCap: 3,
        recipientFree: 3,
        recipientGlobalDaily: 6,
      },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

const text = (key: string, recipient_phone: string, site_url?: string) =>
  call(s.base, '/relay-sms', {
    key,
    json: { recipient_phone, template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 }, ...(site_url ? { site_url } : {}) },
  });
const mail = (key: string, recipient: string, site_url?: string) =>
  call(s.base, '/relay-mail', { key, json: { recipient, subject: 'Code', body_text: '123456', ...(site_url ? { site_url } : {}) } });

describe('per-account scopes', () => {
  it("one account's sends to a number do not lock it for another account", async () => {
    const a = (await s.createKey('professional')).key;
    const b = (await s.createKey('professional')).key;
    for (let i = 0; i < 3; i++) expect((await text(a, '+4915100000001')).status).toBe(200);
    const locked = await text(a, '+4915100000001');
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe('recipient_backoff');
    expect((await text(b, '+4915100000001')).status).toBe(200);
  });

  it("one account exhausting a site's daily cap leaves another account's sends for that site alone", async () => {
    const a = (await s.createKey('business', { licences: 2 })).key;
    const b = (await s.createKey('business', { licences: 2 })).key;
    for (let i = 0; i < 3; i++) expect((await mail(a, `user${i}@example.org`, 'https://shop.example.com/login')).status).toBe(200);
    // The same site spelled otherwise is the same site.
    const capped = await mail(a, 'user9@example.org', 'https://WWW.Shop.Example.com/other');
    expect(capped.status).toBe(429);
    expect(capped.body.code).toBe('site_daily_cap');
    expect((await mail(b, 'user0@example.org', 'https://shop.example.com/login')).status).toBe(200);
  });

  it('a guard per recipient across all accounts holds the accounts that pumped it, never a newcomer', async () => {
    const phone = '+4915100000077';
    const a = (await s.createKey('professional')).key;
    const b = (await s.createKey('professional')).key;
    for (const key of [a, b]) for (let i = 0; i < 3; i++) expect((await text(key, phone)).status).toBe(200);
    // Six to this number today, the ceiling: past its backoff, an account that sent them is held.
    s.clock.advance(2 * 3_600_000);
    const held = await text(a, phone);
    expect(held.status).toBe(429);
    expect(held.body.code).toBe('recipient_backoff');
    // An account that has not sent to it (a tenant's real 2FA) is not refused for their volume.
    expect((await text((await s.createKey('professional')).key, phone)).status).toBe(200);
  });

  it('bounds the distinct sites one key is used for per day, so changing site_url escapes nothing', async () => {
    const key = (await s.createKey('professional')).key; // 10 sites a day
    for (let i = 0; i < 10; i++) expect((await mail(key, `u${i}@example.org`, `https://site${i}.example.net/`)).status).toBe(200);
    const eleventh = await mail(key, 'u10@example.org', 'https://site10.example.net/');
    expect(eleventh.status).toBe(429);
    expect(eleventh.body.code).toBe('site_daily_cap');
    expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThan(0);
    // A site already used today still works; so do sends without a site.
    expect((await mail(key, 'u11@example.org', 'https://site3.example.net/again')).status).toBe(200);
    expect((await mail(key, 'u12@example.org')).status).toBe(200);
    // The next UTC day starts the count again.
    s.clock.advance(86_400_000);
    expect((await mail(key, 'u13@example.org', 'https://site10.example.net/')).status).toBe(200);
  });
});
