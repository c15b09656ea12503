import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeAccounts, purgeSettingsOf } from '../../src/account/job.js';
import { loadConfig } from '../../src/config.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { linkFromMail, signedUp, WebClient, type PageResult } from '../support/web.js';

/**
 * Finding M2 (review 2026-11-26): a sign-in with the right password to an unconfirmed account
 * mailed a new verification link every time, and the attempt was given back to the address's
 * counts. Whoever registered someone else's address with a password of their own could send
 * that address mail after mail from the operator's domain, from as many sources as they had.
 *
 * Now a sign-in sends a new link only when the newest is at least ACCOUNT_VERIFY_RESEND_MINUTES
 * (10) old, and each such mail counts against the address's sign-up allowance (3 mails an
 * hour). The page says the same whether or not a mail went out.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
const VICTIM = 'victim5@example.com';
const ATTACKERS_PASSWORD = 'Attacker-Pass-55';
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({
    config: {
      trustProxy: ['loopback'],
      relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } },
      // Room for every sign-in of a burst to be checked: this test is about mail, not hashing.
      web: { hashConcurrency: 2, hashQueue: 100 },
    },
  });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

let nextSource = 1;
/** A browser at an address of its own. */
const browser = () => new WebClient(s.origin, { 'X-Forwarded-For': `198.51.100.${nextSource++}` });

const mailsTo = (email: string) => smtp.received.filter((m) => m.envelopeTo.includes(email)).length;

async function linksIssued(email: string): Promise<number> {
  const { rows } = await s.pool.query(
    "select count(*)::int as n from account_tokens t join accounts a on a.id = t.account_id where a.email = $1 and t.purpose = 'verify'",
    [email],
  );
  return rows[0].n;
}

