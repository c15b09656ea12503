import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountService, accountSettings } from '../../src/account/accounts.js';
import { AccountMailer } from '../../src/account/mailer.js';
import { purgeAccounts } from '../../src/account/job.js';
import { Sessions } from '../../src/account/sessions.repository.js';
import { loadConfig } from '../../src/config.js';
import { call } from '../support/http.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { generateKey, heading, linkFromMail, signedUp, WebClient } from '../support/web.js';
import pino from 'pino';

/**
 * Accounts on the web against a real database and a real SMTP server: sign-up modes, the
 * dashboard's numbers, last use of keys, the audit trail and its purge, white-label relay mail
 * and SMS, and public pages charged like the endpoints they show.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const PASSWORD = 'correct horse battery';
let ip = 1;
const from = () => ({ 'X-Forwarded-For': `203.0.113.${ip++}` });
/** The server's published reference: a page of this file's own, so /api/v2/docs answers it whether or not dist/ has one. */
const work = mkdtempSync(path.join(tmpdir(), 'trs-accounts-'));
const REFERENCE = '<!doctype html>\n<html><head><title>reference</title></head><body>the reference</body></html>\n';

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  writeFileSync(path.join(work, 'reference.html'), REFERENCE);
  s = await startTestServer({
    reference: { file: path.join(work, 'reference.html'), cli: null },
    config: {
      trustProxy: ['loopback'],
      publicLimits: { perAddress: 5, v6AggregatePrefix: 48, v6AggregateLimit: 1_000 },
      relay: { mail: { smtpUrl: smtp.url, from: 'Relay <relay@example.net>' }, sms: { url: sms.url, token: sms.token }, mailFooter: 'Sent by the Example relay' },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
  rmSync(work, { recursive: true, force: true });
});

const service = (signup: 'open' | 'invite' | 'closed') => {
  const web = loadConfig({}).web;
  const sessions = new Sessions(s.pool, s.clock, { absoluteMs: web.sessionAbsoluteMs, idleMs: web.sessionIdleMs });
  return new AccountService(s.pool, s.clock, new AccountMailer(undefined, pino({ level: 'silent' })), sessions, accountSettings(web, { signup, publicUrl: () => s.origin, scryptCost: 14 }));
};

async function accountOf(email: string) {
  const { rows } = await s.pool.query('select id, role, licences, email_verified_at from accounts where email = $1', [email]);
  return rows[0];
}

describe('sign-up', () => {
  it('makes a Free account without keys, confirmed by the mailed link', async () => {
    const web = await signedUp(s, smtp, 'new@example.org', PASSWORD, from());
    const account = await accountOf('new@example.org');
    expect(account).toMatchObject({ role: 'free', licences: 1 });
    expect(account.email_verified_at).not.toBeNull();
    expect((await s.pool.query('select count(*)::int as n from api_keys where account_id = $1', [account.id])).rows[0].n).toBe(0);
    const page = await web.get('/account');
    expect(page.status).toBe(200);
    expect(page.text).toMatch(/<dt>Checks today<\/dt><dd>0 of 1,000<\/dd>/);
    const mail = smtp.received.find((m) => m.envelopeTo.includes('new@example.org'))!;
    expect(mail.mail.from?.value[0]).toEqual({ name: 'Relay', address: 'relay@example.net' });
  });

  it('refuses to sign in before the address is confirmed, and mails a new link once the last is 10 minutes old', async () => {
    const web = new WebClient(s.origin, from());
    await web.get('/account/register');
    const registered = smtp.received.length;
    await web.post('/account/register', { email: 'slow@example.org', password: PASSWORD });
    await linkFromMail(smtp, 'slow@example.org', '/account/verify', registered);
    await web.get('/account/sign-in');
    // The sign-up's link is young: the page says to check the mail, and no second mail goes out.
    const early = await web.post('/account/sign-in', { email: 'slow@example.org', password: PASSWORD });
    expect(early.status).toBe(403);
    expect(early.text).toContain('Confirm your address first');
    s.clock.advance(10 * 60_000);
    const before = smtp.received.length;
    const res = await web.post('/account/sign-in', { email: 'slow@example.org', password: PASSWORD });
    expect(res.status).toBe(403);
    expect(res.text).toContain('Confirm your address first');
    const link = new URL(await linkFromMail(smtp, 'slow@example.org', '/account/verify', before));
    // The sign-up's mail and this one: none for the early sign-in.
    expect(smtp.received.filter((m) => m.envelopeTo.includes('slow@example.org'))).toHaveLength(2);
    expect((await web.post('/account/verify', { token: link.searchParams.get('token')! })).status).toBe(200);
    expect((await web.post('/account/sign-in', { email: 'slow@example.org', password: PASSWORD })).status).toBe(303);
  });

  it('is refused when closed, and takes a one-time invite code when by invitation', async () => {
    await expect(service('closed').register({ email: 'c@example.org', password: PASSWORD, ip: '' })).rejects.toMatchObject({ code: 'signup_closed' });
    const invites = service('invite');
    await expect(invites.register({ email: 'i@example.org', password: PASSWORD, ip: '' })).rejects.toMatchObject({ code: 'invalid_invite' });
    const { code } = await invites.createInvite('for i', 7);
    expect((await s.pool.query('select count(*)::int as n from invites where code_hash is not null and note = $1', ['for i'])).rows[0].n).toBe(1);
    await invites.register({ email: 'i@example.org', password: PASSWORD, invite: code, ip: '' });
    expect(await accountOf('i@example.org')).toMatchObject({ role: 'free' });
    await expect(invites.register({ email: 'j@example.org', password: PASSWORD, invite: code, ip: '' })).rejects.toMatchObject({ code: 'invalid_invite' });
    const late = await invites.createInvite('late', 1);
    s.clock.advance(2 * 86_400_000);
    await expect(invites.register({ email: 'k@example.org', password: PASSWORD, invite: late.code, ip: '' })).rejects.toMatchObject({ code: 'invalid_invite' });
    s.clock.advance(-2 * 86_400_000);
  });

  it('lets an account the operator made set a password by reset, and see its keys', async () => {
    const made = await s.createKey('professional', { email: 'ops-made@example.org', name: 'from the CLI' });
    const web = new WebClient(s.origin, from());
    await web.get('/account/reset');
    const before = smtp.received.length;
    await web.post('/account/reset', { email: 'ops-made@example.org' });
    const link = new URL(await linkFromMail(smtp, 'ops-made@example.org', '/account/reset/confirm', before));
    expect((await web.post('/account/reset/confirm', { token: link.searchParams.get('token')!, password: 'a password of my own' })).status).toBe(200);
    await web.get('/account/sign-in');
    expect((await web.post('/account/sign-in', { email: 'ops-made@example.org', password: 'a password of my own' })).status).toBe(303);
    const page = await web.get('/account');
    expect(page.text).toContain(made.prefix);
    expect(page.text).toContain('from the CLI');
  });
});

describe('a server that cannot send mail', () => {
  it('says so at sign-up, sends nothing, and the operator confirms the account', async () => {
    const quiet = await startTestServer({ config: { web: { publicUrl: '' } } });
    try {
      const web = new WebClient(quiet.origin);
      const form = await web.get('/account/register');
      expect(form.text).toContain('This server cannot send mail yet');
      const res = await web.post('/account/register', { email: 'offline@example.org', password: PASSWORD });
      expect(res.status).toBe(200);
      expect(res.text).toContain('accounts verify');
      await web.get('/account/sign-in');
      expect((await web.post('/account/sign-in', { email: 'offline@example.org', password: PASSWORD })).status).toBe(403);
      const ops = new AccountService(quiet.pool, quiet.clock, new AccountMailer(undefined, pino({ level: 'silent' })), new Sessions(quiet.pool, quiet.clock, { absoluteMs: 1e9, idleMs: 1e9 }), accountSettings(loadConfig({}).web, { publicUrl: () => '' }));
      // Whoever signed up first chose that password: the operator confirms the address only with the password cleared.
      await expect(ops.verifyByOperator('offline@example.org')).rejects.toMatchObject({ code: 'password_unproven' });
      const done = await ops.verifyByOperator('offline@example.org', { resetPassword: true });
      expect(done).toMatchObject({ email: 'offline@example.org', reset: { link: expect.stringMatching(/^\/account\/reset\/confirm\?token=[A-Za-z0-9_-]{43}$/) } });
      expect((await web.post('/account/sign-in', { email: 'offline@example.org', password: PASSWORD })).status).toBe(401);
      const token = new URL(done.reset!.link, quiet.origin).searchParams.get('token')!;
      expect((await web.post('/account/reset/confirm', { token, password: 'the owner chose this' })).status).toBe(200);
      await web.get('/account/sign-in');
      expect((await web.post('/account/sign-in', { email: 'offline@example.org', password: 'the owner chose this' })).status).toBe(303);
    } finally {
      await quiet.close();
    }
  });
});

describe('the dashboard', () => {
  it("shows today's usage, each key's last use (written at most every 5 minutes), sites and reports", async () => {
    const web = await signedUp(s, smtp, 'busy@example.org', PASSWORD, from());
    const key = (await generateKey(web, 'site key')).key!;
    const lastUsed = async () => (await s.pool.query("select last_used_at from api_keys where name = 'site key'")).rows[0].last_used_at as Date | null;
    expect(await lastUsed()).toBeNull();
    expect((await call(s.origin, '/api/v2/check?ip=8.8.8.8', { key, headers: { 'X-Rip-Site': 'https://www.shop.example/' } })).status).toBe(200);
    await call(s.origin, '/api/v2/report', { key, json: { ip: '8.8.4.4', categories: [14], comment: 'port scan seen' } });
    await eventually(async () => (await lastUsed()) !== null);
    const first = (await lastUsed())!.getTime();
    s.clock.advance(60_000);
    await call(s.origin, '/api/v2/verify-key', { key });
    await new Promise((r) => setTimeout(r, 200));
    expect((await lastUsed())!.getTime()).toBe(first);
    s.clock.advance(5 * 60_000);
    await call(s.origin, '/api/v2/verify-key', { key });
    await eventually(async () => (await lastUsed())!.getTime() > first);
    const page = await web.get('/account');
    expect(page.text).toMatch(/<dt>Checks today<\/dt><dd>1 of 1,000<\/dd>/);
    expect(page.text).toMatch(/<dt>Reports today<\/dt><dd>1 of 50<\/dd>/);
    expect(page.text).toContain('<td>shop.example</td>');
    expect(page.text).toContain('port scan seen');
    expect(page.text).not.toContain('>never<');
  });

  it('limits the keys an account holds at once', async () => {
    const web = await signedUp(s, smtp, 'hoarder@example.org', PASSWORD, from());
    for (let i = 0; i < 20; i++) expect((await web.post('/account/keys', { name: `k${i}` })).status).toBe(303);
    expect((await web.post('/account/keys', { name: 'one too many' })).status).toBe(409);
  });
});

describe('the audit trail of a Business account', () => {
  let web: WebClient;
  let accountId: number;

  beforeAll(async () => {
    web = await signedUp(s, smtp, 'corp@example.org', PASSWORD, from());
    accountId = (await accountOf('corp@example.org')).id;
    await service('open').setRole(accountId, 'business', 3);
  });

  it('is not shown below Business', async () => {
    const free = await signedUp(s, smtp, 'small@example.org', PASSWORD, from());
    expect((await free.get('/account/audit')).status).toBe(403);
    expect((await free.get('/account/audit.csv')).status).toBe(403);
  });

  it('lists sign-ins, keys, role and licence changes, bundles and relay sends by site with their outcome', async () => {
    await web.get('/account');
    const key = (await generateKey(web, '=HYPERLINK("http://evil.example")')).key!;
    await s.pool.query("insert into bundle_ledger (account_id, channel, kind, amount, bundle_id, event_id, created_at) values ($1, 'mail', 'purchase', 1000, 'svc_mail_bundle_1000', 'evt_x', now())", [accountId]);
    const { BundleLedger } = await import('../../src/relay/ledger.repository.js');
    await new BundleLedger(s.pool, s.clock).manual('purchase', accountId, 'svc_sms_bundle_50');
    const sent = await call(s.origin, '/api/v2/relay-mail', { key, json: { recipient: 'user@example.com', subject: 'Code', body_text: '123456', site_url: 'https://shop.example.com/login' } });
    expect(sent.status).toBe(200);
    await eventually(async () => (await s.pool.query("select status from relay_messages where id = $1", [sent.body.queue_id])).rows[0].status === 'sent');
    const page = await web.get('/account/audit');
    for (const kind of ['sign in', 'email verified', 'role changed', 'licences changed', 'key created', 'bundle purchase', 'relay mail']) expect(page.text).toContain(`<td>${kind}</td>`);
    expect(page.text).toMatch(/<td>relay mail<\/td><td>api<\/td><td>shop\.example\.com<\/td><td>sent<\/td>/);
    const filtered = await web.get('/account/audit?kind=relay_mail&site=shop.example.com');
    expect(filtered.text).not.toContain('<td>sign in</td>');
    expect(filtered.text).toContain('<td>relay mail</td>');
  });

  it('exports CSV that no spreadsheet runs as a formula', async () => {
    const csv = await web.get('/account/audit.csv?kind=key_created');
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(csv.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-\d+-\d{4}-\d{2}-\d{2}\.csv"$/);
    const lines = csv.text.trim().split('\r\n');
    expect(lines[0]).toBe('time,kind,actor,ip,site,outcome,detail');
    expect(lines.length).toBe(2);
    expect(lines[1]).toContain('"key_created","web"');
    expect(lines[1]).toContain('""name"":""=HYPERLINK');
    expect(lines[1]).not.toMatch(/,"=/);
  });

  it('keeps events for the retention time, then the purge deletes them', async () => {
    const count = async () => (await s.pool.query('select count(*)::int as n from audit_events where account_id = $1', [accountId])).rows[0].n;
    expect(await count()).toBeGreaterThan(3);
    const retention = { sessionAbsoluteMs: 7 * 86_400_000, sessionIdleMs: 86_400_000, auditRetentionMs: 30 * 86_400_000 };
    await purgeAccounts(s.pool, s.clock, retention);
    expect(await count()).toBeGreaterThan(3);
    s.clock.advance(31 * 86_400_000);
    const purged = await purgeAccounts(s.pool, s.clock, retention);
    s.clock.advance(-31 * 86_400_000);
    expect(purged!.audit).toBeGreaterThan(3);
    expect(purged!.sessions).toBeGreaterThan(0);
    expect(await count()).toBe(0);
  });
});

describe('white-label relay', () => {
  it('sends Business mail with the account sender name and no footer; Professional mail keeps the From name and gets the footer', async () => {
    const business = await signedUp(s, smtp, 'brand@example.org', PASSWORD, from());
    const account = await accountOf('brand@example.org');
    await service('open').setRole(account.id, 'business', 2);
    await business.get('/account');
    expect((await business.post('/account/sender-name', { sender_name: 'Brand Shop' })).status).toBe(303);
    const bizKey = (await s.createKey('business', { accountId: account.id })).key;
    const proKey = (await s.createKey('professional')).key;
    const mail = (key: string, to: string) =>
      call(s.origin, '/api/v2/relay-mail', { key, json: { recipient: to, subject: 'Your code', body_text: 'Code 123456', body_html: '<p>Code 123456</p>', headers: { From: 'Client Name <x@client.example>' } } });
    expect((await mail(bizKey, 'b@example.com')).status).toBe(200);
    expect((await mail(proKey, 'p@example.com')).status).toBe(200);
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes('b@example.com')) && smtp.received.some((m) => m.envelopeTo.includes('p@example.com')));
    const biz = smtp.received.find((m) => m.envelopeTo.includes('b@example.com'))!.mail;
    const pro = smtp.received.find((m) => m.envelopeTo.includes('p@example.com'))!.mail;
    expect(biz.from?.value[0]).toEqual({ name: 'Brand Shop', address: 'relay@example.net' });
    expect(biz.text).not.toContain('Example relay');
    expect(biz.html).not.toContain('Example relay');
    expect(pro.from?.value[0]).toEqual({ name: 'Client Name', address: 'relay@example.net' });
    expect(pro.text).toContain('Sent by the Example relay');
    expect(pro.html).toContain('Sent by the Example relay');
  });

  it('prefixes Business SMS with the sender name instead of the site', async () => {
    const account = await accountOf('brand@example.org');
    const bizKey = (await s.createKey('business', { accountId: account.id })).key;
    const res = await call(s.origin, '/api/v2/relay-sms', {
      key: bizKey,
      json: { recipient_phone: '+4915112345670', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 5 }, site_url: 'https://shop.example.com' },
    });
    expect(res.status).toBe(200);
    await eventually(() => sms.requests.length > 0);
    expect(sms.requests.at(-1)!.body.text).toMatch(/^Brand Shop: Your verification code is 123456/);
  });

  it('bounds a sender name as the site name that would otherwise prefix the SMS: 40 characters', async () => {
    const business = await signedUp(s, smtp, 'long-brand@example.org', PASSWORD, from());
    const account = await accountOf('long-brand@example.org');
    await service('open').setRole(account.id, 'business', 2);
    await business.get('/account');
    const stored = async () => (await s.pool.query('select sender_name from accounts where id = $1', [account.id])).rows[0].sender_name;
    const refused = await business.post('/account/sender-name', { sender_name: 'B'.repeat(41) });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('at most 40 printable characters');
    expect(await stored()).toBeNull();
    const forty = `Forty ${'x'.repeat(34)}`;
    expect((await business.post('/account/sender-name', { sender_name: forty })).status).toBe(303);
    expect(await stored()).toBe(forty);
    // The site name has the same bound at a send, whichever name prefixes the SMS.
    const key = (await s.createKey('professional')).key;
    const site = (host: string) =>
      call(s.origin, '/api/v2/relay-sms', { key, json: { recipient_phone: '+4915112345671', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 5 }, site_url: `https://${host}/` } });
    const long = await site(`${'a'.repeat(33)}.example`); // 41 characters
    expect(long.status).toBe(422);
    expect(long.body.message).toContain('longer than 40 characters');
    // The longest name prefixes the SMS whole.
    const bizKey = (await s.createKey('business', { accountId: account.id })).key;
    const sent = sms.requests.length;
    const res = await call(s.origin, '/api/v2/relay-sms', {
      key: bizKey,
      json: { recipient_phone: '+4915112345672', template_code: '2fa_code', template_vars: { code: '654321', expiry_min: 5 } },
    });
    expect(res.status).toBe(200);
    await eventually(() => sms.requests.length > sent);
    expect(sms.requests.at(-1)!.body.text).toMatch(new RegExp(`^${forty}: Your verification code is 654321`));
    // The database holds the same bound.
    await expect(s.pool.query('update accounts set sender_name = $2 where id = $1', [account.id, 'L'.repeat(41)])).rejects.toThrow(/accounts_sender_name_check/);
  });
});

