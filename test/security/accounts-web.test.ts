import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawCall } from '../support/http.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { generateKey, heading, linkFromMail, signedUp as signUp, WebClient } from '../support/web.js';

/**
 * The account pages through HTTP, as an attacker would use them: CSRF, cookie flags, throttles,
 * account enumeration, keys shown once, session fixation and sign-out, open redirects, header
 * injection, over-long fields, wrong content types, other spellings of every path.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
const PASSWORD = 'correct horse battery';

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { trustProxy: ['loopback'], relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } } } });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

/** A client from an address of its own, so that the per-IP throttles of one test leave the others alone. */
let nextIp = 1;
const address = () => ({ 'X-Forwarded-For': `198.51.${100 + (nextIp >> 8)}.${nextIp++ & 255}` });
const client = () => new WebClient(s.origin, address());
const signedUp = (_s: TestServer, _smtp: unknown, email: string, password: string) => signUp(s, smtp, email, password, address());
const sessionCookie = (web: WebClient) => web.cookies.get('trs_session');

async function sessions(email: string): Promise<number> {
  const { rows } = await s.pool.query('select count(*)::int as n from web_sessions w join accounts a on a.id = w.account_id where a.email = $1', [email]);
  return rows[0].n;
}

describe('CSRF', () => {
  it('refuses a form without a token, with a wrong one, or with another browser\'s, and does nothing', async () => {
    const victim = await signedUp(s, smtp, 'csrf@example.org', PASSWORD);
    const other = client();
    await other.get('/account/sign-in');
    const keysBefore = (await s.pool.query('select count(*)::int as n from api_keys')).rows[0].n;
    for (const csrf of [null, '', 'x'.repeat(43), other.csrf!, victim.csrf!.slice(0, -1) + (victim.csrf!.endsWith('A') ? 'B' : 'A')]) {
      const res = await victim.post('/account/keys', { name: 'evil' }, { csrf });
      expect(res.status, String(csrf)).toBe(403);
      expect(heading(res)).toBe('This form has expired');
    }
    expect((await s.pool.query('select count(*)::int as n from api_keys')).rows[0].n).toBe(keysBefore);
    // The right token works.
    expect((await victim.post('/account/keys', { name: 'mine' })).status).toBe(303);
  });

  it('refuses a form the browser says came from another site or origin, whatever the token', async () => {
    const web = client();
    await web.get('/account/sign-in');
    const hostile: Record<string, string>[] = [{ 'Sec-Fetch-Site': 'cross-site' }, { 'Sec-Fetch-Site': 'same-site' }, { Origin: 'https://evil.example' }];
    for (const headers of hostile) {
      const res = await web.post('/account/sign-in', { email: 'csrf@example.org', password: PASSWORD }, { headers });
      expect(res.status).toBe(403);
      expect(res.setCookies.some((c) => c.startsWith('trs_session='))).toBe(false);
    }
  });

  it('guards sign-out too (no forced sign-out from another site)', async () => {
    const web = await signedUp(s, smtp, 'signout-csrf@example.org', PASSWORD);
    expect((await web.post('/account/sign-out', {}, { csrf: null })).status).toBe(403);
    expect(await sessions('signout-csrf@example.org')).toBe(1);
  });
});

describe('session cookies', () => {
  it('are HttpOnly and SameSite=Lax, and on plain http not Secure (no __Host- prefix)', async () => {
    const web = client();
    await signedUp(s, smtp, 'plain@example.org', PASSWORD);
    await web.get('/account/sign-in');
    const res = await web.post('/account/sign-in', { email: 'plain@example.org', password: PASSWORD });
    const cookie = res.setCookies.find((c) => c.startsWith('trs_session='))!;
    expect(cookie).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Max-Age=604800$/);
    expect(cookie).not.toMatch(/Secure|Domain/i);
  });

  it('with COOKIE_SECURE are __Host- cookies: Secure, HttpOnly, SameSite=Lax, Path=/, no Domain', async () => {
    const secure = await startTestServer({ config: { web: { cookieSecure: true } } });
    try {
      const web = new WebClient(secure.origin);
      const page = await web.get('/account/sign-in');
      const pre = page.setCookies.find((c) => c.startsWith('__Host-trs_pre='))!;
      expect(pre).toMatch(/; Path=\/; HttpOnly; SameSite=Lax; Secure$/);
      await secure.pool.query(
        "insert into accounts (email, role, licences, created_at, password_hash, email_verified_at) values ('tls@example.org', 'free', 1, now(), $1, now())",
        [await (await import('../../src/account/passwords.js')).hashPassword(PASSWORD, 14)],
      );
      const res = await web.post('/account/sign-in', { email: 'tls@example.org', password: PASSWORD });
      expect(res.status).toBe(303);
      const cookie = res.setCookies.find((c) => c.startsWith('__Host-trs_session='))!;
      expect(cookie).toMatch(/^__Host-trs_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Lax; Secure; Max-Age=\d+$/);
      expect(cookie).not.toMatch(/Domain/i);
    } finally {
      await secure.close();
    }
  });
});

