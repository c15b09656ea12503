import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { purgeAccounts } from '../../src/account/job.js';
import { HOUR_MS, MINUTE_MS } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { runCli } from '../support/cli.js';
import { call, rawCall } from '../support/http.js';
import { answer, startHttpFake } from '../support/http-fake.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Info finding of the 2026-11-26 review: relay payloads (2FA texts, tenants' mails that may
 * hold their users' reset links) stayed in relay_messages.payload after delivery, forever. Now
 * the hourly purge deletes the content of a message RELAY_PAYLOAD_RETENTION_HOURS (24) after it
 * reached a final state and keeps its lifecycle; a message that may still be sent keeps it.
 */
const authToken = 'tw-auth-token-0f1e2d3c4b5a';
const accountSid = 'AC00112233445566778899aabbccddeeff';
const publicUrl = 'https://relay.example.com/webhooks/sms/twilio';
const RETENTION_MS = 24 * HOUR_MS;

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let twilio: Awaited<ReturnType<typeof startHttpFake>>;
let key: string;
let accountId: number;
let sid = 0;
let seq = 0;
const settings = { ...loadConfig({}).web, relayPayloadRetentionMs: RETENTION_MS };

const twilioAccepts = () => {
  twilio.stub.respond = (req, res) => answer(201, { sid: `SM${String(++sid).padStart(32, '0')}`, status: 'queued' })(req, res);
};

beforeAll(async () => {
  smtp = await startSmtp();
  twilio = await startHttpFake();
  twilioAccepts();
  s = await startTestServer({
    config: {
      relay: {
        mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' },
        sms: { provider: 'twilio', accountSid, authToken, from: '+15005550006', apiBase: twilio.origin, receiptUrl: publicUrl },
        retryDelaySeconds: 1,
      },
    },
  });
  ({ key, accountId } = await s.createKey('professional'));
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await twilio?.close();
});

interface Row {
  id: number;
  status: string;
  payload: Record<string, unknown> | null;
  [column: string]: unknown;
}
const row = async (id: number) => (await s.pool.query<Row>('select * from relay_messages where id = $1', [id])).rows[0]!;
const rowIfAny = async (id: number) => (await s.pool.query<Row>('select * from relay_messages where id = $1', [id])).rows[0];
const withoutPayload = ({ payload: _payload, ...rest }: Row) => rest;

const phone = () => `+4915114${String(100000 + ++seq).padStart(6, '0')}`;
const sendSms = async (code: string) => {
  const res = await call(s.base, '/relay-sms', { key, json: { recipient_phone: phone(), template_code: '2fa_code', template_vars: { code, expiry_min: 10 } } });
  expect(res.status).toBe(200);
  return res.body.queue_id as number;
};
const sendMail = async (text: string) => {
  const res = await call(s.base, '/relay-mail', { key, json: { recipient: `user${++seq}@example.org`, subject: 'Reset your password', body_text: text } });
  expect(res.status).toBe(200);
  return res.body.queue_id as number;
};
const statusIs = (id: number, status: string) => eventually(async () => (await row(id)).status === status);

/** Twilio's signature: HMAC-SHA1 of the URL and the sorted name-value pairs. */
const signature = (params: Record<string, string>) =>
  createHmac('sha1', authToken)
    .update(publicUrl + Object.keys(params).sort().map((k) => k + params[k]).join(''))
    .digest('base64');
const receipt = (params: Record<string, string>) =>
  rawCall(s.origin, '/webhooks/sms/twilio', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature(params) },
    body: new URLSearchParams(params).toString(),
  });

/** Runs the purge job's work at `ms` from now on the server's clock, then puts the clock back. */
async function purgeAt(ms: number) {
  s.clock.advance(ms);
  try {
    return await purgeAccounts(s.pool, s.clock, settings);
  } finally {
    s.clock.advance(-ms);
  }
}

