import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { heading, linkFromMail, signedUp, WebClient } from '../support/web.js';

/**
 * Finding L1 (review 2026-11-26): any 5 sources (five /64s of one IPv6 /48) failing 10 times each
 * closed an address to its owner for 15 minutes (the address-wide ceiling of 50), and a password
 * reset did not reopen it.
 *
 * Now a source that has not tried the address in the window is let through once past the
 * ceiling, and only the right password signs in (anything else is answered 429 and spends the
 * source's clean record); an address's failures per source are counted per /48 for IPv6; a
 * reset clears the address's sign-in counts.
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

let nextIp = 1;
const source = () => `198.51.${100 + (nextIp >> 8)}.${nextIp++ & 255}`;
const browserAt = async (ip: string) => {
  const web = new WebClient(s.origin, { 'X-Forwarded-For': ip });
  await web.get('/account/sign-in');
  return web;
};
const signIn = (web: WebClient, email: string, password: string) => web.post('/account/sign-in', { email, password });

/** The sign-in counts of an address (the throttle keeps a digest of it): its own, and per source. */
async function counts(email: string): Promise<{ address: number; perSource: number[] }> {
  const subject = `sign-in:a:${createHash('sha256').update(email).digest('base64url')}`;
  const { rows } = await s.pool.query<{ subject: string; attempts: number }>(
    'select subject, attempts from auth_throttle where subject = $1 or starts_with(subject, $2)',
    [subject, `${subject}:`],
  );
  return {
    address: rows.filter((r) => r.subject === subject).reduce((n, r) => n + r.attempts, 0),
    // In ascending order: the rows come in no order of their own.
    perSource: rows.filter((r) => r.subject !== subject).map((r) => r.attempts).sort((a, b) => a - b),
  };
}

async function hashesRun(): Promise<number> {
  const text = await (await fetch(`${s.origin}/metrics`)).text();
  return Number(/^trs_password_hashes_total (\d+)$/m.exec(text)![1]);
}

/** Five sources fail 10 times each for the address (the ceiling of 50); each gets 401 ten times and then 429. */
async function lockOut(email: string, sources: string[]): Promise<void> {
  for (const ip of sources) {
    const guesser = await browserAt(ip);
    const statuses: number[] = [];
    for (let i = 0; i < 11; i++) statuses.push((await signIn(guesser, email, `guess-${ip}-${i}`)).status);
    expect(statuses).toEqual([...Array(10).fill(401), 429]);
  }
}

describe('an address past its ceiling of failures', () => {
  it("opens to the owner's right password from a source that has not tried it; guessers from fresh sources get 429 and one try each", async () => {
    const email = 'carol@example.org';
    await signedUp(s, smtp, email, PASSWORD, { 'X-Forwarded-For': source() });
    s.clock.advance(15 * 60_000);
    await lockOut(email, [source(), source(), source(), source(), source()]);

    // The review's owner, from 203.0.113.77: signed in (it was 429, Retry-After 885).
    const owner = await browserAt('203.0.113.77');
    expect((await signIn(owner, email, PASSWORD)).status).toBe(303);

    // A guesser with 20 fresh sources: one try each, answered as a refusal, never a sign-in.
    for (let i = 0; i < 20; i++) {
      const fresh = await browserAt(source());
      const guess = await signIn(fresh, email, `fresh-guess-${i}`);
      expect(guess.status).toBe(429);
      expect(heading(guess)).toBe('Too many attempts');
      expect(Number(guess.headers.get('retry-after'))).toBeGreaterThan(0);
      // Its clean record is spent: not even the right password from it now.
      expect((await signIn(fresh, email, PASSWORD)).status).toBe(429);
    }
    const { rows } = await s.pool.query("select count(*)::int as n from audit_events e join accounts a on a.id = e.account_id where a.email = $1 and e.kind = 'sign_in'", [email]);
    expect(rows[0].n).toBe(2); // the sign-up's own sign-in and the owner's
  });

  it('gives a clean source one checked try however many it sends at once', async () => {
    const email = 'dave@example.org';
    await signedUp(s, smtp, email, PASSWORD, { 'X-Forwarded-For': source() });
    s.clock.advance(15 * 60_000);
    await lockOut(email, [source(), source(), source(), source(), source()]);
    const ip = source();
    const browsers = await Promise.all(Array.from({ length: 8 }, () => browserAt(ip)));
    const before = await hashesRun();
    const statuses = (await Promise.all(browsers.map((web, i) => signIn(web, email, `parallel-guess-${i}`)))).map((p) => p.status);
    expect(statuses).toEqual(Array(8).fill(429));
    // One of the eight was checked (one hash); the others were refused before hashing.
    expect((await hashesRun()) - before).toBe(1);
  });

  it('is not reached by five /64s of one IPv6 /48: their failures count per /48, so the owner is never locked out', async () => {
    const email = 'erin@example.org';
    await signedUp(s, smtp, email, PASSWORD, { 'X-Forwarded-For': source() });
    s.clock.advance(15 * 60_000);
    const statuses: number[] = [];
    // The review's five /64s of 2a01:4f8:1::/48, 11 wrong passwords each.
    for (let n = 0; n < 5; n++) {
      const guesser = await browserAt(`2a01:4f8:1:${n}::1`);
      for (let j = 0; j < 11; j++) statuses.push((await signIn(guesser, email, `v6-guess-${n}-${j}`)).status);
    }
    // Ten failures for the whole /48, then refused: the address took 10, far from its 50.
    expect(statuses).toEqual([...Array(10).fill(401), ...Array(45).fill(429)]);
    // (the sign-up's sign-in was forgiven, in an earlier window)
    expect(await counts(email)).toEqual({ address: 10, perSource: [0, 10] });
    // The owner mistypes once and signs in, from anywhere else, without any probation.
    const owner = await browserAt('203.0.113.78');
    expect((await signIn(owner, email, 'a typo in it')).status).toBe(401);
    expect((await signIn(owner, email, PASSWORD)).status).toBe(303);
  });
});

describe('a password reset', () => {
  it("clears the address's sign-in counts: the owner signs in with the new password from a source that had failed", async () => {
    const email = 'frank@example.org';
    await signedUp(s, smtp, email, PASSWORD, { 'X-Forwarded-For': source() });
    s.clock.advance(15 * 60_000);
    await lockOut(email, [source(), source(), source(), source(), source()]);
    // The owner mistypes once from its own source, and has spent its clean record.
    const owner = await browserAt(source());
    expect((await signIn(owner, email, 'a typo in it')).status).toBe(429);
    expect((await signIn(owner, email, PASSWORD)).status).toBe(429);
    // The reset, from the same browser.
    await owner.get('/account/reset');
    const before = smtp.received.length;
    expect((await owner.post('/account/reset', { email })).status).toBe(200);
    const link = new URL(await linkFromMail(smtp, email, '/account/reset/confirm', before));
    await owner.get(link.pathname + link.search);
    expect((await owner.post('/account/reset/confirm', { token: link.searchParams.get('token')!, password: 'a brand new passphrase', revoke_keys: '1' })).status).toBe(200);
    expect(await counts(email)).toEqual({ address: 0, perSource: [] });
    await owner.get('/account/sign-in');
    expect((await signIn(owner, email, 'a brand new passphrase')).status).toBe(303);
  });
});