describe('sessions', () => {
  it('get a new id at sign-in (no fixation): ids planted in the browser before open nothing', async () => {
    await signedUp(s, smtp, 'fixed@example.org', PASSWORD);
    // An attacker who can set cookies for the site plants ids it knows, then the victim signs in.
    const planted = { session: 'A'.repeat(43), pre: 'B'.repeat(43) };
    const victim = client();
    victim.cookies.set('trs_session', planted.session);
    victim.cookies.set('trs_pre', planted.pre);
    await victim.get('/account/sign-in');
    const res = await victim.post('/account/sign-in', { email: 'fixed@example.org', password: PASSWORD });
    expect(res.status).toBe(303);
    const issued = sessionCookie(victim)!;
    expect(issued).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(issued).not.toBe(planted.session);
    expect((await victim.get('/account')).text).toContain('fixed@example.org');
    // What the attacker holds opens nothing.
    const attacker = new WebClient(s.origin);
    attacker.cookies.set('trs_session', planted.session);
    attacker.cookies.set('trs_pre', planted.pre);
    expect((await attacker.get('/account')).status).toBe(303);
  });

  it('of an earlier sign-in end when the browser signs in again', async () => {
    const first = await signedUp(s, smtp, 'twice@example.org', PASSWORD);
    const old = sessionCookie(first)!;
    await first.post('/account/sign-out', {});
    const again = client();
    again.cookies.set('trs_session', old);
    await again.get('/account/sign-in');
    expect((await again.post('/account/sign-in', { email: 'twice@example.org', password: PASSWORD })).status).toBe(303);
    expect(sessionCookie(again)).not.toBe(old);
    expect(await sessions('twice@example.org')).toBe(1);
  });

  it('end on the server at sign-out: a copied cookie is refused afterwards', async () => {
    const web = await signedUp(s, smtp, 'leaver@example.org', PASSWORD);
    const copy = new WebClient(s.origin);
    copy.cookies.set('trs_session', sessionCookie(web)!);
    expect((await copy.get('/account')).status).toBe(200);
    expect((await web.post('/account/sign-out', {})).status).toBe(303);
    expect(sessionCookie(web)).toBeUndefined();
    expect(await sessions('leaver@example.org')).toBe(0);
    const after = await copy.get('/account');
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toBe('/account/sign-in?next=%2Faccount');
  });

  it('store only the SHA-256 of the session id', async () => {
    const web = await signedUp(s, smtp, 'hashed-session@example.org', PASSWORD);
    const { rows } = await s.pool.query('select id_hash from web_sessions w join accounts a on a.id = w.account_id where a.email = $1', ['hashed-session@example.org']);
    expect(rows[0].id_hash.equals(createHash('sha256').update(sessionCookie(web)!).digest())).toBe(true);
  });
});

