import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Request encodings every POST operation takes (issue 12): JSON and
 * application/x-www-form-urlencoded against one schema, and `categories` as an array, a
 * comma-separated string or one integer, in both. Bodies are written out by hand, byte for byte.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
let key: string;

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  s = await startTestServer({
    config: { relay: { mail: { smtpUrl: smtp.url, from: 'Relay <relay@example.net>' }, sms: { url: sms.url, token: sms.token } } },
  });
  key = (await s.createKey('professional')).key;
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const form = (path: string, body: string) => call(s.origin, `/api/v2${path}`, { method: 'POST', key, headers: FORM, body });
const json = (path: string, body: string) => call(s.origin, `/api/v2${path}`, { method: 'POST', key, headers: { 'content-type': 'application/json' }, body });

describe('categories of a report', () => {
  it('takes one integer in JSON', async () => {
    const res = await json('/report', '{"ip":"8.8.8.1","categories":18}');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ ip: '8.8.8.1', categories: [18], ignoredCategories: [] });
  });

  it('takes one integer in a form', async () => {
    const res = await form('/report', 'ip=8.8.8.2&categories=22&comment=ssh');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ ip: '8.8.8.2', categories: [22] });
  });

  it('takes a PHP-style list in a form: categories[]= and categories[n]=', async () => {
    const brackets = await form('/report', 'ip=8.8.8.3&categories%5B%5D=18&categories%5B%5D=22');
    expect(brackets.status, JSON.stringify(brackets.body)).toBe(200);
    expect(brackets.body.data.categories).toEqual([18, 22]);
    const indexed = await form('/report', 'ip=8.8.8.4&categories%5B0%5D=14&categories%5B1%5D=18');
    expect(indexed.status, JSON.stringify(indexed.body)).toBe(200);
    expect(indexed.body.data.categories).toEqual([14, 18]);
  });

  it('takes a comma-separated string in both encodings', async () => {
    expect((await form('/report', 'ip=8.8.8.5&categories=18%2C22')).body.data.categories).toEqual([18, 22]);
    expect((await json('/report', '{"ip":"8.8.8.6","categories":"18,22"}')).body.data.categories).toEqual([18, 22]);
  });

  it('refuses what is none of these with a clear 400', async () => {
    for (const res of [await json('/report', '{"ip":"8.8.8.7","categories":{"a":1}}'), await form('/report', 'ip=8.8.8.7&categories=eighteen')]) {
      expect(res.status).toBe(400);
      expect(res.body.meta.errors.some((e: { name: string }) => e.name.startsWith('categories'))).toBe(true);
    }
  });
});

describe('form bodies of the relay and the notification settings', () => {
  it('queues and delivers a relay mail sent as a form, headers as name[key]=value', async () => {
    const body = [
      'recipient=form-user%40example.org',
      'subject=Your+code',
      'body_text=Your+code+is+314159',
      'headers%5BFrom%5D=My+Shop+%3Cwordpress%40shop.example.com%3E',
      'headers%5BX-Shop%5D=login',
      'site_url=https%3A%2F%2Fshop.example.com',
    ].join('&');
    const res = await form('/relay-mail', body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ ok: true, queue_id: expect.any(Number) });
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes('form-user@example.org')));
    const mail = smtp.received.find((m) => m.envelopeTo.includes('form-user@example.org'))!;
    expect(mail.mail.subject).toBe('Your code');
    expect(mail.mail.text).toContain('Your code is 314159');
    expect(mail.mail.from?.value).toEqual([{ name: 'My Shop', address: 'relay@example.net' }]);
    expect(mail.mail.headers.get('x-shop')).toBe('login');
  });

  it('queues and delivers a templated SMS sent as a form, template_vars as name[key]=value', async () => {
    const body = 'recipient_phone=%2B4915112399001&template_code=2fa_code&template_vars%5Bcode%5D=271828&template_vars%5Bexpiry_min%5D=10&template_vars%5Blang%5D=en';
    const res = await form('/relay-sms', body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    await eventually(() => sms.requests.some((r) => r.body.to === '+4915112399001'));
    expect(sms.requests.find((r) => r.body.to === '+4915112399001')!.body.text).toContain('271828');
  });

  it('stores notification settings sent as a form with recipients[]=, and reads them back', async () => {
    const body = [
      'site_url=https%3A%2F%2Fform.example.com',
      'recipients%5B%5D=security%40form.example.com',
      'recipients%5B%5D=admin%40form.example.com',
      'from_name=Form+Shop',
      'from_email=wordpress%40form.example.com',
    ].join('&');
    const res = await form('/notification-config', body);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const back = await call(s.origin, `/api/v2/notification-config?site_url=${encodeURIComponent('https://form.example.com')}`, { key });
    expect(back.status).toBe(200);
    expect(back.body.data).toMatchObject({
      site: 'form.example.com',
      recipients: ['security@form.example.com', 'admin@form.example.com'],
      from_name: 'Form Shop',
      from_email: 'wordpress@form.example.com',
    });
    // One recipient, as a form cannot tell it from a list of one.
    const one = await form('/notification-config', 'site_url=https%3A%2F%2Fone.example.com&recipients=solo%40one.example.com');
    expect(one.status, JSON.stringify(one.body)).toBe(200);
    const oneBack = await call(s.origin, `/api/v2/notification-config?site_url=${encodeURIComponent('https://one.example.com')}`, { key });
    expect(oneBack.body.data.recipients).toEqual(['solo@one.example.com']);
  });
});
