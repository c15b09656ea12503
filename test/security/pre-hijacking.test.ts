import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { generateKey, linkFromMail, WebClient } from '../support/web.js';

/**
 * Finding L7 (review 2026-11-26), pre-registered accounts:
 * - API keys survived a password reset: whoever registered someone's address with their own
 *   password, and signed in once its owner had confirmed it, kept a working key after the owner's
 *   reset. The reset form now has "Also revoke all API keys", ticked by default.
 * - `trs accounts verify <address>` confirmed whoever had registered the address first, with
 *   their password. It now refuses an account whose password was set before its address was
 *   confirmed, unless --reset-password, which clears that password (and ends the sessions,
 *   revokes the keys) and prints a one-time link for the owner.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let nextIp = 1;
const browser = (origin = s.origin) => new WebClient(origin, { 'X-Forwarded-For': `198.51.100.${nextIp++}` });

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { trustProxy: ['loopback'], relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } } } });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

async function audit(server: TestServer, email: string, kind: string) {
  const { rows } = await server.pool.query(
    'select e.actor, e.detail from audit_events e join accounts a on a.id = e.account_id where a.email = $1 and e.kind = $2 order by e.id',
    [email, kind],
  );
  return rows as { actor: string; detail: Record<string, unknown> }[];
}

/**
 * The review's scenario: the attacker registers the victim's address with their own password,
 * the victim follows the confirmation link that reaches them, the attacker signs in and makes a
 * key. Returns the attacker's browser and key.
 */
async function preHijacked(email: string): Promise<{ attacker: WebClient; key: string }> {
  const attacker = browser();
  await attacker.get('/account/register');
  const before = smtp.received.length;
  expect((await attacker.post('/account/register', { email, password: 'Attacker-Pass-33' })).status).toBe(200);
  const link = new URL(await linkFromMail(smtp, email, '/account/verify', before));
  const victim = browser();
  await victim.get(link.pathname + link.search);
  expect((await victim.post('/account/verify', { token: link.searchParams.get('token')! })).status).toBe(200);
  await attacker.get('/account/sign-in');
  expect((await attacker.post('/account/sign-in', { email, password: 'Attacker-Pass-33' })).status).toBe(303);
  await attacker.get('/account');
  const { key } = await generateKey(attacker, 'left behind');
  expect((await call(s.origin, '/api/v2/verify-key', { key })).status).toBe(200);
  return { attacker, key: key! };
}

/** The owner's reset through the pages: the confirm form as loaded, then `fields` posted. */
async function ownerResets(email: string, fields: Record<string, string>) {
  const owner = browser();
  await owner.get('/account/reset');
  const before = smtp.received.length;
  await owner.post('/account/reset', { email });
  const link = new URL(await linkFromMail(smtp, email, '/account/reset/confirm', before));
  const form = await owner.get(link.pathname + link.search);
  return { form, done: await owner.post('/account/reset/confirm', { token: link.searchParams.get('token')!, password: 'the owner took it back', ...fields }) };
}

describe('a password reset', () => {
  it('revokes every API key of the account by default (the box is ticked), recorded in the audit trail', async () => {
    const email = 'victim3@example.org';
    const { attacker, key } = await preHijacked(email);
    const { form, done } = await ownerResets(email, { revoke_keys: '1' });
    expect(form.text).toMatch(/<input type="checkbox" name="revoke_keys" value="1" checked/);
    expect(form.text).toContain('Also revoke all API keys');
    expect(done.status).toBe(200);
    expect(done.text).toContain('Its API key has been revoked');
    // The key, the session and the password of the attacker are all gone.
    expect((await call(s.origin, '/api/v2/verify-key', { key })).status).toBe(401);
    expect((await attacker.get('/account')).status).toBe(303);
    await attacker.get('/account/sign-in');
    expect((await attacker.post('/account/sign-in', { email, password: 'Attacker-Pass-33' })).status).toBe(401);
    const revoked = await audit(s, email, 'key_revoked');
    expect(revoked).toEqual([{ actor: 'web', detail: expect.objectContaining({ name: 'left behind', reason: 'password_reset' }) }]);
    expect((await audit(s, email, 'password_reset')).map((e) => e.detail)).toEqual([{ keys_revoked: 1 }]);
  });

  it('keeps the keys when the owner unticks the box', async () => {
    const email = 'keeps-keys@example.org';
    const { key } = await preHijacked(email);
    const { done } = await ownerResets(email, {});
    expect(done.status).toBe(200);
    expect(done.text).not.toContain('revoked');
    expect((await call(s.origin, '/api/v2/verify-key', { key })).status).toBe(200);
    expect(await audit(s, email, 'key_revoked')).toEqual([]);
    expect((await audit(s, email, 'password_reset')).map((e) => e.detail)).toEqual([{ keys_revoked: 0 }]);
  });
});