describe('throttles', () => {
  it('refuse sign-in past 10 failures for an address from one source in 15 minutes, the right password too, then let it through', async () => {
    await signedUp(s, smtp, 'guessed@example.org', PASSWORD);
    s.clock.advance(15 * 60_000); // a window of its own, without the sign-in above
    const guesser = client();
    await guesser.get('/account/sign-in');
    for (let i = 0; i < 10; i++) {
      expect((await guesser.post('/account/sign-in', { email: 'guessed@example.org', password: `wrong-${i}-password` })).status).toBe(401);
    }
    const refused = await guesser.post('/account/sign-in', { email: 'guessed@example.org', password: PASSWORD });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    s.clock.advance(15 * 60_000);
    expect((await guesser.post('/account/sign-in', { email: 'guessed@example.org', password: PASSWORD })).status).toBe(303);
  });

  it('let a stranger who fails from its own source lock nobody else out: the owner signs in from another', async () => {
    await signedUp(s, smtp, 'target@example.org', PASSWORD);
    s.clock.advance(15 * 60_000);
    const stranger = client();
    await stranger.get('/account/sign-in');
    const statuses: number[] = [];
    // It keeps trying (refused attempts included) up to its source's limit of 30.
    for (let i = 0; i < 30; i++) statuses.push((await stranger.post('/account/sign-in', { email: 'target@example.org', password: `lockout-${i}-attempt` })).status);
    expect(statuses.filter((st) => st === 401)).toHaveLength(10);
    expect(statuses.slice(10).every((st) => st === 429)).toBe(true);
    const owner = client();
    await owner.get('/account/sign-in');
    // The owner mistypes once and then signs in, from its own address.
    expect((await owner.post('/account/sign-in', { email: 'target@example.org', password: 'a typo in it' })).status).toBe(401);
    expect((await owner.post('/account/sign-in', { email: 'target@example.org', password: PASSWORD })).status).toBe(303);
  });

  it('refuse sign-in for an address past 50 failures from all sources together (guessing from many sources), but for the right password from a clean source', async () => {
    await signedUp(s, smtp, 'spread@example.org', PASSWORD);
    s.clock.advance(15 * 60_000);
    // A guesser with five sources, ten failures each: all 401, none locked per source yet.
    for (let source = 0; source < 5; source++) {
      const guesser = client();
      await guesser.get('/account/sign-in');
      for (let i = 0; i < 10; i++) {
        expect((await guesser.post('/account/sign-in', { email: 'spread@example.org', password: `spread-${source}-${i}-guess` })).status).toBe(401);
      }
    }
    // The ceiling holds for every source now: a fresh one's guess is refused as a throttled
    // attempt (429, not 401), and spends its clean record, so the right password from it is refused too.
    const fresh = client();
    await fresh.get('/account/sign-in');
    expect((await fresh.post('/account/sign-in', { email: 'spread@example.org', password: 'one more guess here' })).status).toBe(429);
    expect((await fresh.post('/account/sign-in', { email: 'spread@example.org', password: PASSWORD })).status).toBe(429);
    // The owner, from a source that has not tried the address, signs in with the right password.
    const owner = client();
    await owner.get('/account/sign-in');
    expect((await owner.post('/account/sign-in', { email: 'spread@example.org', password: PASSWORD })).status).toBe(303);
    s.clock.advance(15 * 60_000);
    expect((await fresh.post('/account/sign-in', { email: 'spread@example.org', password: PASSWORD })).status).toBe(303);
  });

  it('count failures only: signing in successfully gives its attempt back', async () => {
    await signedUp(s, smtp, 'often@example.org', PASSWORD);
    s.clock.advance(15 * 60_000);
    const web = client();
    await web.get('/account/sign-in');
    // Nine failures and then many good sign-ins from one source: never locked (30 per source is the bound).
    for (let i = 0; i < 9; i++) expect((await web.post('/account/sign-in', { email: 'often@example.org', password: `typo-${i}-password` })).status).toBe(401);
    const fresh = async () => {
      web.cookies.delete('trs_session'); // signed out in this browser, so the form is the anonymous one
      await web.get('/account/sign-in');
    };
    for (let i = 0; i < 15; i++) {
      await fresh();
      expect((await web.post('/account/sign-in', { email: 'often@example.org', password: PASSWORD })).status).toBe(303);
    }
    await fresh();
    expect((await web.post('/account/sign-in', { email: 'often@example.org', password: 'the tenth typo' })).status).toBe(401);
    expect((await web.post('/account/sign-in', { email: 'often@example.org', password: PASSWORD })).status).toBe(429);
  });

  it('refuse sign-in past 30 attempts per source address, whatever the addresses tried', async () => {
    const web = client();
    await web.get('/account/sign-in');
    const statuses: number[] = [];
    for (let i = 0; i < 31; i++) statuses.push((await web.post('/account/sign-in', { email: `spray${i}@example.org`, password: 'some password' })).status);
    expect(statuses.slice(0, 30).every((st) => st === 401)).toBe(true);
    expect(statuses[30]).toBe(429);
  });

  it('refuse sign-up and reset past their limits per address and per source', async () => {
    const web = client();
    await web.get('/account/reset');
    const resets = [];
    for (let i = 0; i < 4; i++) resets.push((await web.post('/account/reset', { email: 'flood@example.org' })).status);
    expect(resets).toEqual([200, 200, 200, 429]);
    const signups = [];
    const from = client();
    await from.get('/account/register');
    for (let i = 0; i < 11; i++) signups.push((await from.post('/account/register', { email: `new${i}@example.org`, password: PASSWORD })).status);
    expect(signups.slice(0, 10).every((st) => st === 200)).toBe(true);
    expect(signups[10]).toBe(429);
  });
});

