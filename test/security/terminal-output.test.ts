import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { call, rawCall } from '../support/http.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { generateKey, signedUp, type WebClient } from '../support/web.js';

/**
 * L3 (review of 2026-11-26): key names refused C0 controls but took C1 (U+009B, the 8-bit CSI)
 * and bidi controls (U+202E) from any web user, and `trs keys list` printed them raw; a bouncer's
 * User-Agent with byte 0x9B was printed raw by `trs bouncers list`. Now key names refuse every
 * control and bidi character (the rule sender names follow, src/text.ts), and `<` and `>` (Info:
 * /verify-key hands names to the ReportedIP plugins as keyName), and every CLI answer escapes
 * what is unprintable, text and JSON alike.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let web: WebClient;
let accountId: number;
let dir: string;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } } } });
  web = await signedUp(s, smtp, 'terminal@example.org');
  accountId = (await s.pool.query("select id from accounts where email = 'terminal@example.org'")).rows[0].id;
  dir = mkdtempSync(path.join(tmpdir(), 'trs-terminal-'));
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  rmSync(dir, { recursive: true, force: true });
});

const trs = (...args: string[]) => runCli({ ...process.env, DATABASE_URL: s.db.url, DATA_DIR: dir, LOG_LEVEL: 'warn' }, ...args);

/** C0 controls but the line feed, DEL, C1 controls, bidi controls and line separators. */
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/;

const keyCount = async () => (await s.pool.query<{ n: number }>('select count(*)::int as n from api_keys where account_id = $1', [accountId])).rows[0]!.n;

const REFUSED_NAMES = {
  'C1 CSI (U+009B) clearing the screen': '\u009b2J\u009b1;31mcompromised, revoke all\u009b0m',
  'a lone C1 control (U+0085)': 'shop\u0085example',
  'right-to-left override (U+202E)': 'shop\u202emoc.elpmaxe',
  'left-to-right isolate (U+2066)': 'shop\u2066x\u2069',
  'right-to-left mark (U+200F)': 'shop\u200f',
  'Arabic letter mark (U+061C)': 'shop\u061c',
  'an ESC sequence (C0)': '\u001b[2Jshop',
  'a tab': 'shop\texample',
  'a line separator (U+2028)': 'shop\u2028example',
  'HTML': '<script>alert(1)</script>',
  'an angle bracket': 'shop > example',
};

describe('key names on the dashboard form', () => {
  for (const [what, name] of Object.entries(REFUSED_NAMES)) {
    it(`refuses a name with ${what}: 400, and no key is made`, async () => {
      const before = await keyCount();
      await web.get('/account');
      const { posted, key } = await generateKey(web, name);
      expect(posted.status).toBe(400);
      expect(posted.text).toContain('without &lt; or &gt;');
      expect(key).toBeUndefined();
      expect(await keyCount()).toBe(before);
    });
  }

  it('takes a printable name in any script', async () => {
    await web.get('/account');
    const { posted, key } = await generateKey(web, 'Bäckerei Müller – shop.example.de (日本)');
    expect(posted.status).toBe(303);
    expect(key).toMatch(/^trs_/);
  });
});

describe('the same rule for SMS sender names', () => {
  it('refuses a bidi control in a white-label sender name (it prefixes SMS), and keeps the name unchanged', async () => {
    await s.pool.query("update accounts set role = 'business', licences = 2 where id = $1", [accountId]);
    try {
      await web.get('/account');
      expect((await web.post('/account/sender-name', { sender_name: 'Shop\u202eKNAB' })).status).toBe(400);
      expect((await web.post('/account/sender-name', { sender_name: 'Shop\u009b2J' })).status).toBe(400);
      expect((await s.pool.query('select sender_name from accounts where id = $1', [accountId])).rows[0].sender_name).toBeNull();
      expect((await web.post('/account/sender-name', { sender_name: 'Bäckerei Müller' })).status).toBe(303);
    } finally {
      await s.pool.query("update accounts set role = 'free', licences = 1, sender_name = null where id = $1", [accountId]);
    }
  });
});