/** What a page tells, without what differs per browser (its CSRF token). */
const told = (page: PageResult) => ({ status: page.status, text: page.text.replace(/name="_csrf" value="[^"]+"/g, '') });

/**
 * 24 sign-ins at once with the attacker's password, from 3 sources of their own (8 each); the
 * pages they got, once every one is answered.
 */
async function burst(): Promise<PageResult[]> {
  const sources = [browser(), browser(), browser()].map((b) => b.headers);
  const browsers = Array.from({ length: 24 }, (_, i) => new WebClient(s.origin, sources[i % 3]));
  await Promise.all(browsers.map((b) => b.get('/account/sign-in')));
  return Promise.all(browsers.map((b) => b.post('/account/sign-in', { email: VICTIM, password: ATTACKERS_PASSWORD })));
}

/**
 * The mails under way when the answers came have reached the SMTP server: once `email` has had
 * `count`, a quarter of a second more for any that should not be there (each link is also counted
 * in the database, where no wait is needed). A fixed second per burst had made the first test
 * 7 s of sleep, and it timed out in a CI leg sharing its cores.
 */
async function mailsSettled(email: string, count: number): Promise<number> {
  await eventually(() => mailsTo(email) >= count);
  await new Promise((resolve) => setTimeout(resolve, 250));
  return mailsTo(email);
}

describe('sign-in to an unconfirmed account', () => {
  // 168 sign-ins with a right password: 168 scrypt verifications, two at a time.
  it('mails a new link at most once per 10 minutes and 3 times an hour (with the sign-up), however many sign-ins from however many sources', { timeout: 120_000 }, async () => {
    // At the start of an hour: the address's mails are counted per hour.
    s.clock.set(new Date(Math.ceil(s.clock.now().getTime() / HOUR) * HOUR + 1_000));
    const attacker = browser();
    await attacker.get('/account/register');
    expect((await attacker.post('/account/register', { email: VICTIM, password: ATTACKERS_PASSWORD })).status).toBe(200);
    await linkFromMail(smtp, VICTIM, '/account/verify');
    expect(mailsTo(VICTIM)).toBe(1);

    const expectBurst = async (links: number) => {
      const pages = await burst();
      for (const page of pages) {
        expect(page.status).toBe(403);
        expect(page.text).toContain('check your mail');
      }
      // The links are written before the answers; the mails go out with them.
      expect(await linksIssued(VICTIM)).toBe(links);
      expect(await mailsSettled(VICTIM, links)).toBe(links);
      return pages;
    };

    // The sign-up's link is young: 24 sign-ins send nothing.
    const quiet = await expectBurst(1);
    s.clock.advance(10 * MINUTE);
    // 10 minutes on: one of the 24 sends a new link, the others nothing.
    const sending = await expectBurst(2);
    // Whether a mail went out or not, the page is the same.
    expect(new Set([...quiet, ...sending].map((p) => JSON.stringify(told(p)))).size).toBe(1);
    s.clock.advance(5 * MINUTE);
    await expectBurst(2);
    s.clock.advance(5 * MINUTE);
    await expectBurst(3);
    // 30 minutes into the hour the address has had its 3 mails (the sign-up's and two links).
    s.clock.advance(10 * MINUTE);
    await expectBurst(3);
    s.clock.advance(10 * MINUTE);
    await expectBurst(3);
    // The next hour: one more.
    s.clock.advance(20 * MINUTE);
    await expectBurst(4);
    // 7 bursts, 168 sign-ins, 4 mails in all; the newest link is the one that works.
    const link = new URL(await linkFromMail(smtp, VICTIM, '/account/verify'));
    const owner = browser();
    await owner.get(link.pathname + link.search);
    expect((await owner.post('/account/verify', { token: link.searchParams.get('token')! })).status).toBe(200);
  });

  it('counts the new link against the address as a sign-up does: sign-ups first, no link after', async () => {
    s.clock.set(new Date(Math.ceil(s.clock.now().getTime() / HOUR) * HOUR + 1_000));
    const email = 'victim6@example.com';
    const attacker = browser();
    await attacker.get('/account/register');
    expect((await attacker.post('/account/register', { email, password: ATTACKERS_PASSWORD })).status).toBe(200);
    // Two more sign-ups for the address: each mails it ("you already have an account").
    for (let i = 0; i < 2; i++) expect((await attacker.post('/account/register', { email, password: ATTACKERS_PASSWORD })).status).toBe(200);
    expect(await mailsSettled(email, 3)).toBe(3);
    s.clock.advance(10 * MINUTE);
    const signIn = browser();
    await signIn.get('/account/sign-in');
    const page = await signIn.post('/account/sign-in', { email, password: ATTACKERS_PASSWORD });
    expect(page.status).toBe(403);
    expect(page.text).toContain('check your mail');
    expect(await linksIssued(email)).toBe(1);
    expect(await mailsSettled(email, 3)).toBe(3);
  });
});

describe('an address registered and never confirmed', () => {
  it('is deleted 30 days after sign-up, so its owner can register it; confirmed accounts and CLI-made ones stay', async () => {
    const email = 'never-confirmed@example.com';
    const web = browser();
    await web.get('/account/register');
    expect((await web.post('/account/register', { email, password: ATTACKERS_PASSWORD })).status).toBe(200);
    const { accountId: cliMade } = await s.createKey('free');
    await signedUp(s, smtp, 'confirmed-owner@example.com', 'Confirmed-Pass-31', { 'X-Forwarded-For': '198.51.100.250' });
    const accountOf = async (address: string) => (await s.pool.query('select id from accounts where lower(email) = $1', [address])).rows;
    expect(await accountOf(email)).toHaveLength(1);

    const purgeAt = async (days: number) => {
      s.clock.advance(days * 24 * HOUR);
      try {
        return await purgeAccounts(s.pool, s.clock, purgeSettingsOf(loadConfig({})));
      } finally {
        s.clock.advance(-days * 24 * HOUR);
      }
    };
    expect((await purgeAt(29))!.unverifiedAccounts).toBe(0);
    expect(await accountOf(email)).toHaveLength(1);
    expect((await purgeAt(31))!.unverifiedAccounts).toBeGreaterThanOrEqual(1);
    expect(await accountOf(email)).toHaveLength(0);
    expect((await s.pool.query('select 1 from accounts where id = $1', [cliMade])).rows).toHaveLength(1);
    expect(await accountOf('confirmed-owner@example.com')).toHaveLength(1);

    // The owner registers the address as their own now.
    const owner = browser();
    await owner.get('/account/register');
    const before = smtp.received.length;
    expect((await owner.post('/account/register', { email, password: 'Owners-Own-Pass-77' })).status).toBe(200);
    await linkFromMail(smtp, email, '/account/verify', before);
    expect(await accountOf(email)).toHaveLength(1);
  });
});