describe('no account enumeration', () => {
  /** What a page tells, without what differs per browser (its CSRF token) and the address typed. */
  const told = (page: { status: number; text: string }, email: string) => ({
    status: page.status,
    text: page.text.replace(/name="_csrf" value="[^"]+"/g, '').replaceAll(email, '<address>'),
  });

  it('sign-up answers a registered address exactly as a new one (and mails the owner instead)', async () => {
    await signedUp(s, smtp, 'known@example.org', PASSWORD);
    const a = client();
    await a.get('/account/register');
    const before = smtp.received.length;
    const known = told(await a.post('/account/register', { email: 'known@example.org', password: 'another long password' }), 'known@example.org');
    const unknown = told(await a.post('/account/register', { email: 'unknown1@example.org', password: 'another long password' }), 'unknown1@example.org');
    expect(known).toEqual(unknown);
    const mail = await linkFromMail(smtp, 'unknown1@example.org', '/account/verify', before);
    expect(mail).toBeTruthy();
    await expect.poll(() => smtp.received.slice(before).some((m) => m.envelopeTo.includes('known@example.org') && /already have an account/.test(m.mail.subject ?? ''))).toBe(true);
  });

  it('sign-in says the same for an unknown address and a wrong password, in about the same time', async () => {
    const web = client();
    await web.get('/account/sign-in');
    const wrong = told(await web.post('/account/sign-in', { email: 'known@example.org', password: 'not the password' }), 'known@example.org');
    const unknown = told(await web.post('/account/sign-in', { email: 'nobody@example.org', password: 'not the password' }), 'nobody@example.org');
    expect(wrong).toEqual(unknown);
    expect(wrong.status).toBe(401);
    const time = async (email: string) => {
      const timer = client();
      await timer.get('/account/sign-in');
      const started = performance.now();
      await timer.post('/account/sign-in', { email, password: 'not the password' });
      return performance.now() - started;
    };
    const median = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
    const known: number[] = [];
    const unknownTimes: number[] = [];
    for (let i = 0; i < 7; i++) {
      known.push(await time('known@example.org'));
      unknownTimes.push(await time(`nobody${i}@example.org`));
    }
    // Both check a scrypt hash: neither is a fraction of the other.
    const ratio = median(known) / median(unknownTimes);
    expect(ratio).toBeGreaterThan(0.5);
    expect(ratio).toBeLessThan(2);
  });

  it('sign-in makes an old, cheaper hash anew at the right password, so no known address checks quicker than the dummy', async () => {
    const { hashPassword } = await import('../../src/account/passwords.js');
    const old = await hashPassword(PASSWORD, 12); // before PASSWORD_SCRYPT_COST was raised to the server's 14
    await s.pool.query(
      "insert into accounts (email, role, licences, created_at, password_hash, email_verified_at) values ('old-cost@example.org', 'free', 1, now(), $1, now())",
      [old],
    );
    const stored = async () => (await s.pool.query("select password_hash from accounts where email = 'old-cost@example.org'")).rows[0].password_hash as string;
    const web = client();
    await web.get('/account/sign-in');
    // A wrong password changes nothing.
    expect((await web.post('/account/sign-in', { email: 'old-cost@example.org', password: 'not the password' })).status).toBe(401);
    expect(await stored()).toBe(old);
    expect((await web.post('/account/sign-in', { email: 'old-cost@example.org', password: PASSWORD })).status).toBe(303);
    const fresh = await stored();
    expect(fresh).toMatch(/^scrypt\$14\$8\$1\$/);
    expect(fresh).not.toBe(old);
    // The new hash holds the same password.
    const again = client();
    await again.get('/account/sign-in');
    expect((await again.post('/account/sign-in', { email: 'old-cost@example.org', password: PASSWORD })).status).toBe(303);
    expect(await stored()).toBe(fresh);
  });

  it('reset answers a registered address before writing its link (the link is written in the background with the mail)', async () => {
    await signedUp(s, smtp, 'reset-timing@example.org', PASSWORD);
    const web = client();
    await web.get('/account/reset');
    const before = smtp.received.length;
    // While another transaction holds the links table, nothing can be written to it: the answer
    // must still come, since a known address may not cost the answer more than an unknown one.
    const blocker = await s.pool.connect();
    try {
      await blocker.query('begin');
      await blocker.query('lock table account_tokens in exclusive mode');
      const answer = await Promise.race([
        web.post('/account/reset', { email: 'reset-timing@example.org' }),
        new Promise<'blocked'>((resolve) => setTimeout(() => resolve('blocked'), 3_000)),
      ]);
      expect(answer).not.toBe('blocked');
      expect((answer as { status: number }).status).toBe(200);
      expect(smtp.received.length).toBe(before);
    } finally {
      await blocker.query('rollback');
      blocker.release();
    }
    // Then the link is written and mailed, and it works.
    const link = new URL(await linkFromMail(smtp, 'reset-timing@example.org', '/account/reset/confirm', before));
    expect((await web.get(link.pathname + link.search)).status).toBe(200);
  });

  it('reset answers the same for a registered and an unknown address', async () => {
    const web = client();
    await web.get('/account/reset');
    const known = told(await web.post('/account/reset', { email: 'known@example.org' }), 'known@example.org');
    const unknown = told(await web.post('/account/reset', { email: 'nobody-at-all@example.org' }), 'nobody-at-all@example.org');
    expect(known).toEqual(unknown);
  });
});