describe('the CLI', () => {
  it('refuses such a name in `trs keys create --name` and makes nothing', async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI joins the server's database: a second process on a server
    const before = (await s.pool.query<{ n: number }>('select count(*)::int as n from api_keys')).rows[0]!.n;
    for (const name of [REFUSED_NAMES['C1 CSI (U+009B) clearing the screen'], REFUSED_NAMES['right-to-left override (U+202E)'], REFUSED_NAMES.HTML]) {
      const res = await trs('keys', 'create', '--role', 'professional', '--name', name);
      expect(res.code).toBe(1);
      expect(res.err).toContain('a key name is at most 100 printable characters');
      expect(res.err).not.toMatch(UNSAFE);
    }
    expect((await s.pool.query<{ n: number }>('select count(*)::int as n from api_keys')).rows[0]!.n).toBe(before);
  }, 120_000);

  it('escapes what an earlier key name and a bouncer User-Agent hold, in `keys list` and `bouncers list`, text and JSON', async (t) => {
    if (s.db.embedded) return t.skip();
    // Names stored before the rule held, as the review made them.
    const old = await s.createKey('professional');
    const name = '\u009b2J\u009b1;31mcompromised\u009b0m \u202egnp.exe\u007f';
    await s.pool.query('update api_keys set name = $2 where id = $1', [old.keyId, name]);
    // A bouncer pulls with byte 0x9B (obs-text, which Node accepts) in its User-Agent.
    const added = await trs('bouncers', 'add', 'edge-term');
    const bouncerKey = /^\s+(trsb_[A-Za-z0-9_-]{43})$/m.exec(added.out)![1]!;
    const pulled = await rawCall(s.origin, '/crowdsec/v1/decisions/stream?startup=true', { headers: { 'X-Api-Key': bouncerKey, 'User-Agent': 'a\x9b2Jb' } });
    expect(pulled.status).toBe(200);
    expect((await s.pool.query("select user_agent from bouncers where name = 'edge-term'")).rows[0].user_agent).toBe('a\u009b2Jb');

    const keys = await trs('keys', 'list');
    expect(keys.code).toBe(0);
    expect(keys.out).not.toMatch(UNSAFE);
    expect(keys.out).toContain('\\x9b2J\\x9b1;31mcompromised\\x9b0m \\u202egnp.exe\\x7f');
    const keysJson = await trs('keys', 'list', '--json');
    expect(keysJson.out).not.toMatch(UNSAFE);
    expect(JSON.parse(keysJson.out)).toContainEqual(expect.objectContaining({ keyId: old.keyId, name }));

    const bouncers = await trs('bouncers', 'list');
    expect(bouncers.out).not.toMatch(UNSAFE);
    expect(bouncers.out).toContain('a\\x9b2Jb');
    const bouncersJson = await trs('bouncers', 'list', '--json');
    expect(bouncersJson.out).not.toMatch(UNSAFE);
    expect(JSON.parse(bouncersJson.out)).toContainEqual(expect.objectContaining({ name: 'edge-term', userAgent: 'a\u009b2Jb' }));
  }, 120_000);
});

describe('/verify-key (Info: HTML in key names)', () => {
  it('shows a name stored before the rule without <, > and unprintable characters', async () => {
    const old = await s.createKey('professional');
    await s.pool.query('update api_keys set name = $2 where id = $1', [old.keyId, '<img src=x onerror=alert(1)>\u202eshop\u009b']);
    const res = await call(s.base, '/verify-key', { key: old.key });
    expect(res.status).toBe(200);
    expect(res.body.data.keyName).toBe('img src=x onerror=alert(1)shop');
  });

  it('shows a name made under the rule as it was given', async () => {
    const made = await s.createKey('professional', { name: 'Bäckerei Müller – shop.example.de' });
    expect((await call(s.base, '/verify-key', { key: made.key })).body.data.keyName).toBe('Bäckerei Müller – shop.example.de');
  });
});
