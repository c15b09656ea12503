import Stripe from 'stripe';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CHECKOUT_TIMES } from '../../src/payments/stripe.js';
import { call } from '../support/http.js';
import { startHttpFake } from '../support/http-fake.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { signedUp, WebClient } from '../support/web.js';

/**
 * The payment findings of the review of 2026-11-26:
 * - L2: every press of the buy button made a Stripe Checkout Session (50 in 0.5 s). Now the
 *   account's open session of a bundle is reused for its lifetime, one request makes it while
 *   the others wait for its page, and after a Stripe failure none is tried for 10 s.
 * - L8: chargebacks (`charge.dispute.*`) were ignored. Now an opened dispute takes the bundle
 *   back, once, on the audit trail, and a dispute won gives it back.
 * - Info: the SDK checks only a signature's age; an event signed in the future is now refused.
 */
const WEBHOOK_SECRET = 'whsec_testsecret0123456789';
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let fake: Awaited<ReturnType<typeof startHttpFake>>;
let web: WebClient;
let accountId: number;
const stripe = new Stripe('sk_test_local');
/** How the fake answers a session creation: a fresh session each time, after a short delay. */
let created = 0;
let failCreation = false;

beforeAll(async () => {
  smtp = await startSmtp();
  fake = await startHttpFake();
  fake.stub.respond = (req, res) => {
    res.setHeader('Content-Type', 'application/json');
    if (req.method === 'POST' && req.url === '/v1/checkout/sessions') {
      if (failCreation) {
        res.statusCode = 400;
        res.end(JSON.stringify({ error: { type: 'invalid_request_error', message: 'no such price' } }));
        return;
      }
      const id = `cs_test_${++created}`;
      // Slow enough that 50 presses at once all arrive while the first is being made.
      setTimeout(() => res.end(JSON.stringify({ id, object: 'checkout.session', url: `https://checkout.stripe.com/c/pay/${id}` })), 150);
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
      payments: { secret: undefined, toleranceSeconds: 300 },
    },
  });
  web = await signedUp(s, smtp, 'chargeback@example.org');
  accountId = (await s.pool.query("select id from accounts where email = 'chargeback@example.org'")).rows[0].id;
  await s.pool.query("update accounts set role = 'professional' where id = $1", [accountId]);
  await web.get('/account');
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await fake?.close();
});

const creations = () => fake.requests.filter((r) => r.method === 'POST' && r.url === '/v1/checkout/sessions').length;
const buy = (bundle = 'svc_mail_bundle_1000') => web.post(`/account/bundles/${bundle}/buy`, {});

/** Posts an event as Stripe would, signed at `timestamp` (unix seconds; the server's now by default). */
function deliver(event: object, timestamp = Math.floor(s.clock.now().getTime() / 1000)) {
  const payload = JSON.stringify(event);
  const signature = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp });
  return call(s.origin, '/webhooks/stripe', { body: payload, headers: { 'content-type': 'application/json', 'stripe-signature': signature } });
}

const completed = (id: string, session: string, bundleId = 'svc_mail_bundle_1000') => ({
  id,
  object: 'event',
  type: 'checkout.session.completed',
  data: { object: { id: session, object: 'checkout.session', payment_status: 'paid', payment_intent: `pi_${session}`, metadata: { account_id: String(accountId), bundle_id: bundleId } } },
});
const disputeEvent = (id: string, type: 'charge.dispute.created' | 'charge.dispute.closed', dispute: string, paymentIntent: string, status: string) => ({
  id,
  object: 'event',
  type,
  data: { object: { id: dispute, object: 'dispute', charge: `ch_${dispute}`, payment_intent: paymentIntent, status, amount: 1000, currency: 'eur', reason: 'fraudulent' } },
});
const refunded = (id: string, paymentIntent: string) => ({
  id,
  object: 'event',
  type: 'charge.refunded',
  data: { object: { id: `ch_${id}`, object: 'charge', refunded: true, payment_intent: paymentIntent, metadata: { account_id: String(accountId), bundle_id: 'svc_mail_bundle_1000' } } },
});

