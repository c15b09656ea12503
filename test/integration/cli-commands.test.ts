import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The operator's command line, run as an operator runs it (a process on the same database as
 * the server), and its effect seen through the HTTP API.
 */
let s: TestServer;
let dir: string;

beforeAll(async () => {
  s = await startTestServer();
  dir = mkdtempSync(path.join(tmpdir(), 'trs-cli-'));
});
afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `trs <args>` on the server's database. */
function trs(...args: string[]) {
  const env = { ...process.env, DATABASE_URL: s.db.url, DATA_DIR: dir, LOG_LEVEL: 'warn', RULES_SIGNING_KEY_FILE: path.join(dir, 'rules.pem') };
  if (s.db.embedded) delete (env as Record<string, string | undefined>).DATABASE_URL;
  return runCli(env, ...args);
}

describe('the CLI', () => {
  it('creates, lists and revokes keys; a revoked key is refused by the server', async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI joins the server's database: a second process on a server
    const created = JSON.parse((await trs('keys', 'create', '--role', 'business', '--licences', '3', '--name', 'ops laptop', '--json')).out);
    expect(created).toMatchObject({ role: 'business', licences: 3, name: 'ops laptop', key: expect.stringMatching(/^trs_[A-Za-z0-9_-]{43}$/) });
    const verify = await call(s.base, '/verify-key', { key: created.key });
    expect(verify.body.data).toMatchObject({ role: 'business', keyName: 'ops laptop', rateLimits: { checksPerDay: 300_000 } });
    const listed = JSON.parse((await trs('keys', 'list', '--json')).out);
    expect(listed.find((k: { keyId: string }) => k.keyId === created.keyId)).toMatchObject({ prefix: created.prefix, revokedAt: null });
    expect(JSON.stringify(listed)).not.toContain(created.key);
    expect((await trs('keys', 'revoke', created.keyId)).code).toBe(0);
    expect((await call(s.base, '/verify-key', { key: created.key })).status).toBe(401);
    // Revoking again, or an unknown key, says so and fails.
    expect((await trs('keys', 'revoke', created.keyId)).code).toBe(1);
  }, 120_000);

  it('refuses what it cannot do, with one sentence and a failing exit code', async (t) => {
    if (s.db.embedded) return t.skip();
    const badRole = await trs('keys', 'create', '--role', 'admin');
    expect(badRole.code).not.toBe(0);
    expect(badRole.err).toMatch(/admin/);
    const licences = await trs('keys', 'create', '--role', 'free', '--licences', '2');
    expect(licences.code).toBe(1);
    expect(licences.err).toMatch(/licensed role \(business\) only/);
    const account = await trs('bundles', 'credit', '--account', '999999', '--bundle', 'svc_sms_bundle_50');
    expect(account.code).toBe(1);
    expect(account.err).toMatch(/no account 999999/);
  }, 120_000);

  it('whitelists, credits bundles, regenerates the blacklist, and manages categories and templates', async (t) => {
    if (s.db.embedded) return t.skip();
    const { key, accountId } = await s.createKey('professional');
    expect((await trs('whitelist', 'add', '8.8.8.0/24', '--note', 'resolvers')).out).toMatch(/whitelisted 8\.8\.8\.0\/24/);
    expect((await call(s.base, '/check?ip=8.8.8.8', { key })).body.data.isWhitelisted).toBe(true);
    expect((await trs('whitelist', 'remove', '8.8.8.0/24')).code).toBe(0);

    const credit = JSON.parse((await trs('bundles', 'credit', '--account', String(accountId), '--bundle', 'svc_sms_bundle_50', '--json')).out);
    expect(credit).toMatchObject({ channel: 'sms', balance: 50 });
    expect((await call(s.base, '/relay-quota', { key })).body.sms_bundle_balance).toBe(50);

    await call(s.base, '/report', { key, json: { ip: '9.8.7.6', categories: [18] } });
    expect(JSON.parse((await trs('blacklist', 'regenerate', '--json')).out)).toMatchObject({ changed: true });

    expect((await trs('categories', 'enable', 'web')).out).toMatch(/28 web categories enabled/);
    const all = JSON.parse((await trs('categories', 'list', '--json')).out);
    expect(all.filter((c: { enabled: boolean }) => c.enabled)).toHaveLength(58);
    expect((await trs('categories', 'set', '150', '--name', 'Credential stuffing API', '--severity', '7')).code).toBe(0);
    expect((await trs('categories', 'set', '12', '--name', 'x', '--severity', '7')).err).toMatch(/ids from 100/);

    expect((await trs('templates', 'set', '2fa_login', 'it', 'Il tuo codice è {code}. Scade tra {expiry}.')).code).toBe(0);
    expect((await trs('templates', 'set', '2fa_login', 'it', 'no code placeholder')).err).toMatch(/\{code\}/);
    expect((await trs('templates', 'list')).out).toMatch(/2fa_login\s+it\s+Il tuo codice/);
  }, 180_000);

  it('makes a rule-signing key readable by its owner only, and prints its public key', async (t) => {
    if (s.db.embedded) return t.skip();
    const made = await trs('rules', 'keygen', '--out', path.join(dir, 'rules.pem'));
    const publicKey = /public key \(pin it in Hive\): (\S+)/.exec(made.out)![1];
    expect(Buffer.from(publicKey!, 'base64')).toHaveLength(32);
    expect(statSync(path.join(dir, 'rules.pem')).mode & 0o777).toBe(0o600);
    expect(readFileSync(path.join(dir, 'rules.pem'), 'utf8')).toMatch(/BEGIN PRIVATE KEY/);
    expect((await trs('rules', 'public-key')).out.trim()).toBe(publicKey);
    // It never overwrites a key.
    expect((await trs('rules', 'keygen', '--out', path.join(dir, 'rules.pem'))).code).toBe(1);
  }, 120_000);
});