describe('keys on the dashboard', () => {
  it('are shown once, stored as SHA-256 only, never logged', async () => {
    const web = await signedUp(s, smtp, 'keys@example.org', PASSWORD);
    const { posted, page, key } = await generateKey(web, 'ci');
    expect(posted.status).toBe(303);
    expect(posted.text).not.toContain('trs_');
    expect(page!.status).toBe(200);
    expect(page!.headers.get('cache-control')).toBe('no-store');
    expect(key).toMatch(/^trs_[A-Za-z0-9_-]{43}$/);
    const dashboard = await web.get('/account');
    expect(dashboard.text).not.toContain(key!);
    expect(dashboard.text).toContain(key!.slice(0, 12));
    const { rows } = await s.pool.query("select row_to_json(k)::text as row, hash from api_keys k where name = 'ci'");
    expect(rows[0].row).not.toContain(key!.slice(4));
    expect(rows[0].hash.equals(createHash('sha256').update(key!).digest())).toBe(true);
    expect(s.logs.join('')).not.toContain(key!.slice(4));
    // The sessions table held it only sealed, and holds nothing of it once shown.
    const sessionsRows = await s.pool.query("select row_to_json(w)::text as row, flash from web_sessions w join accounts a on a.id = w.account_id where a.email = 'keys@example.org'");
    expect(sessionsRows.rows.every((r) => r.flash === null && !r.row.includes(key!.slice(4)))).toBe(true);
  });

  it('are made once per form: reloading the page that shows the key makes no second key and shows it no more', async () => {
    const web = await signedUp(s, smtp, 'reload@example.org', PASSWORD);
    const count = async () => (await s.pool.query("select count(*)::int as n from api_keys k join accounts a on a.id = k.account_id where a.email = 'reload@example.org'")).rows[0].n;
    const { page, key } = await generateKey(web, 'reloaded');
    expect(page!.status).toBe(200);
    expect(await count()).toBe(1);
    // What a browser does on reload after POST-redirect-GET: it fetches the page again, not the form.
    for (let i = 0; i < 3; i++) {
      const again = await web.get('/account/keys/new');
      expect(again.status).toBe(303);
      expect(again.headers.get('location')).toBe('/account#keys');
      expect(again.text).not.toContain(key!);
    }
    expect(await count()).toBe(1);
    // Another browser of the same account (its own session) never sees this session's key.
    const other = new WebClient(s.origin, address());
    await other.get('/account/sign-in');
    await other.post('/account/sign-in', { email: 'reload@example.org', password: PASSWORD });
    await other.get('/account');
    const second = await generateKey(other, 'second');
    expect(second.key).toBeTruthy();
    expect(second.key).not.toBe(key);
    expect((await web.get('/account/keys/new')).status).toBe(303);
    // Signed out, the page sends to sign-in.
    expect((await new WebClient(s.origin).get('/account/keys/new')).status).toBe(303);
  });

  it('of another account cannot be revoked', async () => {
    const owner = await signedUp(s, smtp, 'owner@example.org', PASSWORD);
    await owner.post('/account/keys', { name: 'precious' });
    const { rows } = await s.pool.query("select id from api_keys where name = 'precious'");
    const intruder = await signedUp(s, smtp, 'intruder@example.org', PASSWORD);
    expect((await intruder.post(`/account/keys/${rows[0].id}/revoke`, {})).status).toBe(404);
    expect((await s.pool.query("select revoked_at from api_keys where name = 'precious'")).rows[0].revoked_at).toBeNull();
  });
});

