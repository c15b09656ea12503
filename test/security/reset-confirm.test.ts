import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashActivity } from '../../src/account/passwords.js';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { heading, linkFromMail, signedUp, WebClient } from '../support/web.js';

/**
 * Finding: `POST /account/reset/confirm` ran scrypt (32 MiB) on the new password before it
 * looked at the link, and had no throttle: anyone could make the server hash without end by
 * posting made-up tokens. Now the link (and the password's rules) are checked first, without
 * using the link up, and the page is throttled per source address.
 *
 * Every scrypt derivation of the process is counted (account/passwords.ts's `hashActivity`, the
 * counter /metrics reports; the test server runs in this process), so "never hashes" is
 * measured, not guessed from timings.
 */
const hashes = { get count() { return hashActivity.total; } };

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
const PASSWORD = 'correct horse battery';
let nextIp = 1;
const address = () => ({ 'X-Forwarded-For': `198.51.100.${nextIp++}` });

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { trustProxy: ['loopback'], relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } } } });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

/** A made-up token of the right shape (43 base64url characters). */
const madeUp = (i: number) => `${String(i).padStart(4, '0')}${'A'.repeat(39)}`;

describe('POST /account/reset/confirm', () => {
  it('with made-up links hashes nothing, and a flood from one address is throttled', async () => {
    const web = new WebClient(s.origin, address());
    await web.get('/account/reset');
    const before = hashes.count;
    const statuses: number[] = [];
    for (let i = 0; i < 14; i++) statuses.push((await web.post('/account/reset/confirm', { token: madeUp(i), password: 'a long enough new password' })).status);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(400));
    expect(statuses.slice(10)).toEqual(Array(4).fill(429));
    expect(hashes.count - before).toBe(0);
    const refused = await web.post('/account/reset/confirm', { token: madeUp(99), password: 'a long enough new password' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(heading(refused)).toBe('Too many attempts');
  });

  it('with a live link and a password the rules refuse hashes nothing and keeps the link', async () => {
    await signedUp(s, smtp, 'weak@example.org', PASSWORD, address());
    const web = new WebClient(s.origin, address());
    await web.get('/account/reset');
    const mails = smtp.received.length;
    await web.post('/account/reset', { email: 'weak@example.org' });
    const token = new URL(await linkFromMail(smtp, 'weak@example.org', '/account/reset/confirm', mails)).searchParams.get('token')!;
    const before = hashes.count;
    expect((await web.post('/account/reset/confirm', { token, password: 'short' })).status).toBe(400);
    expect((await web.post('/account/reset/confirm', { token, password: 'weak@example.org' })).status).toBe(400);
    expect(hashes.count - before).toBe(0);
    // The link still works for the right password: one hash, then it is used up.
    expect((await web.post('/account/reset/confirm', { token, password: 'a brand new passphrase' })).status).toBe(200);
    expect(hashes.count - before).toBe(1);
    expect((await web.post('/account/reset/confirm', { token, password: 'another new passphrase' })).status).toBe(400);
    expect(hashes.count - before).toBe(1);
    const again = new WebClient(s.origin, address());
    await again.get('/account/sign-in');
    expect((await again.post('/account/sign-in', { email: 'weak@example.org', password: 'a brand new passphrase' })).status).toBe(303);
  });

  it('throttles per source address only: another address still resets', async () => {
    await signedUp(s, smtp, 'other@example.org', PASSWORD, address());
    const flooder = new WebClient(s.origin, address());
    await flooder.get('/account/reset');
    for (let i = 0; i < 11; i++) await flooder.post('/account/reset/confirm', { token: madeUp(i), password: 'a long enough new password' });
    const web = new WebClient(s.origin, address());
    await web.get('/account/reset');
    const mails = smtp.received.length;
    await web.post('/account/reset', { email: 'other@example.org' });
    const token = new URL(await linkFromMail(smtp, 'other@example.org', '/account/reset/confirm', mails)).searchParams.get('token')!;
    expect((await web.post('/account/reset/confirm', { token, password: 'a brand new passphrase' })).status).toBe(200);
  });
});
