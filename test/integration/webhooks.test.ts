import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountMailer, accountTransport } from '../../src/account/mailer.js';
import { purgeAccounts, purgeSettingsOf } from '../../src/account/job.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logging.js';
import { WebhookRepository } from '../../src/webhooks/repository.js';
import { SecretBox } from '../../src/webhooks/secrets.js';
import { WebhookService } from '../../src/webhooks/service.js';
import { call } from '../support/http.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startReceiver } from '../support/webhook-receiver.js';
import { signedUp, WebClient } from '../support/web.js';

/**
 * Outbound webhooks end to end (issue 28, item 2): subscriptions through HTTP (roles, limit,
 * bad input), a test event verified with the reference implementation of Standard Webhooks
 * (`standardwebhooks`) in a real local receiver, retries that keep the webhook-id, the events
 * of a blacklist regeneration (listed, rescored, delisted), the endpoint disabled and its owner
 * mailed after 24 hours of failures, and the 7-day purge. The local receiver listens on
 * 127.0.0.1, let in by WEBHOOK_ALLOW_RANGES (plain http is accepted only inside those ranges).
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let business: string;
let enterprise: string;
let webhooks: WebhookService;
/** The signing secrets are sealed at rest (WEBHOOK_SECRETS_KEY) in this server. */
const SECRETS_KEY = randomBytes(32);
const ALLOW = { allowRanges: ['127.0.0.1/32'], secretKeys: [SECRETS_KEY] };
const HOUR = 3_600_000;

const regenerate = () => blacklistSnapshots(s.pool, s.clock, 3).regenerate();
const create = (key: string, json: unknown) => call(s.origin, '/api/v2/webhooks', { method: 'POST', key, json });
const headersOf = (h: Record<string, unknown>) => ({
  'webhook-id': String(h['webhook-id']),
  'webhook-timestamp': String(h['webhook-timestamp']),
  'webhook-signature': String(h['webhook-signature']),
});

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { webhooks: ALLOW, relay: { mail: { smtpUrl: smtp.url, from: 'trs@example.net' } } } });
  business = (await s.createKey('business', { licences: 2, email: 'owner@business.example' })).key;
  enterprise = (await s.createKey('enterprise', { email: 'owner@enterprise.example' })).key;
  const mail = loadConfig({ RELAY_SMTP_URL: smtp.url, RELAY_MAIL_FROM: 'trs@example.net' }).relay.mail;
  // The dispatcher's pass, run by the test instead of the server's timer (jobs are off in tests).
  webhooks = new WebhookService(new WebhookRepository(s.pool), s.clock, new AccountMailer(accountTransport(mail, undefined), createLogger('silent')), ALLOW, createLogger('silent'));
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

