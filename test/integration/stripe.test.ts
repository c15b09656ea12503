import Stripe from 'stripe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startHttpFake } from '../support/http-fake.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { signedUp, type WebClient } from '../support/web.js';

/**
 * Bundles through Stripe: the buy button opens a Checkout Session (created through the official
 * SDK against a local fake of Stripe's API), and Stripe's events, signed with the SDK's own test
 * helper, credit and take back bundles on the ledger, each event once.
 */
const WEBHOOK_SECRET = 'whsec_testsecret0123456789';
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let fake: Awaited<ReturnType<typeof startHttpFake>>;
let web: WebClient;
let accountId: number;
const stripe = new Stripe('sk_test_local');

beforeAll(async () => {
  smtp = await startSmtp();
  fake = await startHttpFake();
  fake.stub.respond = (req, res) => {
    res.setHeader('Content-Type', 'application/json');
    if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
      res.end(JSON.stringify({ id: 'cs_test_1', object: 'checkout.session', url: 'https://checkout.stripe.com/c/pay/cs_test_1' }));
    } else if (req.method === 'GET' && req.url?.startsWith('/v1/payment_intents/pi_nometa')) {
      res.end(JSON.stringify({ id: 'pi_nometa', object: 'payment_intent', metadata: { account_id: String(accountId), bundle_id: 'svc_sms_bundle_50' } }));
    } else {
      res.statusCode = 404;
      res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: 'unknown' } }));
    }
  };
  s = await startTestServer({
    config: {
      relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } },
      stripe: {
        secretKey: 'sk_test_local',
        webhookSecret: WEBHOOK_SECRET,
        prices: { svc_mail_bundle_1000: 'price_mail1000', svc_sms_bundle_50: 'price_sms50' },
        apiBase: fake.origin,
      },
    },
  });
  web = await signedUp(s, smtp, 'buyer@example.org');
  accountId = (await s.pool.query("select id from accounts where email = 'buyer@example.org'")).rows[0].id;
  await s.pool.query("update accounts set role = 'professional' where id = $1", [accountId]);
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await fake?.close();
});

/** Posts an event as Stripe would, signed with the SDK's test helper (`timestamp` to sign it then). */
function deliver(event: object, options: { secret?: string; timestamp?: number } = {}) {
  const payload = JSON.stringify(event);
  const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? WEBHOOK_SECRET, timestamp: options.timestamp });
  return call(s.origin, '/webhooks/stripe', { body: payload, headers: { 'content-type': 'application/json', 'stripe-signature': signature } });
}

const completed = (id: string, bundleId: string, paymentStatus = 'paid', type = 'checkout.session.completed', session = `cs_${id}`) => ({
  id,
  object: 'event',
  type,
  data: {
    object: { id: session, object: 'checkout.session', payment_status: paymentStatus, payment_intent: `pi_${session}`, metadata: { account_id: String(accountId), bundle_id: bundleId } },
  },
});

const refunded = (id: string, charge: Record<string, unknown>) => ({ id, object: 'event', type: 'charge.refunded', data: { object: { id: `ch_${id}`, object: 'charge', ...charge } } });

async function balance(channel: 'mail' | 'sms'): Promise<number> {
  const { rows } = await s.pool.query('select coalesce(sum(amount), 0)::int as b from bundle_ledger where account_id = $1 and channel = $2', [accountId, channel]);
  return rows[0].b;
}