describe('public pages', () => {
  it('charge the visitor like the endpoints they show: the home page 2, a lookup 1, shared with the API', async () => {
    const visitor = new WebClient(s.origin, { 'X-Forwarded-For': '192.0.2.77' });
    const home = await visitor.get('/');
    expect(home.status).toBe(200);
    expect(home.headers.get('x-ratelimit-remaining')).toBe('3');
    expect(home.text).toContain('<svg class="map"');
    expect((home.text.match(/<svg class="chart"/g) ?? []).length).toBe(3);
    expect((await visitor.get('/lookup?ip=8.8.8.8')).headers.get('x-ratelimit-remaining')).toBe('2');
    expect((await visitor.get('/lookup?ip=not-an-ip')).status).toBe(400);
    const api = await call(s.origin, '/api/v2/stats-public', { headers: { 'X-Forwarded-For': '192.0.2.77' } });
    expect(api.headers.get('x-ratelimit-remaining')).toBe('1');
    const refused = await visitor.get('/');
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(heading(refused)).toBe('Daily allowance used up');
    expect(refused.text).not.toContain('<svg class="map"');
  });

  it('serve static files by content hash, cached for a year, from this server only', async () => {
    const page = await new WebClient(s.origin, from()).get('/account/sign-in');
    const css = /href="(\/assets\/site\.[0-9a-f]{12}\.css)"/.exec(page.text)![1]!;
    const res = await fetch(s.origin + css);
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(res.headers.get('content-type')).toBe('text/css; charset=utf-8');
    expect((await fetch(`${s.origin}/assets/site.000000000000.css`)).status).toBe(404);
    expect(page.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    expect(page.text).not.toMatch(/<script>|style="|https?:\/\/(?!www\.w3\.org)/);
  });

  it('leave the reference page its own policy', async () => {
    const docs = await fetch(`${s.origin}/api/v2/docs`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toBe(REFERENCE);
    expect(docs.headers.get('content-security-policy')).toContain("script-src 'self' 'unsafe-inline' blob:");
    // Not the pages' policy, which would stop Redoc's scripts.
    expect(docs.headers.get('content-security-policy')).not.toContain("script-src 'self';");
  });
});