describe('forms', () => {
  it('never redirect elsewhere after sign-in (next must be a local path)', async () => {
    await signedUp(s, smtp, 'redirect@example.org', PASSWORD);
    for (const next of ['//evil.example/account', 'https://evil.example/', '/\\evil.example', '/account@evil.example', 'javascript:alert(1)', '/%2F%2Fevil.example']) {
      const web = client();
      await web.get('/account/sign-in');
      const res = await web.post('/account/sign-in', { email: 'redirect@example.org', password: PASSWORD, next });
      expect(res.status).toBe(303);
      const location = res.headers.get('location')!;
      expect(location.startsWith('/account'), `${next} -> ${location}`).toBe(true);
      expect(location).not.toMatch(/evil/);
    }
  });

  it('keep next= to plain pages under /account: dot segments, empty segments, backslashes and encoded forms fall back to /account (POST and signed-in GET)', async () => {
    await signedUp(s, smtp, 'next@example.org', PASSWORD);
    const refused = [
      // The review's: /account/..//evil.example resolved to the same-origin path //evil.example.
      '/account/..//evil.example',
      // The 13 of "What held", and more spellings of them.
      '//evil.example',
      '/\\evil.example',
      'https://evil.example/',
      '/account@evil.example',
      '/account\r\nLocation: https://evil.example',
      '/\t/evil.example',
      '/account#@evil.example',
      '/account/../../evil.example',
      '/account/./..//evil.example',
      '/account/%2e%2e/%2fevil.example',
      '/account/..%2f..%2f%2fevil.example',
      '/account%2f..%2f..%2f%2fevil.example',
      '/account\\..\\..\\evil.example',
      '/%2F%2Fevil.example',
      '/%5Cevil.example',
      '/account/%5C%5Cevil.example',
      '///evil.example',
      'javascript:alert(1)',
      '/account/..',
      '/account/.',
      '/account/',
      '/accountevil',
      '/account?next=1#@evil.example',
      '/account/audit?x=<script>',
    ];
    const kept = ['/account', '/account/audit', '/account/audit?kind=sign_in&from=2026-01-01', '/account/audit.csv', '/account/keys/new'];
    const signedIn = client();
    await signedIn.get('/account/sign-in');
    expect((await signedIn.post('/account/sign-in', { email: 'next@example.org', password: PASSWORD })).status).toBe(303);
    for (const next of [...refused, ...kept]) {
      const expected = kept.includes(next) ? next : '/account';
      const web = client();
      await web.get('/account/sign-in');
      const posted = await web.post('/account/sign-in', { email: 'next@example.org', password: PASSWORD, next });
      expect(posted.status, JSON.stringify(next)).toBe(303);
      expect(posted.headers.get('location'), JSON.stringify(next)).toBe(expected);
      const got = await signedIn.get(`/account/sign-in?next=${encodeURIComponent(next)}`);
      expect(got.status, JSON.stringify(next)).toBe(303);
      expect(got.headers.get('location'), JSON.stringify(next)).toBe(expected);
    }
    // The anonymous form carries only what it would redirect to.
    const form = await client().get(`/account/sign-in?next=${encodeURIComponent('/account/..//evil.example')}`);
    expect(form.text).toContain('name="next" value="/account"');
  });

  it('refuse CR/LF in an address, a key name and a sender name; no mail goes out', async () => {
    const web = client();
    await web.get('/account/register');
    const before = smtp.received.length;
    for (const email of ['a@example.org\r\nBcc: evil@attacker.test', 'a@example.org\nX-Evil: 1', 'Bob <a@example.org>', 'a@example.org, b@example.org']) {
      const res = await web.post('/account/register', { email, password: PASSWORD });
      expect(res.status, email).toBe(400);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(smtp.received.length).toBe(before);
    const signedIn = await signedUp(s, smtp, 'crlf@example.org', PASSWORD);
    expect((await signedIn.post('/account/keys', { name: 'one\r\ntwo' })).status).toBe(400);
    await s.pool.query("update accounts set role = 'business', licences = 2 where email = 'crlf@example.org'");
    await signedIn.get('/account');
    expect((await signedIn.post('/account/sender-name', { sender_name: 'Shop\r\nBcc: evil@attacker.test' })).status).toBe(400);
    expect((await s.pool.query("select sender_name from accounts where email = 'crlf@example.org'")).rows[0].sender_name).toBeNull();
  });

  it('refuse over-long and repeated fields, oversize bodies and too many fields', async () => {
    const web = client();
    await web.get('/account/register');
    expect((await web.post('/account/register', { email: `${'a'.repeat(300)}@example.org`, password: PASSWORD })).status).toBe(400);
    expect((await web.post('/account/register', { email: 'long@example.org', password: 'p'.repeat(2_000) })).status).toBe(400);
    const repeated = `_csrf=${web.csrf}&email=a%40example.org&email=b%40example.org&password=x`;
    expect((await web.post('/account/register', {}, { body: repeated })).status).toBe(400);
    expect((await web.post('/account/register', {}, { body: `_csrf=${web.csrf}&pad=${'x'.repeat(20_000)}` })).status).toBe(413);
    const many = Array.from({ length: 30 }, (_, i) => `f${i}=1`).join('&');
    expect((await web.post('/account/register', {}, { body: `_csrf=${web.csrf}&${many}` })).status).toBe(413);
  });

  it('take urlencoded bodies only', async () => {
    const web = client();
    await web.get('/account/sign-in');
    for (const contentType of ['application/json', 'text/plain', 'multipart/form-data; boundary=x']) {
      const body = contentType === 'application/json' ? JSON.stringify({ _csrf: web.csrf, email: 'a@example.org', password: 'x' }) : `_csrf=${web.csrf}&email=a`;
      const res = await web.post('/account/sign-in', {}, { body, contentType });
      expect(res.status, contentType).toBe(415);
    }
  });
});

describe('one-time links', () => {
  it('verification links expire, and work once', async () => {
    const web = client();
    await web.get('/account/register');
    const before = smtp.received.length;
    await web.post('/account/register', { email: 'late@example.org', password: PASSWORD });
    const link = new URL(await linkFromMail(smtp, 'late@example.org', '/account/verify', before));
    s.clock.advance(24 * 3_600_000 + 1_000);
    expect((await web.get(link.pathname + link.search)).status).toBe(400);
    expect((await web.post('/account/verify', { token: link.searchParams.get('token')! })).status).toBe(400);
    s.clock.advance(-(24 * 3_600_000 + 1_000));
  });

  it('reset links work once, end every session and expire', async () => {
    const signedIn = await signedUp(s, smtp, 'reset@example.org', PASSWORD);
    const web = client();
    await web.get('/account/reset');
    const before = smtp.received.length;
    await web.post('/account/reset', { email: 'reset@example.org' });
    const link = new URL(await linkFromMail(smtp, 'reset@example.org', '/account/reset/confirm', before));
    const token = link.searchParams.get('token')!;
    expect((await web.get(link.pathname + link.search)).status).toBe(200);
    expect((await web.post('/account/reset/confirm', { token, password: 'a brand new passphrase' })).status).toBe(200);
    expect((await web.post('/account/reset/confirm', { token, password: 'yet another passphrase' })).status).toBe(400);
    expect((await signedIn.get('/account')).status).toBe(303);
    // An old link expires after RESET_LINK_MINUTES.
    const again = smtp.received.length;
    await web.post('/account/reset', { email: 'reset@example.org' });
    const late = new URL(await linkFromMail(smtp, 'reset@example.org', '/account/reset/confirm', again));
    s.clock.advance(61 * 60_000);
    expect((await web.post('/account/reset/confirm', { token: late.searchParams.get('token')!, password: 'too late passphrase' })).status).toBe(400);
  });

  it('never reach the logs, nor do passwords or session ids', async () => {
    const text = s.logs.join('');
    expect(text).not.toContain(PASSWORD);
    expect(text).not.toMatch(/token=[A-Za-z0-9_-]{43}/);
    const { rows } = await s.pool.query('select count(*)::int as n from web_sessions');
    expect(rows[0].n).toBeGreaterThan(0);
    expect(text).not.toMatch(/trs_session=[A-Za-z0-9_-]{43}/);
  });
});

describe('every page route under other spellings of its path', () => {
  const routes: [string, string][] = [
    ['GET', '/'],
    ['GET', '/lookup?ip=8.8.8.8'],
    ['GET', '/account'],
    ['GET', '/account/register'],
    ['POST', '/account/register'],
    ['GET', '/account/verify?token=x'],
    ['POST', '/account/verify'],
    ['GET', '/account/sign-in'],
    ['POST', '/account/sign-in'],
    ['POST', '/account/sign-out'],
    ['GET', '/account/reset'],
    ['POST', '/account/reset'],
    ['GET', '/account/reset/confirm?token=x'],
    ['POST', '/account/reset/confirm'],
    ['POST', '/account/keys'],
    ['GET', '/account/keys/new'],
    ['POST', '/account/keys/00000000-0000-0000-0000-000000000000/revoke'],
    ['POST', '/account/sender-name'],
    ['POST', '/account/bundles/svc_mail_bundle_1000/buy'],
    ['GET', '/account/audit'],
    ['GET', '/account/audit.csv'],
    ['POST', '/webhooks/stripe'],
  ];
  const variants: Record<string, (p: string) => string> = {
    'upper case': (p) => p.replace(/^\/[a-z]+/, (seg) => seg.toUpperCase()),
    'trailing slash': (p) => p.replace(/(\?|$)/, '/$1'),
    'double slash': (p) => `/${p}`,
    'dot segment': (p) => `/x/..${p}`,
    'encoded dot segment': (p) => `/x/%2e%2e${p}`,
    'encoded slash': (p) => p.replace(/\/([a-z])/, '/%2F$1'),
    'encoded backslash': (p) => p.replace(/(\?|$)/, '%5C$1'),
    'NUL byte': (p) => p.replace(/(\?|$)/, '%00$1'),
  };

  for (const [method, path] of routes) {
    it(`${method} ${path}`, async () => {
      const keysBefore = (await s.pool.query('select count(*)::int as n from api_keys')).rows[0].n;
      for (const [name, variant] of Object.entries(variants)) {
        if (path === '/' && ['upper case', 'encoded slash'].includes(name)) continue;
        const res = await rawCall(s.origin, variant(path), { method, body: method === 'POST' ? 'a=1' : undefined, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
        expect(res.status, `${name}: ${variant(path)}`).toBe(404);
      }
      expect((await s.pool.query('select count(*)::int as n from api_keys')).rows[0].n).toBe(keysBefore);
    });
  }
});