describe('the content of a relay message', () => {
  it('is kept for 24 hours after it was sent, then purged with nothing else changed; receipts and the quota still work', async () => {
    const mail = await sendMail('Reset your password: https://shop.example/reset?token=7f3c9a1e5b');
    const sms = await sendSms('482910');
    await statusIs(mail, 'sent');
    await statusIs(sms, 'sent');
    expect((await row(mail)).payload).toMatchObject({ text: expect.stringContaining('token=7f3c9a1e5b') });
    const before = [withoutPayload(await row(mail)), withoutPayload(await row(sms))];

    await purgeAt(RETENTION_MS - MINUTE_MS);
    expect((await row(mail)).payload).not.toBeNull();
    expect((await row(sms)).payload).not.toBeNull();

    const purged = await purgeAt(RETENTION_MS + MINUTE_MS);
    expect(purged!.relayPayloads).toBeGreaterThanOrEqual(2);
    expect((await row(mail)).payload).toBeNull();
    expect((await row(sms)).payload).toBeNull();
    expect([withoutPayload(await row(mail)), withoutPayload(await row(sms))]).toEqual(before);

    // The provider's receipt still completes the SMS; the quota still counts both.
    const res = await receipt({ AccountSid: accountSid, MessageSid: String(before[1]!.provider_id), MessageStatus: 'delivered' });
    expect(res.body).toEqual({ ok: true, matched: true });
    expect((await row(sms)).status).toBe('delivered');
    const quota = await call(s.base, '/relay-quota', { key });
    expect(quota.status).toBe(200);
    expect(quota.body.mail).toMatchObject({ sent: 1 });
    expect(quota.body.sms).toMatchObject({ sent: 1 });
  });

  it('is kept while the message waits for a retry, however old, and the retry sends it', async () => {
    twilio.stub.respond = answer(503, { code: 20500, message: 'Service unavailable' });
    const id = await sendSms('551177');
    await eventually(async () => {
      const r = await row(id);
      return r.status === 'queued' && Number(r.attempts) >= 1;
    });
    await purgeAt(7 * 24 * HOUR_MS);
    expect(await row(id)).toMatchObject({ status: 'queued', payload: { text: expect.stringContaining('551177') } });
    twilioAccepts();
    await statusIs(id, 'sent');
    expect(new URLSearchParams(twilio.last().body).get('Body')).toContain('551177');
  });

  it('of a message that failed is purged too, keeping why it failed', async () => {
    twilio.stub.respond = answer(400, { code: 21211, message: "The 'To' number is not a valid phone number." });
    const id = await sendSms('903412');
    await statusIs(id, 'failed');
    twilioAccepts();
    const failed = await row(id);
    expect(failed.payload).not.toBeNull();
    await purgeAt(RETENTION_MS + MINUTE_MS);
    expect(await row(id)).toEqual({ ...failed, payload: null });
    expect(failed.last_error).toEqual(expect.stringContaining('400'));
  });

  it('goes with the whole message RELAY_MESSAGE_RETENTION_DAYS (90) after a final state; a queued message stays', async () => {
    const sent = await sendMail('Your sign-in code is 118822');
    await statusIs(sent, 'sent');
    twilio.stub.respond = answer(503, { code: 20500, message: 'Service unavailable' });
    const waiting = await sendSms('771100');
    await eventually(async () => Number((await row(waiting)).attempts) >= 1);
    const retention = loadConfig({}).relay.messageRetentionMs;
    expect(retention).toBe(90 * 24 * HOUR_MS);

    expect((await purgeAt(retention - MINUTE_MS))!.relayMessages).toBe(0);
    expect(await rowIfAny(sent)).toBeDefined();
    const purged = await purgeAt(retention + MINUTE_MS);
    expect(purged!.relayMessages).toBeGreaterThanOrEqual(1);
    expect(await rowIfAny(sent)).toBeUndefined();
    expect(await row(waiting)).toMatchObject({ status: 'queued', payload: { text: expect.stringContaining('771100') } });
    twilioAccepts();
    await statusIs(waiting, 'sent');
  });

  it('is purged by the CLI as RELAY_PAYLOAD_RETENTION_HOURS says, and the CLI still shows the message', { timeout: 120_000 }, async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI is a second process on the database
    const id = await sendMail('Your sign-in code is 640021');
    await statusIs(id, 'sent');
    const env = { ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn' };
    // 24 hours by default: a message sent just now keeps its content.
    expect(JSON.parse((await runCli(env, 'accounts', 'purge', '--json')).out)).toMatchObject({ relayPayloads: 0 });
    expect((await row(id)).payload).not.toBeNull();
    const purged = await runCli({ ...env, RELAY_PAYLOAD_RETENTION_HOURS: '0' }, 'accounts', 'purge', '--json');
    expect(JSON.parse(purged.out).relayPayloads).toBeGreaterThanOrEqual(1);
    expect((await row(id)).payload).toBeNull();
    const shown = await runCli(env, 'relay', 'message', String(id), '--json');
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.out)).toMatchObject({ id, status: 'sent', account_id: accountId, provider: 'smtp' });
  });
});