describe('subscriptions', () => {
  it('creates, lists (without the secret), tests with a verified signature, and deletes', async () => {
    const receiver = await startReceiver([204]);
    try {
      const made = await create(business, { url: `${receiver.url}/hook`, events: ['address.listed', 'address.delisted'], categories: [18, 4] });
      expect(made.status).toBe(201);
      const hook = made.body.data;
      expect(hook).toMatchObject({ url: `${receiver.url}/hook`, events: ['address.listed', 'address.delisted'], confidence: 75, categories: [4, 18], disabledAt: null });
      expect(hook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
      expect(Buffer.from(hook.secret.slice(6), 'base64')).toHaveLength(24);

      // Stored sealed: the database holds no trace of the secret.
      const { rows: stored } = await s.pool.query<{ secret: string }>('select secret from webhook_endpoints where id = $1', [hook.id]);
      expect(stored[0]!.secret).toMatch(/^sealed:v1:/);
      expect(stored[0]!.secret).not.toContain(hook.secret.slice(6));

      const listed = await call(s.origin, '/api/v2/webhooks', { key: business });
      expect(listed.status).toBe(200);
      expect(listed.body.data).toHaveLength(1);
      expect(listed.body.data[0].secret).toBeUndefined();
      // Another account sees none of them, and cannot test or delete them.
      expect((await call(s.origin, '/api/v2/webhooks', { key: enterprise })).body.data).toEqual([]);
      expect((await call(s.origin, `/api/v2/webhooks/${hook.id}/test`, { method: 'POST', key: enterprise })).status).toBe(404);
      expect((await call(s.origin, `/api/v2/webhooks/${hook.id}`, { method: 'DELETE', key: enterprise })).status).toBe(404);

      const tested = await call(s.origin, `/api/v2/webhooks/${hook.id}/test`, { method: 'POST', key: business });
      expect(tested.status).toBe(200);
      expect(tested.body.data).toMatchObject({ type: 'webhook.test', delivered: true, attempts: 1, status: 204, error: null });
      expect(receiver.received).toHaveLength(1);
      const got = receiver.received[0]!;
      expect(got.headers['webhook-id']).toBe(tested.body.data.id);
      const payload = new Webhook(hook.secret).verify(got.body, headersOf(got.headers)) as { type: string };
      expect(payload.type).toBe('webhook.test');
      // A wrong secret does not verify.
      expect(() => new Webhook(`whsec_${Buffer.alloc(24, 7).toString('base64')}`).verify(got.body, headersOf(got.headers))).toThrow();

      expect((await call(s.origin, `/api/v2/webhooks/${hook.id}`, { method: 'DELETE', key: business })).status).toBe(204);
      expect((await call(s.origin, `/api/v2/webhooks/${hook.id}`, { method: 'DELETE', key: business })).status).toBe(404);
      expect((await call(s.origin, `/api/v2/webhooks/${hook.id}/test`, { method: 'POST', key: business })).status).toBe(404);
    } finally {
      await receiver.close();
    }
  });

  it('seals a secret stored in clear (before the key was set) at its next signing; one sealed with a key since removed cannot sign', async () => {
    const receiver = await startReceiver([204, 204, 204]);
    try {
      const made = await create(business, { url: `${receiver.url}/sealing`, events: ['address.listed'] });
      expect(made.status).toBe(201);
      const { id, secret } = made.body.data as { id: string; secret: string };
      const stored = async () => (await s.pool.query<{ secret: string }>('select secret from webhook_endpoints where id = $1', [id])).rows[0]!.secret;
      // As a server before WEBHOOK_SECRETS_KEY stored it.
      await s.pool.query('update webhook_endpoints set secret = $2 where id = $1', [id, secret]);
      const tested = await call(s.origin, `/api/v2/webhooks/${id}/test`, { method: 'POST', key: business });
      expect(tested.body.data).toMatchObject({ delivered: true });
      expect(() => new Webhook(secret).verify(receiver.received[0]!.body, headersOf(receiver.received[0]!.headers))).not.toThrow();
      expect(await stored()).toMatch(/^sealed:v1:/);
      expect(new SecretBox([SECRETS_KEY]).open(await stored())).toEqual({ secret, stale: false });
      // Sealed with a key the server no longer holds: refused to sign, said so, nothing sent.
      await s.pool.query('update webhook_endpoints set secret = $2 where id = $1', [id, new SecretBox([randomBytes(32)]).seal(secret)]);
      const refused = await call(s.origin, `/api/v2/webhooks/${id}/test`, { method: 'POST', key: business });
      expect(refused.status).toBe(200);
      expect(refused.body.data).toMatchObject({ delivered: false, status: null, error: expect.stringMatching(/^cannot sign: .*WEBHOOK_SECRETS_KEY/) });
      expect(receiver.received).toHaveLength(1);
      expect((await call(s.origin, `/api/v2/webhooks/${id}`, { method: 'DELETE', key: business })).status).toBe(204);
    } finally {
      await receiver.close();
    }
  });

  it('is for Business and Enterprise only (403 tier_forbidden otherwise, 401 without a key)', async () => {
    for (const role of ['free', 'contributor', 'professional', 'honeypot'] as const) {
      const { key } = await s.createKey(role);
      const res = await call(s.origin, '/api/v2/webhooks', { key });
      expect({ role, status: res.status, code: res.body.code }).toEqual({ role, status: 403, code: 'tier_forbidden' });
    }
    expect((await call(s.origin, '/api/v2/webhooks')).status).toBe(401);
  });

  it('holds at most 10 per account (422 webhook_limit_reached), also when asked in parallel', async () => {
    const { key } = await s.createKey('enterprise');
    const answers = await Promise.all(Array.from({ length: 14 }, (_, i) => create(key, { url: `http://127.0.0.1:9/h${i}`, events: ['report.received'] })));
    expect(answers.filter((a) => a.status === 201)).toHaveLength(10);
    const refused = answers.filter((a) => a.status !== 201);
    expect(refused).toHaveLength(4);
    for (const r of refused) expect(r.body).toMatchObject({ meta: { code: 422 }, code: 'webhook_limit_reached' });
    expect((await call(s.origin, '/api/v2/webhooks', { key })).body.data).toHaveLength(10);
  });

  it('refuses bad input with 400 naming the field', async () => {
    const bad: [unknown, string][] = [
      [{ url: 'http://127.0.0.1:9/x', events: [] }, 'events'],
      [{ url: 'http://127.0.0.1:9/x', events: ['address.exploded'] }, 'events'],
      [{ url: 'ftp://127.0.0.1/x', events: ['address.listed'] }, 'url'],
      [{ url: 'not a url at all', events: ['address.listed'] }, 'url'],
      [{ url: 'http://127.0.0.1:9/x', events: ['address.listed'], confidence: 0 }, 'confidence'],
      [{ url: 'http://127.0.0.1:9/x', events: ['address.listed'], confidence: 101 }, 'confidence'],
      [{ url: 'http://127.0.0.1:9/x', events: ['address.listed'], categories: [0] }, 'categories'],
      [{ url: 'http://127.0.0.1:9/x', events: ['address.listed'], secret: 'mine' }, 'secret'],
      // Plain http only into WEBHOOK_ALLOW_RANGES: a public address must be https.
      [{ url: 'http://8.8.8.8/x', events: ['address.listed'] }, 'url'],
    ];
    for (const [json, field] of bad) {
      const res = await create(business, json);
      expect({ json, status: res.status }).toEqual({ json, status: 400 });
      expect(JSON.stringify(res.body.meta.errors)).toContain(field);
    }
    expect((await call(s.origin, '/api/v2/webhooks/not-a-uuid', { method: 'DELETE', key: business })).status).toBe(400);
  });
});

describe('deliveries', () => {
  it('retries a failed delivery with the same webhook-id, then succeeds; regeneration events say listed, rescored and delisted', async () => {
    const A = '45.155.205.11';
    const B = '45.155.205.12';
    const C = '45.155.205.13';
    await reportFromAccounts(s, [A]);
    await regenerate();
    const receiver = await startReceiver([500, 204]);
    try {
      const made = await create(enterprise, { url: `${receiver.url}/events`, events: ['address.listed', 'address.delisted', 'address.score_changed'], confidence: 20 });
      expect(made.status).toBe(201);
      const secret = made.body.data.secret as string;
      // Nothing before the subscription is sent: its events start at the current snapshot.
      expect(await webhooks.tick()).toBe(0);

      await reportFromAccounts(s, [B, C, A], { reporters: 8 });
      await regenerate();
      expect(await webhooks.tick()).toBe(1);
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]!.headers['webhook-signature']).toMatch(/^v1,/);
      // Not due yet: nothing more.
      expect(await webhooks.tick()).toBe(0);
      s.clock.advance(5_000);
      expect(await webhooks.tick()).toBe(1);
      expect(receiver.received).toHaveLength(2);
      const [first, second] = receiver.received;
      expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
      expect(second!.body).toBe(first!.body);
      const event = new Webhook(secret).verify(second!.body, headersOf(second!.headers)) as any;
      expect(event.type).toBe('blacklist.changed');
      const byIp = Object.fromEntries(event.data.addresses.map((a: any) => [a.ip, a]));
      expect(byIp[B]).toMatchObject({ event: 'address.listed', previousScore: null });
      expect(byIp[C]).toMatchObject({ event: 'address.listed' });
      expect(byIp[A]).toMatchObject({ event: 'address.score_changed' });
      expect(byIp[A].score).toBeGreaterThan(byIp[A].previousScore);
      const { rows } = await s.pool.query('select attempts, delivered_at is not null as delivered, last_status from webhook_deliveries where id = $1', [first!.headers['webhook-id']]);
      expect(rows[0]).toEqual({ attempts: 2, delivered: true, last_status: 204 });

      // The operator whitelists B: the next regeneration delists it.
      await s.pool.query(`insert into whitelist (range, note) values ($1, 'test')`, [`${B}/32`]);
      await blacklistSnapshots(s.pool, s.clock, 3).regenerate(undefined, { full: true });
      expect(await webhooks.tick()).toBe(1);
      const third = receiver.received[2]!;
      expect(third.headers['webhook-id']).not.toBe(first!.headers['webhook-id']);
      const delisted = new Webhook(secret).verify(third.body, headersOf(third.headers)) as any;
      expect(delisted.data.addresses).toEqual([{ ip: B, event: 'address.delisted', score: null, previousScore: expect.any(Number) }]);
    } finally {
      await receiver.close();
    }
  });

  it('catching up over several regenerations sends the net change: an address listed then delisted in between is not sent', async () => {
    const X = '45.155.205.51';
    const Y = '45.155.205.52';
    const receiver = await startReceiver([204]);
    try {
      const made = await create(enterprise, { url: `${receiver.url}/catch-up`, events: ['address.listed', 'address.delisted', 'address.score_changed'], confidence: 20 });
      expect(made.status).toBe(201);
      await webhooks.tick();
      const seen = receiver.received.length;
      // Two regenerations before the dispatcher looks: X listed then whitelisted, Y listed then rescored.
      await reportFromAccounts(s, [X, Y]);
      await regenerate();
      await s.pool.query(`insert into whitelist (range, note) values ($1, 'test')`, [`${X}/32`]);
      await reportFromAccounts(s, [Y], { reporters: 8 });
      await regenerate();
      await webhooks.tick();
      const mine = receiver.received.slice(seen).filter((r) => r.path === '/catch-up');
      expect(mine).toHaveLength(1);
      const event = new Webhook(made.body.data.secret).verify(mine[0]!.body, headersOf(mine[0]!.headers)) as any;
      expect(event.data.addresses).toEqual([{ ip: Y, event: 'address.listed', score: expect.any(Number), previousScore: null }]);
      expect((await call(s.origin, `/api/v2/webhooks/${made.body.data.id}`, { method: 'DELETE', key: enterprise })).status).toBe(204);
    } finally {
      await receiver.close();
    }
  });

  it('filters by confidence and categories, and sends nothing when nothing matches', async () => {
    const receiver = await startReceiver([204]);
    try {
      const made = await create(enterprise, { url: `${receiver.url}/none`, events: ['address.listed'], confidence: 20, categories: [7] });
      expect(made.status).toBe(201);
      await reportFromAccounts(s, ['45.155.205.21'], { categories: '18' });
      await regenerate();
      await webhooks.tick();
      expect(receiver.received).toHaveLength(0);
      expect((await call(s.origin, `/api/v2/webhooks/${made.body.data.id}`, { method: 'DELETE', key: enterprise })).status).toBe(204);
    } finally {
      await receiver.close();
    }
  });

  it('sends report.received to the reporting account\'s endpoints only, signed', async () => {
    const receiver = await startReceiver([204]);
    try {
      const { key } = await s.createKey('enterprise');
      const made = await create(key, { url: `${receiver.url}/reports`, events: ['report.received'] });
      expect(made.status).toBe(201);
      const reported = await call(s.origin, '/api/v2/report', { method: 'POST', key, json: { ip: '45.155.205.41', categories: [18], comment: 'ssh' } });
      expect(reported.status).toBe(200);
      // Another account's report is not sent to it.
      await reportFromAccounts(s, ['45.155.205.42'], { reporters: 1 });
      await eventually(async () => (await webhooks.tick()) > 0 && receiver.received.length > 0);
      await webhooks.tick();
      expect(receiver.received).toHaveLength(1);
      const event = new Webhook(made.body.data.secret).verify(receiver.received[0]!.body, headersOf(receiver.received[0]!.headers)) as any;
      expect(event).toMatchObject({ type: 'report.received', data: { reports: [{ ip: '45.155.205.41', categories: [18], reportId: reported.body.data.reportId }] } });
    } finally {
      await receiver.close();
    }
  });

  it('disables an endpoint failing for 24 hours and mails its owner; a delivered test enables it again', async () => {
    const receiver = await startReceiver([503]);
    try {
      const made = await create(business, { url: `${receiver.url}/down`, events: ['address.listed'], confidence: 20 });
      expect(made.status).toBe(201);
      const id = made.body.data.id as string;
      await reportFromAccounts(s, ['45.155.205.31']);
      await regenerate();
      // (The other tests' endpoints get theirs too.)
      expect(await webhooks.tick()).toBeGreaterThanOrEqual(1);
      expect(receiver.received).toHaveLength(1);
      for (let i = 0; i < 8 && receiver.received.length < 8; i++) {
        s.clock.advance(10 * HOUR);
        await webhooks.tick();
      }
      const listed = (await call(s.origin, '/api/v2/webhooks', { key: business })).body.data.find((h: any) => h.id === id);
      expect(listed.disabledAt).not.toBeNull();
      expect(listed.failingSince).not.toBeNull();
      await eventually(() => smtp.received.some((m) => m.envelopeTo.includes('owner@business.example')));
      const count = receiver.received.length;
      s.clock.advance(10 * HOUR);
      await webhooks.tick();
      expect(receiver.received).toHaveLength(count);

      receiver.answers.splice(0, receiver.answers.length, 200);
      const tested = await call(s.origin, `/api/v2/webhooks/${id}/test`, { method: 'POST', key: business });
      expect(tested.body.data).toMatchObject({ delivered: true, status: 200 });
      const again = (await call(s.origin, '/api/v2/webhooks', { key: business })).body.data.find((h: any) => h.id === id);
      expect(again).toMatchObject({ disabledAt: null, failingSince: null });
    } finally {
      await receiver.close();
    }
  });

  it('records many failing deliveries of one endpoint at once, disabling it once, without a deadlock', async () => {
    const receiver = await startReceiver(Array.from({ length: 40 }, () => 503));
    try {
      const { key } = await s.createKey('enterprise', { email: 'owner@many.example' });
      const made = await create(key, { url: `${receiver.url}/many`, events: ['address.listed'] });
      expect(made.status).toBe(201);
      const id = made.body.data.id as string;
      const at = s.clock.now();
      // Failing for a day already: the next failure disables it while the others are recorded.
      await s.pool.query('update webhook_endpoints set failing_since = $2 where id = $1', [id, new Date(at.getTime() - 25 * HOUR)]);
      const repo = new WebhookRepository(s.pool);
      for (let i = 0; i < 20; i++) {
        await repo.enqueue({ id: `msg_many${String(i).padStart(28, '0')}`, endpointId: id, eventType: 'blacklist.changed', payload: { i }, at, due: at });
      }
      const mailsBefore = smtp.received.filter((m) => m.envelopeTo.includes('owner@many.example')).length;
      // One pass attempts all 20 in parallel (failed() and disable() in concurrent transactions).
      await webhooks.tick();
      const { rows } = await s.pool.query<{ attempts: number }>('select attempts from webhook_deliveries where endpoint_id = $1', [id]);
      expect(rows).toHaveLength(20);
      expect(rows.every((r) => r.attempts === 1)).toBe(true);
      const listed = (await call(s.origin, '/api/v2/webhooks', { key })).body.data[0];
      expect(listed.disabledAt).not.toBeNull();
      await eventually(() => smtp.received.filter((m) => m.envelopeTo.includes('owner@many.example')).length > mailsBefore);
      await new Promise((r) => setTimeout(r, 200));
      expect(smtp.received.filter((m) => m.envelopeTo.includes('owner@many.example')).length).toBe(mailsBefore + 1);
    } finally {
      await receiver.close();
    }
  });

  it('keeps deliveries 7 days: the hourly purge deletes older ones', async () => {
    const { rows: before } = await s.pool.query<{ n: number }>('select count(*)::int as n from webhook_deliveries');
    expect(before[0]!.n).toBeGreaterThan(0);
    s.clock.advance(8 * 24 * HOUR);
    const purged = await purgeAccounts(s.pool, s.clock, purgeSettingsOf(loadConfig({})));
    expect(purged!.webhookDeliveries).toBe(before[0]!.n);
  });
});