describe('the buy button', () => {
  it('shows a button per bundle with a price and opens a Checkout Session with the account and bundle in its metadata', async () => {
    const page = await web.get('/account');
    expect(page.text).toContain('/account/bundles/svc_mail_bundle_1000/buy');
    expect(page.text).toContain('/account/bundles/svc_sms_bundle_50/buy');
    expect(page.text).not.toContain('svc_mail_bundle_5000');
    expect(page.headers.get('content-security-policy')).toContain("form-action 'self' https://checkout.stripe.com");
    const res = await web.post('/account/bundles/svc_mail_bundle_1000/buy', {});
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('https://checkout.stripe.com/c/pay/cs_test_1');
    const sent = new URLSearchParams(fake.last().body);
    expect(fake.last().headers.authorization).toBe('Bearer sk_test_local');
    expect(sent.get('mode')).toBe('payment');
    expect(sent.get('line_items[0][price]')).toBe('price_mail1000');
    expect(sent.get('metadata[account_id]')).toBe(String(accountId));
    expect(sent.get('metadata[bundle_id]')).toBe('svc_mail_bundle_1000');
    expect(sent.get('payment_intent_data[metadata][bundle_id]')).toBe('svc_mail_bundle_1000');
    expect(sent.get('success_url')).toBe(`${s.origin}/account?purchase=done`);
    expect(sent.get('customer_email')).toBe('buyer@example.org');
  });

  it('sells only priced bundles, and only to roles that can hold them', async () => {
    expect((await web.post('/account/bundles/svc_mail_bundle_5000/buy', {})).status).toBe(404);
    expect((await web.post('/account/bundles/__proto__/buy', {})).status).toBe(404);
    await s.pool.query("update accounts set role = 'free' where id = $1", [accountId]);
    await web.get('/account');
    const before = fake.requests.length;
    expect((await web.post('/account/bundles/svc_mail_bundle_1000/buy', {})).status).toBe(403);
    expect(fake.requests.length).toBe(before);
    await s.pool.query("update accounts set role = 'professional' where id = $1", [accountId]);
    await web.get('/account');
  });
});

