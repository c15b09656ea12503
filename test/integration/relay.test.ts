import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BundleLedger, bundleBalance } from '../../src/relay/ledger.repository.js';
import { sign } from '../../src/relay/payments.js';
import { call } from '../support/http.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const SECRET = 'whsec_test_0123456789abcdef';
const dkimKey = generateKeyPairSync('rsa', { modulusLength: 2048 });
let seq = 0;
const uniqueEmail = () => `user${++seq}@example.org`;
const uniquePhone = () => `+4915112${String(345000 + ++seq).padStart(6, '0')}`;

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  const keyFile = path.join(mkdtempSync(path.join(tmpdir(), 'trs-dkim-')), 'dkim.pem');
  writeFileSync(keyFile, dkimKey.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  s = await startTestServer({
    config: {
      relay: {
        mail: {
          smtpUrl: smtp.url,
          from: 'Example Relay <relay@mail.example.net>',
          dkim: { domainName: 'mail.example.net', keySelector: 'trs2026', keyFile },
        },
        sms: { url: sms.url, token: sms.token, sender: 'Example' },
        // Free-text SMS are off by default (templates only); these tests send both.
        smsFreeTextRoles: ['professional', 'business', 'enterprise'],
        retryLimit: 1,
        retryDelaySeconds: 1,
      },
      payments: { secret: SECRET, toleranceSeconds: 300 },
    },
  });
  s.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

const api = (p: string, o: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${p}`, o);
const mail = (key: string | undefined, json: Record<string, unknown> = {}) =>
  api('/relay-mail', { key, json: { recipient: uniqueEmail(), subject: 'Your code', body_text: 'Code 123456', ...json } });
const text = (key: string | undefined, json: Record<string, unknown> = {}) =>
  api('/relay-sms', { key, json: { recipient_phone: uniquePhone(), message: 'Code 123456', ...json } });

async function useInclusive(accountId: number, channel: 'mail' | 'sms', used: number, period = '2026-06-01T00:00:00Z') {
  await s.pool.query(
    `insert into relay_usage values ($1, $2, $3, $4) on conflict (account_id, channel, period_start) do update set inclusive_used = $4`,
    [accountId, channel, period, used],
  );
}

function webhook(event: object, options: { secret?: string; at?: number } = {}) {
  const raw = JSON.stringify(event);
  const t = options.at ?? Math.floor(s.clock.now().getTime() / 1000);
  return call(s.origin, '/webhooks/payments', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'X-Signature': sign(options.secret ?? SECRET, t, raw) },
    body: raw,
  });
}

describe('relay errors', () => {
  it('answers key problems with missing_api_key and invalid_api_key', async () => {
    for (const [key, code] of [
      [undefined, 'missing_api_key'],
      ['not a key', 'missing_api_key'],
      ['trs_' + 'M'.repeat(43), 'invalid_api_key'],
    ] as const) {
      const res = await mail(key);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ ok: false, code, message: expect.any(String) });
    }
  });

  it('refuses Free and Contributor with tier_forbidden', async () => {
    for (const role of ['free', 'contributor'] as const) {
      const { key } = await s.createKey(role);
      for (const res of [await mail(key), await text(key), await api('/relay-quota', { key })]) {
        expect(res.status).toBe(403);
        expect(res.body).toMatchObject({ ok: false, code: 'tier_forbidden' });
      }
    }
  });

  it('refuses an SMS without message or template with 422, and bad bodies with 400', async () => {
    const { key } = await s.createKey('professional');
    const none = await api('/relay-sms', { key, json: { recipient_phone: uniquePhone() } });
    expect(none.status).toBe(422);
    expect(none.body).toMatchObject({ ok: false, code: 'invalid_request' });
    const noBody = await api('/relay-mail', { key, json: { recipient: uniqueEmail(), subject: 'x' } });
    expect(noBody.status).toBe(422);
    const badReplyTo = await mail(key, { reply_to: 'Support <not-an-address>' });
    expect(badReplyTo.status).toBe(422);
    expect(badReplyTo.body.errors[0]).toMatchObject({ name: 'reply_to' });
    // A recipient that is not one mailbox: the relay's own check (the form allows display names).
    const badEmail = await mail(key, { recipient: 'nobody' });
    expect(badEmail.status).toBe(422);
    expect(badEmail.body).toMatchObject({ ok: false, code: 'invalid_request', errors: [{ name: 'recipient' }] });
    const unknownField = await mail(key, { cc: 'x@example.org' });
    expect(unknownField.status).toBe(400);
    const invalidNumber = await text(key, { recipient_phone: '+4900000000' });
    expect(invalidNumber.status).toBe(422);
    expect(invalidNumber.body).toMatchObject({ code: 'invalid_request' });
  });

  it('refuses SMS to countries outside the list with country_not_supported', async () => {
    const { key } = await s.createKey('professional');
    const res = await text(key, { recipient_phone: '+8613800138000' });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ ok: false, code: 'country_not_supported' });
  });

  it('backs off a recipient who gets too many messages, longer each time', async () => {
    const { key, accountId } = await s.createKey('business', { licences: 2 });
    const recipient = uniqueEmail();
    for (let i = 0; i < 3; i++) expect((await mail(key, { recipient })).status).toBe(200);
    const fourth = await mail(key, { recipient });
    expect(fourth.status).toBe(429);
    expect(fourth.body).toMatchObject({ ok: false, code: 'recipient_backoff' });
    expect(fourth.headers.get('retry-after')).toBe('60');
    s.clock.advance(60_000);
    expect((await mail(key, { recipient })).status).toBe(200);
    s.clock.advance(60_000);
    const sixth = await mail(key, { recipient });
    expect(sixth.status).toBe(429);
    expect(sixth.headers.get('retry-after')).toBe('60'); // now 120 s after the fifth
    const block = (await api('/relay-quota', { key })).body.mail;
    expect(block.queued_total).toBe(4); // refused sends are not charged
    expect(block.inclusive_used).toBe(4);
    expect(accountId).toBeGreaterThan(0);
  });

  it('caps messages per site per day with site_daily_cap', async () => {
    const { key, accountId } = await s.createKey('professional');
    const site_url = 'https://shop.example.com/login';
    expect((await text(key, { site_url })).status).toBe(200);
    // 998 more sends for the site today (the default cap is 1,000), then one that fits
    const { rowCount } = await s.pool.query(
      `update usage_counters set used = used + 998 where subject = $1 and counter = 'relay_site' and day = $2::date`,
      [`relay-site:${accountId}:shop.example.com`, s.clock.now().toISOString().slice(0, 10)],
    );
    expect(rowCount).toBe(1);
    expect((await text(key, { site_url })).status).toBe(200);
    const capped = await text(key, { site_url });
    expect(capped.status).toBe(429);
    expect(capped.body).toMatchObject({ ok: false, code: 'site_daily_cap' });
    expect(Number(capped.headers.get('retry-after'))).toBe(12 * 3600 - (s.clock.now().getTime() % 3_600_000) / 1000);
  });
});

describe('metering: inclusive quota, then bundles', () => {
  it('uses the inclusive quota to its end, then the bundle, then answers 402; a refund can go negative; a new month restores', async () => {
    const { key, accountId } = await s.createKey('professional');
    await useInclusive(accountId, 'mail', 499);
    const last = await mail(key);
    expect(last.status).toBe(200);
    expect(last.body.remaining_quota).toMatchObject({ limit: 500, inclusive_used: 500, inclusive_available: 0, bundle_balance: 0, bundle_eligible: true });
    const empty = await mail(key);
    expect(empty.status).toBe(402);
    expect(empty.body).toMatchObject({ ok: false, code: 'cap_reached_buy_bundle' });

    const ledger = new BundleLedger(s.pool, s.clock);
    await ledger.manual('purchase', accountId, 'svc_mail_bundle_1000');
    const fromBundle = await mail(key);
    expect(fromBundle.status).toBe(200);
    expect(fromBundle.body.remaining_quota).toMatchObject({ inclusive_used: 500, bundle_balance: 999 });
    await ledger.manual('refund', accountId, 'svc_mail_bundle_1000');
    const quota = await api('/relay-quota', { key });
    expect(quota.body).toMatchObject({ tier: 'professional', role: 'professional', mail_bundle_balance: -1, sms_bundle_balance: 0 });
    expect(quota.body.mail.bundle_balance).toBe(-1);
    const negative = await mail(key);
    expect(negative.status).toBe(402);
    expect(negative.body.code).toBe('cap_reached_buy_bundle');

    s.clock.set('2026-07-01T00:00:01Z');
    const newMonth = await mail(key);
    expect(newMonth.status).toBe(200);
    expect(newMonth.body.remaining_quota).toMatchObject({
      inclusive_used: 1,
      inclusive_available: 499,
      bundle_balance: -1,
      period_start: '2026-07-01T00:00:00.000Z',
      period_end: '2026-08-01T00:00:00.000Z',
    });
    s.clock.set('2026-06-15T12:00:00Z');
  });

  it('gives Enterprise fair use up to its ceiling, then monthly_cap_reached', async () => {
    const { key, accountId } = await s.createKey('enterprise');
    const first = await text(key);
    expect(first.body.remaining_quota).toMatchObject({ limit: -1, inclusive_available: -1, bundle_eligible: false });
    await useInclusive(accountId, 'sms', 10_000);
    const capped = await text(key);
    expect(capped.status).toBe(402);
    expect(capped.body).toMatchObject({ ok: false, code: 'monthly_cap_reached' });
  });

  // The embedded PostgreSQL runs one session for all connections and so one transaction at a
  // time: concurrent transactions are exercised on a PostgreSQL server.
  it.skipIf(inject('database') === undefined)('admits exactly N of many parallel sends against a balance of N, and the ledger sums to the balance', async () => {
    const { key, accountId } = await s.createKey('business', { licences: 2 });
    await useInclusive(accountId, 'sms', 75);
    const ledger = new BundleLedger(s.pool, s.clock);
    await ledger.manual('purchase', accountId, 'svc_sms_bundle_50');
    await s.pool.query(
      `insert into bundle_ledger (account_id, channel, kind, amount, created_at) values ($1, 'sms', 'consumption', -45, now())`,
      [accountId],
    );
    const results = await Promise.all(Array.from({ length: 30 }, () => text(key)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(results.filter((r) => r.status === 402).every((r) => r.body.code === 'cap_reached_buy_bundle')).toBe(true);
    expect(results.filter((r) => r.status === 402)).toHaveLength(25);
    const quota = await api('/relay-quota', { key });
    expect(quota.body.sms_bundle_balance).toBe(0);
    expect(await bundleBalance(s.pool, accountId, 'sms')).toBe(0);
  });
});

describe('payment events', () => {
  it('credits a signed purchase once, however often it arrives, and applies refunds', async () => {
    const { accountId } = await s.createKey('professional');
    const event = { id: 'evt_1', type: 'bundle.purchased', created: 1, data: { account_id: accountId, bundle_id: 'svc_sms_bundle_200' } };
    const first = await webhook(event);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ ok: true, duplicate: false, channel: 'sms', balance: 200 });
    const replay = await webhook(event);
    expect(replay.body).toEqual({ ok: true, duplicate: true, channel: 'sms', balance: 200 });
    const refund = await webhook({ ...event, id: 'evt_2', type: 'bundle.refunded' });
    expect(refund.body.balance).toBe(0);
  });

  it('refuses a bad signature, a stale event and an unknown bundle', async () => {
    const { accountId } = await s.createKey('professional');
    const event = { id: 'evt_3', type: 'bundle.purchased', data: { account_id: accountId, bundle_id: 'svc_mail_bundle_5000' } };
    const forged = await webhook(event, { secret: 'not-the-secret-at-all' });
    expect(forged.status).toBe(401);
    expect(forged.body.code).toBe('invalid_signature');
    const stale = await webhook(event, { at: Math.floor(s.clock.now().getTime() / 1000) - 301 });
    expect(stale.status).toBe(400);
    expect(stale.body.code).toBe('stale_event');
    // Dated in the future beyond the tolerance: refused the same way; within it: taken.
    const future = await webhook(event, { at: Math.floor(s.clock.now().getTime() / 1000) + 301 });
    expect(future.status).toBe(400);
    expect(future.body.code).toBe('stale_event');
    const edge = await webhook({ ...event, id: `${event.id}-edge` }, { at: Math.floor(s.clock.now().getTime() / 1000) + 300 });
    expect(edge.status).toBe(200);
    const unknown = await webhook({ ...event, id: 'evt_4', data: { account_id: accountId, bundle_id: 'svc_fax_bundle_9' } });
    expect(unknown.status).toBe(422);
    expect(await bundleBalance(s.pool, accountId, 'mail')).toBe(5000); // the edge event only
  });
});

describe('delivery', () => {
  it('delivers mail over SMTP with the right headers, DKIM-signed', async () => {
    const { key } = await s.createKey('professional');
    const recipient = uniqueEmail();
    const res = await api('/relay-mail', {
      key,
      json: {
        recipient,
        subject: 'Your sign-in code',
        body_html: '<p>Your code is <b>482913</b></p>',
        body_text: 'Your code is 482913',
        reply_to: 'Support Team <support@shop.example.com>',
        headers: [{ name: 'X-Site-Id', value: 'shop-42' }],
        site_url: 'https://shop.example.com',
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, queue_id: expect.any(Number) });
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(recipient)));
    const got = smtp.received.find((m) => m.envelopeTo.includes(recipient))!;
    expect(got.mail.from?.value).toEqual([{ name: 'Example Relay', address: 'relay@mail.example.net' }]);
    expect(got.mail.subject).toBe('Your sign-in code');
    expect(got.mail.replyTo?.value).toEqual([{ name: 'Support Team', address: 'support@shop.example.com' }]);
    expect(got.mail.headers.get('x-site-id')).toBe('shop-42');
    expect(got.mail.text?.trim()).toBe('Your code is 482913');
    expect(got.mail.html).toContain('<b>482913</b>');
    expect(got.raw).toMatch(/^DKIM-Signature: .*d=mail\.example\.net/m);
    expect(got.raw).toMatch(/s=trs2026/);
    await eventually(async () => (await api('/relay-quota', { key })).body.mail.sent === 1);
    expect((await api('/relay-quota', { key })).body.mail).toMatchObject({ sent: 1, queued: 0, queued_total: 1, failed: 0 });
  });

  it('accepts the earlier field names', async () => {
    const { key } = await s.createKey('business', { licences: 2 });
    const to = uniqueEmail();
    const legacyMail = await api('/relay-mail', { key, json: { to, subject: 'Code', html_body: '<p>1234</p>', plain_body: '1234' } });
    expect(legacyMail.status).toBe(200);
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(to)));
    const phone = uniquePhone();
    const legacySms = await api('/relay-sms', { key, json: { to: phone, template_code: 'login_code', vars: { code: '9876', expiry_min: 5 } } });
    expect(legacySms.status).toBe(200);
    await eventually(() => sms.requests.some((r) => r.body.to === phone));
  });

  it('renders SMS templates on the server and sends them to the provider', async () => {
    const { key } = await s.createKey('professional');
    const phone = uniquePhone();
    const res = await api('/relay-sms', {
      key,
      json: { recipient_phone: phone, template_code: '2fa_code', template_vars: { code: '731904', expiry_min: 10, lang: 'de' } },
    });
    expect(res.status).toBe(200);
    await eventually(() => sms.requests.some((r) => r.body.to === phone));
    const request = sms.requests.find((r) => r.body.to === phone)!;
    expect(request.headers.authorization).toBe('Bearer provider-token');
    expect(request.body.text).toContain('731904');
    expect(request.body.text).toMatch(/10 Minuten/);
    expect(request.body.sender).toBe('Example');
  });

  it('retries a failing provider, then marks the message failed and gives its charge back', async () => {
    const { key } = await s.createKey('professional');
    sms.fail(5, 503);
    const before = sms.requests.length;
    const res = await text(key);
    expect(res.status).toBe(200);
    expect(res.body.remaining_quota).toMatchObject({ inclusive_used: 1, queued: 1 });
    await eventually(async () => (await api('/relay-quota', { key })).body.sms.failed === 1, 20_000);
    expect(sms.requests.length - before).toBe(2); // the first try and one retry
    expect((await api('/relay-quota', { key })).body.sms).toMatchObject({ failed: 1, queued: 0, sent: 0, inclusive_used: 0 });
    sms.fail(0);
  });
});
