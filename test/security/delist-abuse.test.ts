import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { call, type CallResult } from '../support/http.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Attacks on delisting (issue 28, "What it must show"): requests for addresses the requester
 * does not hold, and mail flooding through them. The bounds: one active request per address;
 * one confirmation mail per address a day; DELIST_MAILS_PER_RECIPIENT_DAILY (3) mails per
 * recipient; DELIST_REQUESTS_PER_SOURCE_DAILY (5) requests per source address or IPv6 /64,
 * then 429; nothing the requester wrote (the reason) is ever mailed.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
const HOUR = 3_600_000;

const ask = (body: Record<string, unknown>, from: string): Promise<CallResult> =>
  call(s.origin, '/api/v2/delist-requests', { json: body, headers: { 'X-Forwarded-For': from } });
const mailsTo = (email: string) => smtp.received.filter((m) => m.envelopeTo.includes(email));
/** Mails under way when the answers came have reached the SMTP server. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 1_000));

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { trustProxy: ['loopback'], relay: { mail: { smtpUrl: smtp.url, from: 'trs@example.net' } } } });
  s.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

describe('mail flooding through delisting requests', () => {
  it('mails one confirmation per address a day, however many requests name it from however many sources', async () => {
    const victim = 'victim-a@example.org';
    const ip = '45.155.205.7';
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => ask({ ip, email: victim, reason: 'flood' }, `198.51.100.${i + 1}`)));
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 422).every((a) => a.body.code === 'delist_request_open')).toBe(true);
    // Nor through the ranges around it.
    const around = await ask({ ip: '45.155.205.0/24', email: victim, reason: 'flood' }, '198.51.100.80');
    expect(around.status).toBe(422);
    expect(around.body.code).toBe('delist_request_open');
    await settle();
    expect(mailsTo(victim)).toHaveLength(1);
    // The address's owner, asking from it, replaces the stranger's unconfirmed request and gets
    // a link of its own: who asked first from elsewhere cannot keep the owner waiting a day.
    s.clock.advance(HOUR);
    const owner = 'owner-a@example.org';
    const proven = await ask({ ip, email: owner, reason: 'mine' }, ip);
    expect(proven.status).toBe(202);
    expect(proven.body.data.proven).toBe(true);
    await settle();
    expect(mailsTo(owner)).toHaveLength(1);
    const { rows } = await s.pool.query("select status, proven from delist_requests where ip = $1::cidr order by created_at", [`${ip}/32`]);
    expect(rows).toEqual([{ status: 'expired', proven: false }, { status: 'unconfirmed', proven: true }]);
    // A day later (the proven request expired unconfirmed), the stranger may ask again: one more mail.
    s.clock.advance(25 * HOUR);
    expect((await ask({ ip, email: victim, reason: 'flood' }, '198.51.100.99')).status).toBe(202);
    await settle();
    expect(mailsTo(victim)).toHaveLength(2);
  });

  it('mails one recipient at most 3 times a day, through requests for many addresses from many sources', async () => {
    const victim = 'victim-b@example.org';
    const answers = [];
    for (let i = 0; i < 10; i++) answers.push(await ask({ ip: `45.155.206.${i + 1}`, email: victim, reason: 'flood' }, `203.0.114.${i + 1}`));
    expect(answers.every((a) => a.status === 202)).toBe(true);
    await settle();
    expect(mailsTo(victim)).toHaveLength(3);
    const { rows } = await s.pool.query("select count(*)::int as n from audit_events where kind = 'delist_mailed' and detail->>'ip' like '45.155.206.%'");
    expect(rows[0].n).toBe(3);
  });

  it('answers a source past 5 requests a day with 429, counting an IPv6 /64 as one source', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await ask({ ip: `45.155.207.${i + 1}`, email: `target${i}@example.org`, reason: 'many addresses' }, '198.51.100.150');
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.body.code).toBe('delist_requests_exhausted');
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      }
    }
    expect(statuses).toEqual([202, 202, 202, 202, 202, 429, 429, 429]);
    const v6: number[] = [];
    for (let i = 0; i < 6; i++) v6.push((await ask({ ip: `2a0d:5600:40::${i + 1}`, email: 'v6@example.org', reason: 'x' }, `2001:4860:1:2::${i + 1}`)).status);
    expect(v6).toEqual([202, 202, 202, 202, 202, 429]);
    await settle();
    // Within the recipients' bound too: no recipient got more than 3.
    const perRecipient = new Map<string, number>();
    for (const m of smtp.received) for (const to of m.envelopeTo) perRecipient.set(to, (perRecipient.get(to) ?? 0) + 1);
    expect(Math.max(...perRecipient.values())).toBeLessThanOrEqual(3);
  });

  it('is bounded by the per-address public allowance too (100 calls a day, status pages included)', async () => {
    const from = '198.51.100.222';
    let last: CallResult | undefined;
    for (let i = 0; i < 101; i++) last = await call(s.origin, `/api/v2/delist-requests/0d7c5f3e-8a41-4c0e-9a51-3f1b2c7d9e10?token=${'A'.repeat(43)}`, { headers: { 'X-Forwarded-For': from } });
    expect(last!.status).toBe(429);
    expect(last!.body.code).toBe('rate_limited');
    expect((await ask({ ip: '45.155.212.1', email: 'late@example.org', reason: 'x' }, from)).status).toBe(429);
  });

  it('never mails what the requester wrote, and refuses header injection in the address', async () => {
    const victim = 'victim-c@example.org';
    const spam = 'BUY CHEAP PILLS at https://spam.example.com now';
    expect((await ask({ ip: '45.155.213.1', email: victim, reason: spam }, '198.51.100.230')).status).toBe(202);
    await settle();
    const [mail] = mailsTo(victim);
    expect(mail!.mail.text).not.toContain('spam.example.com');
    expect(mail!.mail.subject).toBe('Confirm your delisting request for 45.155.213.1');
    const injected = await ask({ ip: '45.155.213.2', email: 'a@example.org\nBcc: victim-d@example.org', reason: 'x' }, '198.51.100.231');
    expect(injected.status).toBe(400);
    await settle();
    expect(mailsTo('victim-d@example.org')).toHaveLength(0);
  });
});

describe('requests for addresses the requester does not hold', () => {
  it('mail no decision to an address that never confirmed the request', async () => {
    const victim = 'victim-e@example.org';
    const made = await ask({ ip: '45.155.216.1', email: victim, reason: 'x' }, '198.51.100.241');
    expect(made.status).toBe(202);
    await settle();
    expect(mailsTo(victim)).toHaveLength(1);
    const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn', RELAY_SMTP_URL: smtp.url, RELAY_MAIL_FROM: 'trs@example.net' };
    if (s.db.embedded) delete env.DATABASE_URL;
    const rejected = await runCli(env, 'delist', 'reject', made.body.data.id, '--note', 'Unconfirmed spam.');
    expect(rejected.code).toBe(0);
    await settle();
    expect(mailsTo(victim)).toHaveLength(1);
  });

  it('are stored as not proven and reach the operator only once confirmed', async () => {
    const res = await ask({ ip: '45.155.214.1', email: 'attacker@example.org', reason: 'I do not own this.' }, '198.51.100.240');
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ proven: false, status: 'unconfirmed' });
    expect(res.body.data.message).toContain('not proven');
    // Unconfirmed, it never whitelists anything by itself.
    const { rows } = await s.pool.query('select count(*)::int as n from whitelist');
    expect(rows[0].n).toBe(0);
  });
});