async function balance(channel: 'mail' | 'sms' = 'mail'): Promise<number> {
  const { rows } = await s.pool.query('select coalesce(sum(amount), 0)::int as b from bundle_ledger where account_id = $1 and channel = $2', [accountId, channel]);
  return rows[0].b;
}
const audit = async (kind: string) =>
  (await s.pool.query('select actor, detail from audit_events where account_id = $1 and kind = $2 order by id', [accountId, kind])).rows;

describe('L2: the buy button makes one Checkout Session per account and bundle for its lifetime', () => {
  beforeEach(async () => {
    await s.pool.query('delete from checkout_sessions');
    failCreation = false;
  });

  it('50 presses at once: Stripe is asked once, and all 50 are sent to the same page', async () => {
    const before = creations();
    const answers = await Promise.all(Array.from({ length: 50 }, () => buy()));
    expect(answers.map((a) => a.status)).toEqual(Array(50).fill(303));
    const pages = new Set(answers.map((a) => a.headers.get('location')));
    expect(pages.size).toBe(1);
    expect([...pages][0]).toMatch(/^https:\/\/checkout\.stripe\.com\/c\/pay\/cs_test_\d+$/);
    expect(creations() - before).toBe(1);
    const { rows } = await s.pool.query('select bundle_id, url, claim from checkout_sessions where account_id = $1', [accountId]);
    expect(rows).toEqual([{ bundle_id: 'svc_mail_bundle_1000', url: [...pages][0], claim: null }]);
    const sent = new URLSearchParams(fake.requests.filter((r) => r.url === '/v1/checkout/sessions').at(-1)!.body);
    expect(Number(sent.get('expires_at'))).toBe(Math.floor((s.clock.now().getTime() + CHECKOUT_TIMES.sessionMs) / 1000));
  });

  it('two processes, 25 presses each at once: still one session at Stripe', async (t) => {
    if (s.db.embedded) return t.skip(); // two processes need a PostgreSQL server
    const other = await s.sibling();
    try {
      // The same browser session, its requests spread over both processes.
      const there = new WebClient(other.origin);
      for (const [name, value] of web.cookies) there.cookies.set(name, value);
      there.csrf = web.csrf;
      const before = creations();
      const answers = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 ? there : web).post('/account/bundles/svc_sms_bundle_50/buy', {})),
      );
      expect(answers.map((a) => a.status)).toEqual(Array(50).fill(303));
      expect(new Set(answers.map((a) => a.headers.get('location'))).size).toBe(1);
      expect(creations() - before).toBe(1);
    } finally {
      await other.close();
    }
  });

  it('reuses the open session until it nears its expiry; another bundle has its own', async () => {
    const first = (await buy()).headers.get('location');
    const before = creations();
    s.clock.advance(CHECKOUT_TIMES.sessionMs - CHECKOUT_TIMES.reuseMarginMs - 60_000);
    expect((await buy()).headers.get('location')).toBe(first);
    expect(creations()).toBe(before);
    const sms = (await buy('svc_sms_bundle_50')).headers.get('location');
    expect(sms).not.toBe(first);
    expect(creations()).toBe(before + 1);
    // Ten minutes before its end, a press makes a new one.
    s.clock.advance(2 * 60_000);
    const renewed = (await buy()).headers.get('location');
    expect(renewed).not.toBe(first);
    expect(creations()).toBe(before + 2);
  });

  it('makes a new session once Stripe reports the open one completed or expired', async () => {
    const first = (await buy()).headers.get('location')!;
    const session = first.split('/').at(-1)!;
    expect((await deliver(completed(`evt_done_${session}`, session))).status).toBe(200);
    const before = creations();
    const second = (await buy()).headers.get('location')!;
    expect(second).not.toBe(first);
    expect(creations()).toBe(before + 1);
    const expired = { id: 'evt_expired_2', object: 'event', type: 'checkout.session.expired', data: { object: { id: second.split('/').at(-1), object: 'checkout.session' } } };
    expect((await deliver(expired)).body).toMatchObject({ ok: true });
    expect((await buy()).headers.get('location')).not.toBe(second);
    expect(creations()).toBe(before + 2);
  });

  it('after Stripe fails, presses are answered at once without asking Stripe again for 10 s', async () => {
    failCreation = true;
    const before = creations();
    expect((await buy()).status).toBe(502);
    expect(creations()).toBe(before + 1);
    const again = await Promise.all(Array.from({ length: 10 }, () => buy()));
    expect(again.map((a) => a.status)).toEqual(Array(10).fill(409));
    expect(again[0]!.text).toContain('try again in a few seconds');
    expect(creations()).toBe(before + 1);
    failCreation = false;
    s.clock.advance(CHECKOUT_TIMES.failurePauseMs + 1_000);
    expect((await buy()).status).toBe(303);
    expect(creations()).toBe(before + 2);
  });
});