describe('trs accounts verify', () => {
  let quiet: TestServer;
  let dir: string;
  beforeAll(async () => {
    // A server that cannot send mail: the sign-up page sends people to the operator.
    quiet = await startTestServer({ config: { web: { publicUrl: '' } } });
    dir = mkdtempSync(path.join(tmpdir(), 'trs-cli-'));
  });
  afterAll(async () => {
    await quiet?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const trs = (...args: string[]) =>
    runCli({ ...process.env, DATABASE_URL: quiet.db.url, DATA_DIR: dir, LOG_LEVEL: 'warn', PUBLIC_URL: quiet.origin }, 'accounts', 'verify', ...args);
  const signIn = async (email: string, password: string) => {
    const web = browser(quiet.origin);
    await web.get('/account/sign-in');
    return (await web.post('/account/sign-in', { email, password })).status;
  };

  it("refuses an account whose password was set before its address was confirmed; --reset-password clears it and prints the owner's link", async (t) => {
    if (quiet.db.embedded) return t.skip(); // the CLI joins the server's database
    const email = 'victim4@example.com';
    const attacker = browser(quiet.origin);
    await attacker.get('/account/register');
    expect((await attacker.post('/account/register', { email, password: 'Attacker-Pass-44' })).status).toBe(200);
    // The owner's own sign-up later says the same and creates nothing.
    const owner = browser(quiet.origin);
    await owner.get('/account/register');
    expect((await owner.post('/account/register', { email, password: 'the owner chose this' })).status).toBe(200);

    const refused = await trs(email);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/password that was set before its address was confirmed/);
    expect(refused.err).toContain('--reset-password');
    const { rows } = await quiet.pool.query('select email_verified_at, password_hash is not null as has_password from accounts where email = $1', [email]);
    expect(rows).toEqual([{ email_verified_at: null, has_password: true }]);
    expect(await signIn(email, 'Attacker-Pass-44')).toBe(403);
    expect(await audit(quiet, email, 'email_verified')).toEqual([]);

    const reset = await trs(email, '--reset-password');
    expect(reset.code).toBe(0);
    expect(reset.out).toMatch(/is confirmed; its password is cleared, 0 session\(s\) ended and 0 key\(s\) revoked/);
    const link = new URL(/https?:\/\/\S+\/account\/reset\/confirm\?token=[A-Za-z0-9_-]{43}/.exec(reset.out)![0]);
    expect(link.origin).toBe(quiet.origin);
    // The attacker's password is gone; the owner chooses one with the link, once.
    expect(await signIn(email, 'Attacker-Pass-44')).toBe(401);
    const web = browser(quiet.origin);
    await web.get(link.pathname + link.search);
    expect((await web.post('/account/reset/confirm', { token: link.searchParams.get('token')!, password: 'the owner chose this', revoke_keys: '1' })).status).toBe(200);
    expect((await web.post('/account/reset/confirm', { token: link.searchParams.get('token')!, password: 'a second try at it' })).status).toBe(400);
    expect(await signIn(email, 'the owner chose this')).toBe(303);
    expect(await signIn(email, 'Attacker-Pass-44')).toBe(401);
    expect((await audit(quiet, email, 'password_reset')).map((e) => [e.actor, e.detail])).toEqual([
      ['cli', { cleared: true, keys_revoked: 0 }],
      ['web', { keys_revoked: 0 }],
    ]);
    // Already confirmed: nothing to do.
    const again = await trs(email);
    expect(again.code).toBe(0);
    expect(again.out).toContain('was confirmed already');
  }, 120_000);

  it('with --reset-password also ends the sessions and revokes the keys of a confirmed account, and prints JSON', async (t) => {
    if (quiet.db.embedded) return t.skip();
    const email = 'lost-owner@example.com';
    const made = await quiet.createKey('free', { email });
    // An operator-made account has no password: confirming it needs no reset.
    const plain = await trs(email);
    expect(plain.code).toBe(0);
    expect(plain.out).toContain('is confirmed; it can sign in now');
    const done = JSON.parse((await trs(email, '--reset-password', '--json')).out);
    expect(done).toMatchObject({ email, reset: { sessionsEnded: 0, keysRevoked: 1, link: expect.stringMatching(/\/account\/reset\/confirm\?token=/) } });
    expect((await call(quiet.origin, '/api/v2/verify-key', { key: made.key })).status).toBe(401);
    expect((await audit(quiet, email, 'key_revoked')).map((e) => [e.actor, e.detail.reason])).toEqual([['cli', 'password_cleared']]);
  }, 120_000);
});
