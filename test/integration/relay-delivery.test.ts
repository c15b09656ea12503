import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayConfig } from '../../src/config.js';
import { runCli } from '../support/cli.js';
import { call, rawCall } from '../support/http.js';
import { answer, startHttpFake } from '../support/http-fake.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Delivery as a site sees it: a message accepted with 200 goes out at once (not at the next
 * poll), several at a time per channel, a slow provider holding only its own slots; each
 * message's lifecycle is recorded, and the provider's receipts complete it.
 */
const servers: TestServer[] = [];
const closers: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const s of servers.reverse()) await s.close();
  for (const close of closers) await close();
});

let seq = 0;
const email = () => `delivery${++seq}@example.org`;
const phone = () => `+4915113${String(100000 + ++seq).padStart(6, '0')}`;
/** Far longer than any test waits: a message that arrives in time was woken, not polled. */
const NO_POLL = { pollSeconds: 300 };

async function server(relay: Partial<RelayConfig>, delivery: Partial<RelayConfig['delivery']> = {}): Promise<TestServer> {
  const s = await startTestServer({
    config: { relay: { smsFreeTextRoles: ['professional', 'business', 'enterprise'], ...relay, delivery: { ...NO_POLL, ...delivery } as RelayConfig['delivery'] } },
  });
  servers.push(s);
  return s;
}

const send = (s: TestServer, key: string, path: '/relay-mail' | '/relay-sms', json: Record<string, unknown>) =>
  call(s.origin, `/api/v2${path}`, { key, json });

interface Row {
  id: number;
  status: string;
  provider: string | null;
  provider_id: string | null;
  sending_at: Date | null;
  sent_at: Date | null;
  receipt_at: Date | null;
  receipt_error: string | null;
  attempts: number;
}
/** The operator's CLI on the first server's database. */
const trs = (...args: string[]) => runCli({ ...process.env, DATABASE_URL: servers[0]!.db.url, LOG_LEVEL: 'warn' }, ...args);

const row = async (s: TestServer, id: number) =>
  (await s.pool.query<Row>('select * from relay_messages where id = $1', [id])).rows[0]!;

describe('immediate dispatch', () => {
  let s: TestServer;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  beforeAll(async () => {
    smtp = await startSmtp();
    closers.push(() => smtp.close());
    s = await server({ mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' } });
  });

  it('hands an accepted mail to SMTP at once, not at the next poll, and records each step', async () => {
    const { key } = await s.createKey('professional');
    const recipient = email();
    const accepted = Date.now();
    const res = await send(s, key, '/relay-mail', { recipient, subject: 'Your code', body_text: 'Code 482910' });
    expect(res.status).toBe(200);
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(recipient)), 10_000);
    const arrived = smtp.received.find((m) => m.envelopeTo.includes(recipient))!;
    // The worker polls every 300 s here: only the wake-up on commit explains an arrival in seconds.
    expect(arrived.at - accepted).toBeLessThan(10_000);

    await eventually(async () => (await row(s, res.body.queue_id)).status === 'sent');
    const message = await row(s, res.body.queue_id);
    expect(message).toMatchObject({ status: 'sent', provider: 'smtp', attempts: 1 });
    // The provider's id of a mail is its Message-ID, as the receiving server saw it.
    expect(message.provider_id).toBe(arrived.mail.messageId);
    expect(message.sending_at).not.toBeNull();
    expect(message.sent_at).not.toBeNull();

    // The quota block counts it as sent, not queued.
    const quota = await call(s.origin, '/api/v2/relay-quota', { key });
    expect(quota.body.mail).toMatchObject({ sent: 1, queued: 0, failed: 0 });
  });

  it("shows the operator an account's messages and each step of one in the CLI", async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI is a second process on the database
    const { key, accountId } = await s.createKey('professional');
    const recipient = email();
    const res = await send(s, key, '/relay-mail', { recipient, subject: 'Your code', body_text: 'Code 1' });
    await eventually(async () => (await row(s, res.body.queue_id)).status === 'sent');
    const listed = JSON.parse((await trs('relay', 'messages', '--account', String(accountId), '--json')).out);
    expect(listed).toEqual([
      expect.objectContaining({ id: res.body.queue_id, channel: 'mail', status: 'sent', provider: 'smtp', recipient, attempts: 1 }),
    ]);
    const one = await trs('relay', 'message', String(res.body.queue_id));
    expect(one.out).toMatch(new RegExp(`message ${res.body.queue_id}\\s+mail\\s+sent`));
    expect(one.out).toMatch(/sent\s+\d{4}-\d\d-\d\dT.*via smtp as <.+>/);
    expect(one.out).not.toContain('Code 1'); // never the content
    const missing = await trs('relay', 'message', '999999999');
    expect(missing.code).toBe(1);
    expect(missing.err).toMatch(/no relay message 999999999/);
  }, 120_000);

  it('serves the delivery latency and the queue backlog in /metrics', async () => {
    const metrics = await (await fetch(`${s.origin}/metrics`)).text();
    expect(metrics).toMatch(/trs_relay_delivery_seconds_count\{channel="mail",provider="smtp"\} [1-9]/);
    expect(metrics).toMatch(/trs_relay_queue_depth\{channel="mail"\} 0/);
    expect(metrics).toMatch(/trs_relay_queue_oldest_seconds\{channel="mail"\} 0/);
  });
});