describe('L8: chargebacks', () => {
  it('a dispute opened takes the bundle back once, on the audit trail; won, it gives it back once', async () => {
    const start = await balance();
    await deliver(completed('evt_dp_buy', 'cs_dp1'));
    expect(await balance()).toBe(start + 1000);

    const opened = await deliver(disputeEvent('evt_dp_open', 'charge.dispute.created', 'dp_1', 'pi_cs_dp1', 'needs_response'));
    expect(opened.status).toBe(200);
    expect(opened.body).toMatchObject({ ok: true, duplicate: false, channel: 'mail', balance: start });
    expect(await balance()).toBe(start);
    expect(await audit('bundle_dispute')).toEqual([
      { actor: 'stripe', detail: { bundle_id: 'svc_mail_bundle_1000', credits: -1000, event_id: 'evt_dp_open', dispute: 'stripe:dp_1' } },
    ]);
    // Delivered again, or a second event of the same dispute: nothing more is taken.
    expect((await deliver(disputeEvent('evt_dp_open', 'charge.dispute.created', 'dp_1', 'pi_cs_dp1', 'needs_response'))).body).toMatchObject({ duplicate: true, balance: start });
    expect((await deliver(disputeEvent('evt_dp_open_b', 'charge.dispute.created', 'dp_1', 'pi_cs_dp1', 'under_review'))).body).toMatchObject({ duplicate: true, balance: start });
    expect(await balance()).toBe(start);

    const won = await deliver(disputeEvent('evt_dp_won', 'charge.dispute.closed', 'dp_1', 'pi_cs_dp1', 'won'));
    expect(won.body).toMatchObject({ ok: true, duplicate: false, balance: start + 1000 });
    expect((await deliver(disputeEvent('evt_dp_won', 'charge.dispute.closed', 'dp_1', 'pi_cs_dp1', 'won'))).body).toMatchObject({ duplicate: true });
    // The opening event delivered late again takes nothing: it was applied once.
    expect((await deliver(disputeEvent('evt_dp_open', 'charge.dispute.created', 'dp_1', 'pi_cs_dp1', 'needs_response'))).body).toMatchObject({ duplicate: true });
    expect(await balance()).toBe(start + 1000);
    expect(await audit('bundle_dispute_won')).toEqual([
      { actor: 'stripe', detail: { bundle_id: 'svc_mail_bundle_1000', credits: 1000, event_id: 'evt_dp_won', dispute: 'stripe:dp_1' } },
    ]);
    const { rows } = await s.pool.query("select kind, amount from bundle_ledger where event_id in ('evt_dp_open', 'evt_dp_open_b', 'evt_dp_won') order by id");
    expect(rows).toEqual([
      { kind: 'dispute', amount: -1000 },
      { kind: 'dispute_won', amount: 1000 },
    ]);
  });

  it('a dispute lost leaves the bundle taken back, even when its credits were spent (the balance goes below zero)', async () => {
    await deliver(completed('evt_lost_buy', 'cs_dp2'));
    const bought = await balance();
    // The buyer spends the credits, then disputes the charge.
    await s.pool.query("insert into bundle_ledger (account_id, channel, kind, amount, created_at) values ($1, 'mail', 'consumption', -1000, now())", [accountId]);
    await deliver(disputeEvent('evt_lost_open', 'charge.dispute.created', 'dp_2', 'pi_cs_dp2', 'needs_response'));
    expect(await balance()).toBe(bought - 2000);
    const lost = await deliver(disputeEvent('evt_lost_closed', 'charge.dispute.closed', 'dp_2', 'pi_cs_dp2', 'lost'));
    expect(lost.body).toMatchObject({ ok: true, ignored: 'dispute lost' });
    expect(await balance()).toBe(bought - 2000);
  });

  it('a refund during a dispute takes nothing more, and the dispute won then gives nothing back', async () => {
    await deliver(completed('evt_ref_buy', 'cs_dp3'));
    const bought = await balance();
    await deliver(disputeEvent('evt_ref_open', 'charge.dispute.created', 'dp_3', 'pi_cs_dp3', 'warning_needs_response'));
    expect(await balance()).toBe(bought - 1000);
    expect((await deliver(refunded('evt_ref_refund', 'pi_cs_dp3'))).body).toMatchObject({ ok: true, ignored: 'taken back by its dispute' });
    expect(await balance()).toBe(bought - 1000);
    expect((await deliver(disputeEvent('evt_ref_closed', 'charge.dispute.closed', 'dp_3', 'pi_cs_dp3', 'warning_closed'))).body).toMatchObject({ ok: true, ignored: 'purchase refunded' });
    expect(await balance()).toBe(bought - 1000);
  });

  it('a refunded purchase disputed later takes nothing twice', async () => {
    await deliver(completed('evt_rd_buy', 'cs_dp4'));
    const bought = await balance();
    await deliver(refunded('evt_rd_refund', 'pi_cs_dp4'));
    expect(await balance()).toBe(bought - 1000);
    expect((await deliver(disputeEvent('evt_rd_open', 'charge.dispute.created', 'dp_4', 'pi_cs_dp4', 'needs_response'))).body).toMatchObject({ ignored: 'purchase refunded' });
    expect(await balance()).toBe(bought - 1000);
  });

  it('a dispute of a payment that is not a bundle purchase changes nothing and is logged', async () => {
    const before = await balance();
    const logsBefore = s.logs.length;
    const res = await deliver(disputeEvent('evt_other_open', 'charge.dispute.created', 'dp_9', 'pi_other_product', 'needs_response'));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, ignored: 'no purchase on record' });
    expect(await balance()).toBe(before);
    expect(s.logs.slice(logsBefore).map((l) => JSON.parse(l)).find((l) => l.eventId === 'evt_other_open')).toMatchObject({ level: 40, dispute: 'dp_9' });
    expect((await s.pool.query("select count(*)::int as n from bundle_ledger where event_id = 'evt_other_open'")).rows[0].n).toBe(0);
  });
});

