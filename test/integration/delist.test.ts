import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeAccounts, purgeSettingsOf } from '../../src/account/job.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { loadConfig } from '../../src/config.js';
import { runCli } from '../support/cli.js';
import { expectSchema } from '../support/contract.js';
import { bouncersOf } from '../support/crowdsec.js';
import { call, type CallResult } from '../support/http.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { heading, linkFromMail, signedUp, WebClient } from '../support/web.js';

/**
 * Delisting end to end (issue 28, item 1): a request, the mailed link that confirms it, the
 * operator's decision through `trs delist`, the address off the next snapshot and the
 * bouncers' next pull, the requester told, the reporters shown the decision; a rejection and
 * its 7-day cooldown; one open request per address; the proof by address and IPv6 /64; bad
 * input and wrong tokens. Every answer the server gives is validated against the document.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let bouncerKey: string;
let reader: string;
const LISTED = '45.155.205.7';
const REJECTED = '45.155.205.90';
const V6_LISTED = '2a0d:5600:24::5';
const DAY = 86_400_000;
const OPERATOR = 'operator@trs.example.net';

const regenerate = () => blacklistSnapshots(s.pool, s.clock, 3).regenerate();
const pull = (query = '') => call(s.origin, `/crowdsec/v1/decisions/stream${query}`, { headers: { 'X-Api-Key': bouncerKey, 'User-Agent': 'crowdsec-firewall-bouncer/v0.0.25' } });
const values = (decisions: any[] | null) => (decisions ?? []).map((d) => d.value).sort();
const listed = async () => ((await call(s.origin, '/api/v2/blacklist?confidence=0', { key: reader })).body.data as { ip: string }[]).map((e) => e.ip);

const ask = (body: Record<string, unknown>, from: string): Promise<CallResult> =>
  call(s.origin, '/api/v2/delist-requests', { json: body, headers: { 'X-Forwarded-For': from } });
const show = (id: string, token: string, from = '198.51.100.200') =>
  call(s.origin, `/api/v2/delist-requests/${id}?token=${token}`, { headers: { 'X-Forwarded-For': from } });

function cliEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn', RELAY_SMTP_URL: smtp.url, RELAY_MAIL_FROM: 'trs@example.net', PUBLIC_URL: s.origin };
  if (s.db.embedded) delete env.DATABASE_URL;
  return env;
}
const trs = (...args: string[]) => runCli(cliEnv(), ...args);

const mailsTo = (email: string) => smtp.received.filter((m) => m.envelopeTo.includes(email));
const tokenOf = (link: string) => new URL(link).searchParams.get('token')!;

async function auditKinds(id: string): Promise<string[]> {
  const { rows } = await s.pool.query<{ kind: string }>("select kind from audit_events where detail->>'request' = $1 order by id", [id]);
  return rows.map((r) => r.kind);
}

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({
    config: {
      trustProxy: ['loopback'],
      relay: { mail: { smtpUrl: smtp.url, from: 'trs@example.net' } },
      delisting: { ...loadConfig({}).delisting, operatorEmails: [OPERATOR] },
    },
  });
  s.clock.set('2026-06-15T12:00:00Z');
  await reportFromAccounts(s, [LISTED, REJECTED, V6_LISTED]);
  await regenerate();
  bouncerKey = (await bouncersOf(s).add('firewall', { confidence: 0 })).key;
  reader = (await s.createKey('enterprise')).key;
  expect((await pull('?startup=true')).status).toBe(200);
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

describe('a delisting request, from the request to the address leaving the list', () => {
  it('is proven from the address itself, confirmed by the mailed link, approved by the CLI, and leaves the snapshot and the bouncers', async () => {
    expect(await listed()).toContain(LISTED);
    const email = 'postmaster@mail.example.org';
    const made = await ask({ ip: LISTED, email, reason: 'Our mail server was compromised; it was rebuilt.' }, LISTED);
    expect(made.status).toBe(202);
    expectSchema('DelistRequestEnvelope', made.body);
    expect(made.body.data).toMatchObject({ ip: LISTED, status: 'unconfirmed', proven: true, confirmedAt: null, decidedAt: null });
    expect(made.body.data.message).toMatch(/made from 45\.155\.205\.7 itself, so it is marked as proven/);
    const id: string = made.body.data.id;

    const link = await linkFromMail(smtp, email, `/delist/${id}`);
    // Only the token's SHA-256 is stored.
    const { rows } = await s.pool.query<{ token_hash: Buffer }>('select token_hash from delist_requests where id = $1', [id]);
    expect(rows[0]!.token_hash.equals(createHash('sha256').update(tokenOf(link)).digest())).toBe(true);

    const confirmed = await show(id, tokenOf(link));
    expect(confirmed.status).toBe(200);
    expect(confirmed.body.data).toMatchObject({ id, status: 'open', proven: true });
    expect(confirmed.body.data.confirmedAt).not.toBeNull();
    // Opening the link again changes nothing.
    expect((await show(id, tokenOf(link))).body.data.status).toBe('open');

    // The review shows the evidence of the reports about the address (redacted as stored).
    const witness = (await s.createKey('enterprise')).key;
    const evidence = 'sshd[811]: Failed password for root from 45.155.205.7 port 4122 ssh2';
    expect((await call(s.origin, '/api/v2/report', { key: witness, json: { ip: LISTED, categories: [18], evidence } })).status).toBe(200);
    const withEvidence = JSON.parse((await trs('delist', 'list', '--evidence', '2', '--json')).out).find((r: { id: string }) => r.id === id);
    expect(withEvidence.evidence.total).toBe(1);
    expect(withEvidence.evidence.reports[0].evidence).toBe(evidence);
    expect((await trs('delist', 'list', '--evidence', '2')).out).toContain('Failed password for root');
    expect((await trs('delist', 'list', '--evidence', '0')).code).not.toBe(0);

    const list = await trs('delist', 'list', '--json');
    expect(list.code).toBe(0);
    expect(JSON.parse(list.out).find((r: { id: string }) => r.id === id).evidence).toBeUndefined();
    expect(JSON.parse(list.out)).toContainEqual(expect.objectContaining({ id, ip: LISTED, status: 'open', proven: true, email, reason: 'Our mail server was compromised; it was rebuilt.' }));

    const before = mailsTo(email).length;
    const approved = await trs('delist', 'approve', id, '--days', '10', '--note', 'Thanks, cleaned up.');
    expect(approved.err).toBe('');
    expect(approved.code).toBe(0);
    expect(approved.out).toMatch(new RegExp(`approved ${id}: ${LISTED.replace(/\./g, '\\.')} is whitelisted until`));
    const { rows: whitelist } = await s.pool.query('select range::text, note, expires_at from whitelist');
    expect(whitelist).toHaveLength(1);
    expect(whitelist[0].range).toBe(`${LISTED}/32`);
    expect(whitelist[0].note).toBe(`delisting request ${id}: Thanks, cleaned up.`);
    // The CLI runs on the real clock.
    expect(Math.abs(whitelist[0].expires_at.getTime() - (Date.now() + 10 * DAY))).toBeLessThan(60_000);

    // The requester is told.
    await eventually(() => mailsTo(email).length === before + 1);
    const decision = mailsTo(email).at(-1)!.mail;
    expect(decision.subject).toBe(`Delisting request for ${LISTED}: approved`);
    expect(decision.text).toContain('Thanks, cleaned up.');

    // The next regeneration drops it; the bouncers' next pull deletes it.
    s.clock.advance(10_000);
    await regenerate();
    expect(await listed()).not.toContain(LISTED);
    const delta = await pull();
    expectSchema('DecisionsStreamResponse', delta.body, 'crowdsec');
    expect(values(delta.body.deleted)).toEqual([LISTED]);
    expect(values(delta.body.new)).toEqual([]);

    // Its reporters see the decision.
    const reports = await call(s.origin, `/api/v2/reports/${LISTED}`, { key: reader });
    expect(reports.status).toBe(200);
    expect(reports.body.data.delisting).toEqual({ status: 'approved', range: `${LISTED}/32`, decidedAt: expect.any(String), whitelistUntil: whitelist[0].expires_at.toISOString() });
    expect((await call(s.origin, `/api/v2/reports/${V6_LISTED}`, { key: reader })).body.data.delisting).toBeUndefined();

    // The requester's link shows the decision.
    expect((await show(id, tokenOf(link))).body.data).toMatchObject({ status: 'approved', whitelistUntil: whitelist[0].expires_at.toISOString() });

    expect(await auditKinds(id)).toEqual(['delist_requested', 'delist_mailed', 'delist_confirmed', 'delist_approved']);
    const { rows: approvedBy } = await s.pool.query("select actor, account_id from audit_events where kind = 'delist_approved'");
    expect(approvedBy).toEqual([{ actor: 'cli', account_id: null }]);
  });

  it('ends with the approval: the whitelist entry goes at its time with the next regeneration, and the address is listed again', async () => {
    const settings = purgeSettingsOf(loadConfig({}));
    s.clock.set(new Date(Date.now() + 9 * DAY));
    await regenerate();
    expect(await listed()).not.toContain(LISTED);
    expect((await purgeAccounts(s.pool, s.clock, settings))!.whitelistExpired).toBe(0);
    // Past its days: the regeneration itself ends the entry (no wait for the hourly purge).
    s.clock.set(new Date(Date.now() + 11 * DAY));
    await regenerate();
    expect(await listed()).toContain(LISTED);
    expect((await s.pool.query('select count(*)::int as n from whitelist')).rows[0].n).toBe(0);
    expect((await purgeAccounts(s.pool, s.clock, settings))!.whitelistExpired).toBe(0);
  });
});

describe('a rejection', () => {
  it('is mailed with its note, and the address may not ask again for 7 days', async () => {
    const email = 'owner@rejected.example.org';
    const made = await ask({ ip: REJECTED, email, reason: 'Please remove.' }, '198.51.100.10');
    expect(made.status).toBe(202);
    const id = made.body.data.id;
    await show(id, tokenOf(await linkFromMail(smtp, email, `/delist/${id}`)));

    expect((await trs('delist', 'reject', id)).code).not.toBe(0); // --note is required
    const rejected = await trs('delist', 'reject', id, '--note', 'Still sending spam on 2026-06-14.', '--json');
    expect(rejected.code).toBe(0);
    expect(JSON.parse(rejected.out)).toMatchObject({ id, status: 'rejected', note: 'Still sending spam on 2026-06-14.', decidedBy: 'cli' });
    await eventually(() => mailsTo(email).some((m) => m.mail.subject === `Delisting request for ${REJECTED}: rejected`));
    expect(await auditKinds(id)).toEqual(['delist_requested', 'delist_mailed', 'delist_confirmed', 'delist_rejected']);
    // A decided request cannot be decided again.
    const again = await trs('delist', 'approve', id);
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/is rejected: only open requests can be approved/);

    const decidedAt = new Date(JSON.parse(rejected.out).decidedAt).getTime();
    s.clock.set(new Date(decidedAt + 6 * DAY));
    const refused = await ask({ ip: REJECTED, email, reason: 'Please remove, again.' }, '198.51.100.11');
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('delist_recently_rejected');
    expect(Number(refused.headers.get('retry-after'))).toBe(DAY / 1000);
    // Nor through a range around it.
    const around = await ask({ ip: '45.155.205.0/24', email, reason: 'The whole network.' }, '198.51.100.13');
    expect(around.status).toBe(429);
    expect(around.body.code).toBe('delist_recently_rejected');
    s.clock.set(new Date(decidedAt + 7 * DAY + 1_000));
    expect((await ask({ ip: REJECTED, email, reason: 'Please remove, again.' }, '198.51.100.12')).status).toBe(202);
  });
});

describe('one open request per address', () => {
  it('makes one request of many sent at once, and refuses the others with 422', async () => {
    const ip = '45.155.207.33';
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => ask({ ip, email: `racer${i}@example.org`, reason: 'Parallel.' }, `198.51.100.${30 + i}`)),
    );
    expect(answers.filter((a) => a.status === 202)).toHaveLength(1);
    const refused = answers.filter((a) => a.status !== 202);
    expect(refused.map((a) => a.status)).toEqual(Array(11).fill(422));
    expect(refused.every((a) => a.body.code === 'delist_request_open')).toBe(true);
    const { rows } = await s.pool.query("select count(*)::int as n from delist_requests where ip = $1::cidr and status in ('unconfirmed', 'open')", [ip]);
    expect(rows[0].n).toBe(1);
  });
});

describe('the proof', () => {
  it('is not given to a request for an address the requester does not hold, and the answer says so', async () => {
    const res = await ask({ ip: '45.155.208.1', email: 'someone@example.org', reason: 'Not mine.' }, '198.51.100.50');
    expect(res.status).toBe(202);
    expect(res.body.data.proven).toBe(false);
    expect(res.body.data.message).toMatch(/was not made from 45\.155\.208\.1 .*so it is not proven/);
  });

  it('is given from the same IPv6 /64, not from a neighbouring /64', async () => {
    const same = await ask({ ip: '2a0d:5600:30::5', email: 'v6@example.org', reason: 'Our host.' }, '2a0d:5600:30:0:abcd::1');
    expect(same.status).toBe(202);
    expect(same.body.data.proven).toBe(true);
    const other = await ask({ ip: '2a0d:5600:31::5', email: 'v6@example.org', reason: 'Our host.' }, '2a0d:5600:31:1::1');
    expect(other.status).toBe(202);
    expect(other.body.data.proven).toBe(false);
  });

  it('is given for a range the caller lies in', async () => {
    const res = await ask({ ip: '45.155.209.0/24', email: 'range@example.org', reason: 'Our network.' }, '45.155.209.77');
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ ip: '45.155.209.0/24', proven: true });
  });

  it('lists proven requests first', async () => {
    const list = JSON.parse((await trs('delist', 'list', '--status', 'unconfirmed', '--json')).out) as { proven: boolean }[];
    expect(list.length).toBeGreaterThan(3);
    const firstUnproven = list.findIndex((r) => !r.proven);
    expect(list.slice(firstUnproven).every((r) => !r.proven)).toBe(true);
    expect(firstUnproven).toBeGreaterThan(0);
  });
});

describe('bad input', () => {
  const good = { ip: '45.155.210.1', email: 'bad@example.org', reason: 'Fine.' };
  it.each([
    ['no email', { ip: good.ip, reason: good.reason }],
    ['not an address', { ...good, ip: 'not-an-ip' }],
    ['an address with a zone', { ...good, ip: 'fe80::1%eth0' }],
    ['a reason too long', { ...good, reason: 'x'.repeat(1001) }],
    ['an empty reason', { ...good, reason: '' }],
    ['an e-mail with a line break', { ...good, email: 'bad@example.org\r\nBcc: many@example.org' }],
    ['not an e-mail', { ...good, email: 'nobody' }],
    ['an unknown field', { ...good, extra: 1 }],
    ['a range wider than a /24', { ...good, ip: '45.155.0.0/16' }],
    ['a reason with control characters', { ...good, reason: 'a\u0000b' }],
  ])('refuses %s with 400', async (_name, body) => {
    const res = await ask(body, '198.51.100.60');
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid_request');
  });

  it('refuses addresses that are never listed with 422, as /report does', async () => {
    for (const ip of ['10.0.0.1', '127.0.0.1', '2001:db8::1', '192.168.1.0/24']) {
      const res = await ask({ ...good, ip }, '198.51.100.61');
      expect(res.status).toBe(422);
      expect(res.body.code).toBe('address_not_reportable');
    }
  });
});

describe('the status link', () => {
  it('answers a wrong token or id with 404, alike, and a malformed token with 400', async () => {
    const made = await ask({ ip: '45.155.211.1', email: 'token@example.org', reason: 'Token test.' }, '198.51.100.70');
    const id = made.body.data.id;
    const token = tokenOf(await linkFromMail(smtp, 'token@example.org', `/delist/${id}`));
    const wrong = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    const byToken = await show(id, wrong);
    const byId = await show('0d7c5f3e-8a41-4c0e-9a51-3f1b2c7d9e10', token);
    expect(byToken.status).toBe(404);
    expect(byToken.body).toEqual(byId.body);
    expect((await show(id, 'short')).status).toBe(400);
    expect((await show('not-a-uuid', token)).status).toBe(400);
    // A wrong token confirmed nothing; the right one does.
    const { rows } = await s.pool.query('select status from delist_requests where id = $1', [id]);
    expect(rows[0].status).toBe('unconfirmed');
    expect((await show(id, token)).body.data.status).toBe('open');
  });
});

describe('the /delist pages', () => {
  it('take a request from a form (CSRF-checked), confirm it by the mailed link, and the operator decides on the dashboard', async () => {
    const browser = new WebClient(s.origin, { 'X-Forwarded-For': '45.155.215.9' });
    const form = await browser.get('/delist');
    expect(form.status).toBe(200);
    expect(heading(form)).toBe('Ask for an address to be delisted');
    const fields = { ip: '45.155.215.9', email: 'page@example.org', reason: 'From the page.\r\nTwo lines.' };
    expect((await browser.post('/delist', fields, { csrf: null })).status).toBe(403);
    const sent = await browser.post('/delist', fields);
    expect(sent.status).toBe(202);
    expect(sent.text).toContain('marked as proven');
    const id = /Request ([0-9a-f-]{36})/.exec(sent.text)![1]!;

    // Bad input comes back as the form with the error and what was typed.
    const bad = await browser.post('/delist', { ...fields, ip: '10.0.0.1' });
    expect(bad.status).toBe(422);
    expect(bad.text).toContain('is never listed');
    expect(bad.text).toContain('value="page@example.org"');

    const link = new URL(await linkFromMail(smtp, 'page@example.org', `/delist/${id}`));
    const status = await browser.get(link.pathname + link.search);
    expect(status.status).toBe(200);
    expect(status.text).toContain('Confirmed; waiting for the operator to decide.');
    expect((await browser.get(`/delist/${id}?token=${'A'.repeat(43)}`)).status).toBe(404);

    // Only the operator's accounts review.
    const someone = await signedUp(s, smtp, 'someone@example.org');
    expect((await someone.get('/account/delisting')).status).toBe(403);
    expect((await someone.get('/account')).text).not.toContain('href="/account/delisting"');
    const operator = await signedUp(s, smtp, OPERATOR);
    expect((await operator.get('/account')).text).toContain('href="/account/delisting"');
    const witness = (await s.createKey('enterprise')).key;
    const evidence = 'GET /wp-login.php?log=admin 401 from 45.155.215.9';
    expect((await call(s.origin, '/api/v2/report', { key: witness, json: { ip: '45.155.215.9', categories: [21], evidence } })).status).toBe(200);
    const review = await operator.get('/account/delisting?status=open');
    expect(review.status).toBe(200);
    expect(review.text).toContain('45.155.215.9');
    expect(review.text).toContain('Evidence: 1 report(s)');
    expect(review.text).toContain('GET /wp-login.php?log=admin 401 from 45.155.215.9');
    expect(review.text).toContain('From the page.\nTwo lines.');
    expect((await operator.post(`/account/delisting/${id}/approve`, { days: '3', note: '' }, { csrf: null })).status).toBe(403);
    const approved = await operator.post(`/account/delisting/${id}/approve`, { days: '3', note: 'ok' });
    expect(approved.status).toBe(303);
    const { rows } = await s.pool.query<{ status: string; decided_by: string }>('select status, decided_by from delist_requests where id = $1', [id]);
    expect(rows[0]).toEqual({ status: 'approved', decided_by: expect.stringMatching(/^account:\d+$/) });
    const { rows: audit } = await s.pool.query("select actor, account_id is not null as by_account from audit_events where kind = 'delist_approved' and detail->>'request' = $1", [id]);
    expect(audit).toEqual([{ actor: 'web', by_account: true }]);
    const again = await operator.post(`/account/delisting/${id}/approve`, { days: '3', note: 'ok' });
    expect(again.status).toBe(422);
  });
});