describe('concurrency per channel', () => {
  it('keeps several SMS with a slow provider in flight at once, and mail goes out meanwhile', async () => {
    const delayMs = 3_000;
    const slow = await startSmsProvider({ delayMs });
    closers.push(() => slow.close());
    const smtp = await startSmtp();
    closers.push(() => smtp.close());
    const s = await server(
      { mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' }, sms: { url: slow.url, token: slow.token } },
      { concurrency: { mail: 4, sms: 5 } },
    );
    const { key } = await s.createKey('enterprise');
    const started = Date.now();
    const texts = await Promise.all(Array.from({ length: 5 }, () => send(s, key, '/relay-sms', { recipient_phone: phone(), message: 'Code 123456' })));
    expect(texts.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const recipient = email();
    expect((await send(s, key, '/relay-mail', { recipient, subject: 'Code', body_text: 'Code 1' })).status).toBe(200);

    // The mail does not wait behind the SMS provider.
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(recipient)), 20_000);
    const mailAt = smtp.received.find((m) => m.envelopeTo.includes(recipient))!.at;
    // The five SMS were sent at once: all answered about one provider delay after the sends,
    // where one at a time would take five.
    await eventually(() => slow.requests.length === 5, 30_000);
    expect(mailAt).toBeLessThan(Math.min(...slow.requests.map((r) => r.at)));
    const last = Math.max(...slow.requests.map((r) => r.at));
    expect(last - started).toBeLessThan(delayMs * 3);
    for (const r of texts) await eventually(async () => (await row(s, r.body.queue_id)).status === 'sent');
  });
});

describe('outcomes', () => {
  it('fails a message the provider refuses for good at once, without retries, and gives its charge back', async () => {
    const provider = await startSmsProvider();
    closers.push(() => provider.close());
    const s = await server({ sms: { url: provider.url, token: provider.token }, retryLimit: 5, retryDelaySeconds: 1 });
    const { key, accountId } = await s.createKey('professional');
    provider.fail(1, 400); // e.g. an invalid or blocked number
    const res = await send(s, key, '/relay-sms', { recipient_phone: phone(), message: 'Code 424242' });
    expect(res.status).toBe(200);
    expect(res.body.remaining_quota).toMatchObject({ inclusive_used: 1 });
    await eventually(async () => (await row(s, res.body.queue_id)).status === 'failed');
    expect(await row(s, res.body.queue_id)).toMatchObject({ status: 'failed', attempts: 1, sent_at: null });
    expect(provider.requests.length).toBe(1);
    const quota = await call(s.origin, '/api/v2/relay-quota', { key });
    expect(quota.body.sms).toMatchObject({ failed: 1, sent: 0, queued: 0, inclusive_used: 0 });
    const { rows } = await s.pool.query('select inclusive_used from relay_usage where account_id = $1', [accountId]);
    expect(rows).toEqual([{ inclusive_used: 0 }]);
  });
});