describe('POST /webhooks/stripe', () => {
  it('credits a paid checkout once, however often Stripe delivers the event', async () => {
    const start = await balance('mail');
    const first = await deliver(completed('evt_paid_1', 'svc_mail_bundle_1000'));
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ ok: true, duplicate: false, channel: 'mail', balance: start + 1000 });
    const again = await deliver(completed('evt_paid_1', 'svc_mail_bundle_1000'));
    expect(again.body).toMatchObject({ ok: true, duplicate: true, balance: start + 1000 });
    expect(await balance('mail')).toBe(start + 1000);
    const audit = await s.pool.query("select actor, detail from audit_events where account_id = $1 and kind = 'bundle_purchase'", [accountId]);
    expect(audit.rows).toEqual([{ actor: 'stripe', detail: { bundle_id: 'svc_mail_bundle_1000', credits: 1000, event_id: 'evt_paid_1' } }]);
  });

  it('waits for a delayed payment: an unpaid completion credits nothing, its async success does', async () => {
    const start = await balance('sms');
    expect((await deliver(completed('evt_unpaid', 'svc_sms_bundle_50', 'unpaid'))).body).toMatchObject({ ok: true, ignored: 'not paid yet' });
    expect(await balance('sms')).toBe(start);
    await deliver(completed('evt_async', 'svc_sms_bundle_50', 'paid', 'checkout.session.async_payment_succeeded'));
    expect(await balance('sms')).toBe(start + 50);
  });

  it('takes a bundle back when its charge is refunded in full, not for a partial refund', async () => {
    const start = await balance('mail');
    const meta = { metadata: { account_id: String(accountId), bundle_id: 'svc_mail_bundle_1000' } };
    expect((await deliver(refunded('evt_partial', { refunded: false, amount: 1000, amount_refunded: 300, ...meta }))).body).toMatchObject({ ignored: 'partial refund' });
    expect(await balance('mail')).toBe(start);
    const full = await deliver(refunded('evt_full', { refunded: true, amount: 1000, amount_refunded: 1000, ...meta }));
    expect(full.body).toMatchObject({ ok: true, duplicate: false, balance: start - 1000 });
    await deliver(refunded('evt_full', { refunded: true, amount: 1000, amount_refunded: 1000, ...meta }));
    expect(await balance('mail')).toBe(start - 1000);
  });

  it("finds the bundle of a refunded charge without metadata through its PaymentIntent", async () => {
    const start = await balance('sms');
    const res = await deliver(refunded('evt_pi', { refunded: true, payment_intent: 'pi_nometa', metadata: {} }));
    expect(res.body).toMatchObject({ ok: true, channel: 'sms', balance: start - 50 });
    expect(fake.last().url).toBe('/v1/payment_intents/pi_nometa');
  });

  it('refuses a bad signature, another secret and a stale event, and applies nothing', async () => {
    const start = await balance('mail');
    const event = completed('evt_forged', 'svc_mail_bundle_1000');
    expect((await deliver(event, { secret: 'whsec_someoneelse' })).status).toBe(400);
    expect((await deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 3_600 })).status).toBe(400);
    const payload = JSON.stringify(event);
    const unsigned = await call(s.origin, '/webhooks/stripe', { body: payload, headers: { 'content-type': 'application/json' } });
    expect(unsigned.status).toBe(400);
    const tampered = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET });
    const changed = await call(s.origin, '/webhooks/stripe', { body: payload.replace('1000', '25000'), headers: { 'content-type': 'application/json', 'stripe-signature': tampered } });
    expect(changed.status).toBe(400);
    expect(await balance('mail')).toBe(start);
  });

  it('ignores events of other products and other types, and reports a bundle the account cannot hold', async () => {
    expect((await deliver({ id: 'evt_other', object: 'event', type: 'checkout.session.completed', data: { object: { payment_status: 'paid', metadata: { order: '7' } } } })).body).toMatchObject({
      ok: true,
      ignored: 'no bundle in metadata',
    });
    expect((await deliver({ id: 'evt_type', object: 'event', type: 'invoice.paid', data: { object: {} } })).body).toMatchObject({ ignored: 'invoice.paid' });
    await s.pool.query("update accounts set role = 'free' where id = $1", [accountId]);
    const res = await deliver(completed('evt_free', 'svc_mail_bundle_1000'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: false, code: 'not_bundle_eligible' });
    await s.pool.query("update accounts set role = 'professional' where id = $1", [accountId]);
  });

  it('credits a Checkout Session once, even when two different events say it was paid', async () => {
    const start = await balance('sms');
    const first = await deliver(completed('evt_twice_a', 'svc_sms_bundle_50', 'paid', 'checkout.session.completed', 'cs_twice'));
    expect(first.body).toMatchObject({ ok: true, duplicate: false, balance: start + 50 });
    const second = await deliver(completed('evt_twice_b', 'svc_sms_bundle_50', 'paid', 'checkout.session.async_payment_succeeded', 'cs_twice'));
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ ok: true, duplicate: true, balance: start + 50 });
    expect(await balance('sms')).toBe(start + 50);
    // Its refund takes the bundle back once, whatever number of refund events come.
    const meta = { metadata: { account_id: String(accountId), bundle_id: 'svc_sms_bundle_50' }, payment_intent: 'pi_cs_twice' };
    expect((await deliver(refunded('evt_twice_r1', { refunded: true, ...meta }))).body).toMatchObject({ ok: true, duplicate: false, balance: start });
    expect((await deliver(refunded('evt_twice_r2', { refunded: true, ...meta }))).body).toMatchObject({ ok: true, duplicate: true, balance: start });
    expect(await balance('sms')).toBe(start);
  });

  it('keeps a paid purchase the account can no longer hold on record, and its refund takes nothing', async () => {
    await s.pool.query("update accounts set role = 'free' where id = $1", [accountId]);
    const start = await balance('mail');
    const logsBefore = s.logs.length;
    const res = await deliver(completed('evt_lost', 'svc_mail_bundle_5000', 'paid', 'checkout.session.completed', 'cs_lost'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: false, code: 'not_bundle_eligible' });
    expect(await balance('mail')).toBe(start);
    // On record for the operator: the account's audit trail, the purchases table and a warning.
    const audit = await s.pool.query("select actor, detail from audit_events where account_id = $1 and kind = 'bundle_purchase_unapplied' and detail->>'purchase' = 'stripe:cs_lost'", [accountId]);
    expect(audit.rows).toEqual([
      { actor: 'stripe', detail: { bundle_id: 'svc_mail_bundle_5000', credits: 0, event_id: 'evt_lost', purchase: 'stripe:cs_lost', reason: 'not_bundle_eligible' } },
    ]);
    const purchase = await s.pool.query("select account_id, bundle_id, credited, reason, payment_ref from bundle_purchases where purchase_ref = 'stripe:cs_lost'");
    expect(purchase.rows).toEqual([{ account_id: accountId, bundle_id: 'svc_mail_bundle_5000', credited: false, reason: 'not_bundle_eligible', payment_ref: 'stripe:pi_cs_lost' }]);
    const warning = s.logs.slice(logsBefore).map((l) => JSON.parse(l)).find((l) => l.eventId === 'evt_lost');
    expect(warning).toMatchObject({ level: 40, code: 'not_bundle_eligible', purchase: 'stripe:cs_lost' });
    // The account can hold bundles again: the lost purchase is not credited by the way, and the
    // operator, who refunds it, takes nothing back that was never given.
    await s.pool.query("update accounts set role = 'professional' where id = $1", [accountId]);
    expect((await deliver(completed('evt_lost_again', 'svc_mail_bundle_5000', 'paid', 'checkout.session.async_payment_succeeded', 'cs_lost'))).body).toMatchObject({
      duplicate: true,
    });
    const refund = await deliver(
      refunded('evt_lost_refund', { refunded: true, payment_intent: 'pi_cs_lost', metadata: { account_id: String(accountId), bundle_id: 'svc_mail_bundle_5000' } }),
    );
    expect(refund.status).toBe(200);
    expect(refund.body).toMatchObject({ ok: true, ignored: 'purchase never credited', balance: start });
    expect(await balance('mail')).toBe(start);
    const refundAudit = await s.pool.query("select detail from audit_events where account_id = $1 and kind = 'bundle_refund_unapplied'", [accountId]);
    expect(refundAudit.rows).toEqual([{ detail: { bundle_id: 'svc_mail_bundle_5000', credits: 0, event_id: 'evt_lost_refund', purchase: 'stripe:cs_lost' } }]);
    // The audit page shows it to a Business account like any other event.
    await s.pool.query("update accounts set role = 'business', licences = 2 where id = $1", [accountId]);
    const page = await web.get('/account/audit?kind=bundle_purchase_unapplied');
    expect(page.status).toBe(200);
    expect(page.text).toContain('bundle purchase unapplied');
    expect(page.text).toContain('stripe:cs_lost');
    await s.pool.query("update accounts set role = 'professional', licences = 1 where id = $1", [accountId]);
  });

  it('takes back the credits of a refund whatever the role is now', async () => {
    const start = await balance('sms');
    await deliver(completed('evt_then_free', 'svc_sms_bundle_200', 'paid', 'checkout.session.completed', 'cs_then_free'));
    expect(await balance('sms')).toBe(start + 200);
    await s.pool.query("update accounts set role = 'free' where id = $1", [accountId]);
    const refund = await deliver(refunded('evt_then_free_r', { refunded: true, payment_intent: 'pi_cs_then_free', metadata: { account_id: String(accountId), bundle_id: 'svc_sms_bundle_200' } }));
    expect(refund.body).toMatchObject({ ok: true, duplicate: false, balance: start });
    await s.pool.query("update accounts set role = 'professional' where id = $1", [accountId]);
  });

  it('leaves the generic signed webhook as it was', async () => {
    // A well-formed event (the document's validator answers a malformed one with 400 first).
    const event = { id: 'evt_generic', type: 'bundle.purchased', data: { account_id: 1, bundle_id: 'svc_mail_bundle_1000' } };
    const res = await call(s.origin, '/webhooks/payments', { json: event });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ ok: false, code: 'not_configured' });
  });
});