describe('the delivery log on the dashboard', () => {
  it('shows a Business account its subscriptions and deliveries with their outcome, and no other account\'s', async () => {
    const receiver = await startReceiver([500, 204]);
    try {
      const web = await signedUp(s, smtp, 'hooks@log.example');
      const { rows } = await s.pool.query<{ id: number }>("update accounts set role = 'business' where email = 'hooks@log.example' returning id");
      const { key } = await s.createKey('business', { accountId: rows[0]!.id });
      const made = await create(key, { url: `${receiver.url}/log`, events: ['address.listed'] });
      expect(made.status).toBe(201);
      const tested = await call(s.origin, `/api/v2/webhooks/${made.body.data.id}/test`, { method: 'POST', key });
      expect(tested.status).toBe(200);
      expect((await web.get('/account')).text).toContain('href="/account/webhooks"');
      const page = await web.get('/account/webhooks');
      expect(page.status).toBe(200);
      expect(page.text).toContain(`${receiver.url}/log`);
      expect(page.text).toContain('webhook.test');
      expect(page.text).toMatch(/answered 500|delivered/);
      // Another account's subscriptions are not in it.
      expect(page.text).not.toContain('/down');
      // A role without webhooks gets no log.
      const free = await signedUp(s, smtp, 'free@log.example');
      expect((await free.get('/account')).text).not.toContain('href="/account/webhooks"');
      expect((await free.get('/account/webhooks')).status).toBe(403);
      expect((await new WebClient(s.origin).get('/account/webhooks')).status).not.toBe(200);
    } finally {
      await receiver.close();
    }
  });
});