describe('delivery receipts', () => {
  const authToken = 'tw-auth-token-0f1e2d3c4b5a';
  const accountSid = 'AC00112233445566778899aabbccddeeff';
  const publicUrl = 'https://relay.example.com/webhooks/sms/twilio';
  let s: TestServer;
  let twilio: Awaited<ReturnType<typeof startHttpFake>>;
  let sid = 0;

  beforeAll(async () => {
    twilio = await startHttpFake();
    closers.push(() => twilio.close());
    twilio.stub.respond = (_req, res) => answer(201, { sid: `SM${String(++sid).padStart(32, '0')}`, status: 'queued' })(_req, res);
    s = await server({
      sms: { provider: 'twilio', accountSid, authToken, from: '+15005550006', apiBase: twilio.origin, receiptUrl: publicUrl },
    });
  });

  /** Twilio's signature, from its documentation: HMAC-SHA1 of the URL and the sorted name-value pairs. */
  const signature = (params: Record<string, string>, token = authToken) =>
    createHmac('sha1', token)
      .update(publicUrl + Object.keys(params).sort().map((k) => k + params[k]).join(''))
      .digest('base64');
  const receipt = (params: Record<string, string>, headers: Record<string, string> = {}, path = '/webhooks/sms/twilio') =>
    rawCall(s.origin, path, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature(params), ...headers },
      body: new URLSearchParams(params).toString(),
    });

  async function sentMessage() {
    const { key } = await s.createKey('enterprise');
    const res = await send(s, key, '/relay-sms', { recipient_phone: phone(), message: 'Code 777111' });
    expect(res.status).toBe(200);
    await eventually(async () => (await row(s, res.body.queue_id)).status === 'sent');
    const message = await row(s, res.body.queue_id);
    // Twilio was asked to post its receipts to the public URL.
    expect(new URLSearchParams(twilio.last().body).get('StatusCallback')).toBe(publicUrl);
    expect(message).toMatchObject({ provider: 'twilio', provider_id: expect.stringMatching(/^SM\d{32}$/) });
    return message;
  }

  it('records delivered, and undelivered with the error, from signed receipts; an intermediate one changes nothing', async () => {
    const first = await sentMessage();
    const base = { AccountSid: accountSid, MessageSid: first.provider_id!, To: '+4915113000000' };
    expect((await receipt({ ...base, MessageStatus: 'sent' })).status).toBe(200);
    expect((await row(s, first.id)).status).toBe('sent');
    const res = await receipt({ ...base, MessageStatus: 'delivered' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ok: true, matched: true });
    expect(await row(s, first.id)).toMatchObject({ status: 'delivered', receipt_at: expect.any(Date) });

    const second = await sentMessage();
    await receipt({ AccountSid: accountSid, MessageSid: second.provider_id!, MessageStatus: 'undelivered', ErrorCode: '30003' });
    expect(await row(s, second.id)).toMatchObject({ status: 'undelivered', receipt_error: '30003' });
    // A late intermediate receipt does not undo a final one.
    await receipt({ AccountSid: accountSid, MessageSid: second.provider_id!, MessageStatus: 'sent' });
    expect((await row(s, second.id)).status).toBe('undelivered');
  });

  it('refuses a receipt with a bad or missing signature, and changes nothing', async () => {
    const message = await sentMessage();
    const params = { AccountSid: accountSid, MessageSid: message.provider_id!, MessageStatus: 'undelivered' };
    for (const headers of [{ 'x-twilio-signature': signature(params, 'another-token-123456') }, { 'x-twilio-signature': '' }]) {
      const res = await receipt(params, headers);
      expect(res.status).toBe(401);
      expect(res.body).toMatchObject({ ok: false, code: 'invalid_signature' });
    }
    // Signed for other parameters than those sent.
    const forged = await call(s.origin, '/webhooks/sms/twilio', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature({ ...params, MessageStatus: 'delivered' }) },
      body: new URLSearchParams(params).toString(),
    });
    expect(forged.status).toBe(401);
    expect((await row(s, message.id)).status).toBe('sent');
  });

  it('has one spelling of its path and takes receipts only for the configured provider', async () => {
    const message = await sentMessage();
    const params = { AccountSid: accountSid, MessageSid: message.provider_id!, MessageStatus: 'undelivered' };
    for (const path of ['/WEBHOOKS/SMS/TWILIO', '/webhooks/sms/twilio/', '/webhooks//sms/twilio', '/webhooks/sms/Twilio', '/webhooks/sms/vonage']) {
      const res = await receipt(params, {}, path);
      expect(res.status, path).toBe(404);
    }
    expect((await call(s.origin, '/webhooks/sms/twilio', { method: 'GET' })).status).toBe(405);
    expect((await row(s, message.id)).status).toBe('sent');
  });
});