describe('Info: Stripe signatures are checked for time both ways', () => {
  it('refuses an event signed an hour in the future (400) and applies nothing; one a minute ahead is taken', async () => {
    const before = await balance('sms');
    const now = Math.floor(s.clock.now().getTime() / 1000);
    const future = await deliver(completed('evt_future', 'cs_future', 'svc_sms_bundle_50'), now + 3_600);
    expect(future.status).toBe(400);
    expect(future.body).toMatchObject({ ok: false, code: 'stale_event' });
    expect(await balance('sms')).toBe(before);
    expect((await s.pool.query("select count(*)::int as n from bundle_purchases where purchase_ref = 'stripe:cs_future'")).rows[0].n).toBe(0);
    const past = await deliver(completed('evt_past', 'cs_future', 'svc_sms_bundle_50'), now - 3_600);
    expect(past.status).toBe(400);
    expect(await balance('sms')).toBe(before);
    const skewed = await deliver(completed('evt_skewed', 'cs_future', 'svc_sms_bundle_50'), now + 60);
    expect(skewed.status).toBe(200);
    expect(await balance('sms')).toBe(before + 50);
  });

  it('refuses a signature header with two times', async () => {
    const payload = JSON.stringify(completed('evt_two_t', 'cs_two_t', 'svc_sms_bundle_50'));
    const now = Math.floor(s.clock.now().getTime() / 1000);
    const header = stripe.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET, timestamp: now });
    const res = await call(s.origin, '/webhooks/stripe', { body: payload, headers: { 'content-type': 'application/json', 'stripe-signature': `t=${now + 7200},${header}` } });
    expect(res.status).toBe(400);
    expect((await s.pool.query("select count(*)::int as n from bundle_purchases where purchase_ref = 'stripe:cs_two_t'")).rows[0].n).toBe(0);
  });
});