describe('two processes', () => {
  it('deliver a burst between them with no message sent twice and none lost', async (ctx) => {
    const smtp = await startSmtp();
    closers.push(() => smtp.close());
    const relay = { mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' } };
    const a = await server(relay, { concurrency: { mail: 4, sms: 1 } });
    if (a.db.embedded) ctx.skip(); // one process on the embedded database
    const b = await a.sibling({ relay: { ...relay, delivery: { ...NO_POLL, concurrency: { mail: 4, sms: 1 }, enabled: true } } });
    servers.push(b);
    const { key } = await a.createKey('enterprise');
    const recipients = Array.from({ length: 80 }, email);
    for (let i = 0; i < recipients.length; i += 10) {
      const batch = recipients.slice(i, i + 10);
      const answers = await Promise.all(batch.map((recipient, j) => send(j % 2 ? a : b, key, '/relay-mail', { recipient, subject: 'Code', body_text: 'Code 9' })));
      expect(answers.map((r) => r.status)).toEqual(batch.map(() => 200));
    }
    await eventually(() => smtp.received.length >= recipients.length, 30_000);
    await new Promise((r) => setTimeout(r, 500)); // time for a duplicate to show
    const counts = new Map<string, number>();
    for (const m of smtp.received) for (const to of m.envelopeTo) counts.set(to, (counts.get(to) ?? 0) + 1);
    expect(smtp.received.length).toBe(recipients.length);
    expect(recipients.filter((r) => counts.get(r) !== 1)).toEqual([]);
    const { rows } = await a.pool.query<{ status: string; n: number }>('select status, count(*)::int as n from relay_messages group by status');
    expect(rows).toEqual([{ status: 'sent', n: recipients.length }]);
  });

  it('a process with RELAY_DELIVERY=false queues, and another process delivers at once (PostgreSQL NOTIFY)', async (ctx) => {
    const smtp = await startSmtp();
    closers.push(() => smtp.close());
    const relay = { mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' } };
    const front = await server(relay, { enabled: false });
    if (front.db.embedded) ctx.skip(); // one process on the embedded database
    const worker = await front.sibling({ relay: { ...relay, delivery: { ...NO_POLL, concurrency: { mail: 2, sms: 1 }, enabled: true } } });
    servers.push(worker);
    const { key } = await front.createKey('professional');
    const recipient = email();
    const accepted = Date.now();
    expect((await send(front, key, '/relay-mail', { recipient, subject: 'Code', body_text: 'Code 5' })).status).toBe(200);
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(recipient)), 10_000);
    // The worker polls every 300 s: it was woken by the front process's commit.
    expect(Date.now() - accepted).toBeLessThan(10_000);
  });
});
