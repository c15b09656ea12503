import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/openapi.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { expectSchema } from '../support/contract.js';
import { fail2banAbuseipdbBan, FAIL2BAN_NEEDS } from '../support/fail2ban.js';
import { call } from '../support/http.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { missingTools, requireTools } from '../support/tools.js';

/**
 * AbuseIPDB's API v2 under /abuseipdb/api/v2: AbuseIPDB's parameters, shapes, errors and
 * rate-limit headers, over this server's data and daily quotas; fail2ban's stock action.
 */
let s: TestServer;
const BASE = '/abuseipdb/api/v2';
const AUTH_FAILED = 'Authentication failed. Your API key is either missing, incorrect, or revoked. Note: The APIv2 key differs from the APIv1 key.';

const abuse = (p: string, key?: string, o: Parameters<typeof call>[2] = {}) =>
  call(s.origin, `${BASE}${p}`, { ...o, headers: { Accept: 'application/json', ...(key ? { Key: key } : {}), ...o.headers } });
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));
const regenerate = () => blacklistSnapshots(s.pool, s.clock).regenerate();


beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await s?.close();
});

describe('POST /report', () => {
  it('stores a report sent as fail2ban sends it (a form, categories separated by commas), charging one report', async () => {
    const { key } = await s.createKey('free');
    const res = await abuse('/report', key, {
      body: form({ comment: 'Nov 20 14:32:01 host sshd[1]: Failed password for root\n...', ip: '45.155.205.233', categories: '18,22' }),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ data: { ipAddress: '45.155.205.233', abuseConfidenceScore: expect.any(Number) } });
    expect(res.headers.get('x-ratelimit-limit')).toBe('50');
    expect(remaining(res)).toBe(49);
    const [stored] = (await s.pool.query("select categories, comment from reports where ip = '45.155.205.233'")).rows;
    expect(stored).toEqual({ categories: [18, 22], comment: 'Nov 20 14:32:01 host sshd[1]: Failed password for root\n...' });
  });

  it('takes JSON, categories as an array or one number, and refuses ids beyond 23 and private addresses (422)', async () => {
    const { key } = await s.createKey('free');
    expect((await abuse('/report', key, { json: { ip: '2a0d:5600:24::9', categories: [21, 16], comment: 'sqli' } })).status).toBe(200);
    expect((await abuse('/report', key, { json: { ip: '45.155.205.234', categories: 14 } })).status).toBe(200);
    for (const body of [{ ip: '45.155.205.235', categories: '24' }, { ip: '45.155.205.235', categories: [0] }, { ip: '45.155.205.235', categories: 'ssh' }, { ip: '45.155.205.235' }]) {
      const res = await abuse('/report', key, { json: body });
      expect(res.status, JSON.stringify(body)).toBe(422);
      expect(res.body.errors[0]).toMatchObject({ status: 422, source: { parameter: 'categories' } });
    }
    const internal = await abuse('/report', key, { json: { ip: '10.1.2.3', categories: '18' } });
    expect(internal.status).toBe(422);
    expect(internal.body).toEqual({ errors: [{ detail: expect.stringMatching(/private/), status: 422, source: { parameter: 'ip' } }] });
    const malformed = await abuse('/report', key, { body: '{"ip": ', headers: { 'content-type': 'application/json' } });
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0]).toMatchObject({ status: 400 });
  });

  it('runs fail2ban\'s stock abuseipdb action, as fail2ban runs it, with only the URL changed', async (t) => {
    requireTools(t, missingTools(...FAIL2BAN_NEEDS));
    const { key } = await s.createKey('free');
    const matches = [
      'Nov 20 14:32:01 web sshd[4127]: Failed password for root from 193.32.162.77 port 40122 ssh2',
      'Nov 20 14:32:05 web sshd[4127]: Invalid user "admin" $(touch /tmp/pwned) `id` from 193.32.162.77',
    ].join('\n');
    const command = await fail2banAbuseipdbBan(`${s.origin}${BASE}/report`, key, '193.32.162.77', '18,22', matches);
    expect(command).toContain(`curl -sSf "${s.origin}${BASE}/report" -H "Accept: application/json" -H "Key: ${key}"`);
    const [stored] = (await s.pool.query("select categories, comment from reports where ip = '193.32.162.77'")).rows;
    expect(stored.categories).toEqual([18, 22]);
    // The log lines arrive whole, shell characters and all, with the action's `...` after them.
    expect(stored.comment).toBe(`${matches}\n...`);
    // A wrong key: curl -f fails, and fail2ban reports the action failed.
    await expect(fail2banAbuseipdbBan(`${s.origin}${BASE}/report`, 'wrong', '193.32.162.78', '18', 'x')).rejects.toThrow();
    // contrib/fail2ban/action.d/abuseipdb.local beside the stock file does the same.
    await fail2banAbuseipdbBan(`${s.origin}${BASE}/report`, key, '193.32.162.79', '14', 'port scan', path.join(projectRoot, 'contrib/fail2ban/action.d/abuseipdb.local'));
    expect((await s.pool.query("select categories from reports where ip = '193.32.162.79'")).rows).toEqual([{ categories: [14] }]);
  }, 60_000);
});

describe('GET /check', () => {
  it('answers the fields AbuseIPDB clients read, counting the reports of the window', async () => {
    const { key } = await s.createKey('professional');
    await reportFromAccounts(s, ['185.220.101.7'], { categories: '18|22', reporters: 3 });
    s.clock.advance(40 * 86_400_000); // those are 40 days old now
    await reportFromAccounts(s, ['185.220.101.7'], { categories: '14|24', reporters: 2 });
    const res = await abuse('/check?ipAddress=185.220.101.7', key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        ipAddress: '185.220.101.7',
        isPublic: true,
        ipVersion: 4,
        isWhitelisted: false,
        abuseConfidenceScore: expect.any(Number),
        countryCode: expect.stringMatching(/^[A-Z]{2}$/),
        usageType: null,
        isp: expect.any(String),
        domain: null,
        hostnames: [],
        isTor: false,
        totalReports: 2,
        numDistinctUsers: 2,
        lastReportedAt: expect.stringMatching(/^2026-07-25T12:\d\d:\d\d\+00:00$/),
      },
    });
    expect(remaining(res)).toBe(25_000 - 1);
    const window = await abuse('/check?ipAddress=185.220.101.7&maxAgeInDays=90&verbose', key);
    expect(window.body.data).toMatchObject({ totalReports: 5, numDistinctUsers: 5, countryName: expect.any(String) });
    expect(window.body.data.reports).toHaveLength(5);
    // Category 24 (Cryptomining) has no AbuseIPDB counterpart: it is left out.
    expect(window.body.data.reports[0]).toEqual({
      reportedAt: expect.stringMatching(/\+00:00$/),
      comment: 'seed',
      categories: [14],
      reporterId: 0,
      reporterCountryCode: null,
      reporterCountryName: null,
    });
    const quiet = await abuse('/check?ipAddress=185.220.101.7&verbose=false', key);
    expect(quiet.body.data.reports).toBeUndefined();
  });

  it('checks unreported and private addresses, and refuses malformed ones in AbuseIPDB\'s shape', async () => {
    const { key } = await s.createKey('free');
    const none = await abuse('/check?ipAddress=8.8.8.8', key);
    expect(none.body.data).toMatchObject({ totalReports: 0, numDistinctUsers: 0, lastReportedAt: null, abuseConfidenceScore: 0 });
    expect((await abuse('/check?ipAddress=192.168.1.1', key)).body.data).toMatchObject({ isPublic: false, ipVersion: 4 });
    expect((await abuse(`/check?ipAddress=${encodeURIComponent('2a0d:5600:24::9')}&maxAgeInDays=365`, key)).body.data).toMatchObject({ ipVersion: 6, totalReports: 1 });
    for (const query of ['?ipAddress=1.2.3', '?ipAddress=8.8.8.8&maxAgeInDays=366', '?ipAddress=8.8.8.8&maxAgeInDays=0', '', '?ipAddress=8.8.8.8&sort=1']) {
      const res = await abuse(`/check${query}`, key);
      expect(res.status, query).toBe(422);
      expect(res.body.errors[0], query).toMatchObject({ status: 422, detail: expect.any(String), source: { parameter: expect.any(String) } });
    }
  });

  it('refuses a missing or wrong key with AbuseIPDB\'s 401, and a used-up quota with 429 and Retry-After', async () => {
    for (const key of [undefined, 'abcdef', `trs_${'Z'.repeat(43)}`]) {
      const res = await abuse('/check?ipAddress=8.8.8.8', key);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ errors: [{ detail: AUTH_FAILED, status: 401 }] });
    }
    const { key, accountId } = await s.createKey('free');
    expect((await abuse(`/check?ipAddress=8.8.8.8&key=${key}`)).status).toBe(200);
    const day = s.clock.now().toISOString().slice(0, 10);
    await s.pool.query(`update usage_counters set used = 1000 where subject = $1 and counter = 'check' and day = $2`, [`a:${accountId}`, day]);
    const refused = await abuse('/check?ipAddress=8.8.8.8', key);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(refused.body).toEqual({ errors: [{ detail: 'Daily rate limit of 1000 requests exceeded for this endpoint. See the Retry-After header for the seconds until it resets.', status: 429 }] });
  });
});

describe('GET /blacklist', () => {
  beforeAll(async () => {
    await reportFromAccounts(s, ['185.220.101.50', '2a0d:5600:24::50'], { categories: '18|22', reporters: 8 });
    await regenerate();
  });

  it('answers AbuseIPDB\'s JSON, meta first, with the same ETag rules', async () => {
    const { key } = await s.createKey('contributor');
    const res = await abuse('/blacklist?confidenceMinimum=25', key);
    expect(res.status).toBe(200);
    expectSchema('Blacklist', res.body, 'abuseipdb');
    expect(Object.keys(res.body)).toEqual(['meta', 'data']);
    expect(res.body.meta.generatedAt).toMatch(/\+00:00$/);
    expect(res.body.data.map((e: any) => e.ipAddress)).toEqual(expect.arrayContaining(['185.220.101.50', '2a0d:5600:24::50']));
    expect(res.body.data[0]).toEqual({ ipAddress: expect.any(String), countryCode: expect.anything(), abuseConfidenceScore: expect.any(Number), lastReportedAt: expect.stringMatching(/\+00:00$/) });
    const again = await abuse('/blacklist?confidenceMinimum=25', key, { headers: { 'If-None-Match': res.headers.get('etag')! } });
    expect(again.status).toBe(304);
  });

  it('answers plain text with `plaintext` or Accept: text/plain, and filters by IP version and country', async () => {
    const { key } = await s.createKey('contributor');
    const text = await abuse('/blacklist?confidenceMinimum=25&plaintext', key);
    expect(text.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(String(text.body).split('\n')).toEqual(expect.arrayContaining(['185.220.101.50', '2a0d:5600:24::50']));
    const accept = await abuse('/blacklist?confidenceMinimum=25', key, { headers: { Accept: 'text/plain' } });
    expect(accept.body).toBe(text.body);
    const v6 = await abuse('/blacklist?confidenceMinimum=25&ipVersion=6&plaintext=true', key);
    expect(String(v6.body).trim().split('\n')).toEqual(['2a0d:5600:24::50']);
    const country = (await abuse('/blacklist?confidenceMinimum=25', key)).body.data.find((e: any) => e.ipAddress === '185.220.101.50').countryCode;
    const only = await abuse(`/blacklist?confidenceMinimum=25&onlyCountries=${country.toLowerCase()},ZZ`, key);
    expect(only.body.data.every((e: any) => e.countryCode === country)).toBe(true);
    const except = await abuse(`/blacklist?confidenceMinimum=25&exceptCountries=${country}`, key);
    expect(except.body.data.some((e: any) => e.countryCode === country)).toBe(false);
    expect((await abuse('/blacklist?confidenceMinimum=20', key)).status).toBe(422);
    expect((await abuse('/blacklist', (await s.createKey('free')).key)).body).toEqual({
      errors: [{ detail: 'Your role does not have access to this endpoint.', status: 403 }],
    });
  });
});

describe('POST /bulk-report', () => {
  const upload = (key: string, csv: string) => {
    const body = new FormData();
    body.append('csv', new Blob([csv], { type: 'text/csv' }), 'report.csv');
    return fetch(`${s.origin}${BASE}/bulk-report`, { method: 'POST', headers: { Key: key, Accept: 'application/json' }, body }).then(async (r) => ({ status: r.status, headers: r.headers, body: await r.json() }));
  };

  it('stores the lines of an uploaded CSV, lists the refused ones by row, charging every line', async () => {
    const { key } = await s.createKey('enterprise');
    const csv = ['IP,Categories,ReportDate,Comment', '45.155.205.240,"18,22",2026-06-15T10:00:00Z,"ssh, again"', '45.155.205.241,15,,', '203.0.foo.7,18,,', '45.155.205.242,"18,99",,x', '10.0.0.1,18,,'].join('\r\n');
    const res = await upload(key, csv);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        savedReports: 2,
        invalidReports: [
          { error: 'Invalid IP', input: '203.0.foo.7', rowNumber: 4 },
          { error: 'Invalid Category', input: '45.155.205.242', rowNumber: 5 },
          { error: 'Invalid IP', input: '10.0.0.1', rowNumber: 6 },
        ],
      },
    });
    const [stored] = (await s.pool.query("select categories, comment from reports where ip = '45.155.205.240'")).rows;
    expect(stored).toEqual({ categories: [18, 22], comment: 'ssh, again' });
  });

  it('is for Enterprise and Honeypot keys, as POST /api/v2/bulk-report, and refuses a missing file', async () => {
    const pro = await upload((await s.createKey('professional')).key, 'IP,Categories\n45.155.205.243,18');
    expect(pro.status).toBe(403);
    const { key } = await s.createKey('enterprise');
    const none = await fetch(`${s.origin}${BASE}/bulk-report`, { method: 'POST', headers: { Key: key }, body: new FormData() });
    expect(none.status).toBe(422);
    expect(((await none.json()) as { errors: unknown[] }).errors[0]).toMatchObject({ status: 422 });
  });
});

describe('GET /check-block and DELETE /clear-address', () => {
  it('lists a network\'s reported addresses in AbuseIPDB\'s shape, charged per address', async () => {
    const { key } = await s.createKey('free');
    const res = await abuse('/check-block?network=185.220.101.0/24&maxAgeInDays=90', key);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      networkAddress: '185.220.101.0',
      netmask: '255.255.255.0',
      minAddress: '185.220.101.1',
      maxAddress: '185.220.101.254',
      numPossibleHosts: 254,
      addressSpaceDesc: 'Internet',
    });
    expect(res.body.data.reportedAddress.map((r: any) => r.ipAddress).sort()).toEqual(['185.220.101.50', '185.220.101.7']);
    expect(res.body.data.reportedAddress[0]).toEqual({ ipAddress: expect.any(String), numReports: expect.any(Number), mostRecentReport: expect.stringMatching(/\+00:00$/), abuseConfidenceScore: expect.any(Number), countryCode: expect.anything() });
    expect(remaining(res)).toBe(1000 - 2);
    s.clock.advance(2 * 86_400_000);
    const recent = await abuse('/check-block?network=185.220.101.0/24&maxAgeInDays=1', key);
    expect(recent.body.data.reportedAddress).toEqual([]);
    expect(remaining(recent)).toBe(1000 - 1); // a new day; an empty answer costs one check
    expect((await abuse('/check-block?network=185.0.0.0/8', key)).body.errors[0]).toMatchObject({ status: 422, source: { parameter: 'network' } });
  });

  it('deletes the caller\'s reports about an address and recomputes its reputation from the rest', async () => {
    const mine = await s.createKey('free');
    const theirs = await s.createKey('free');
    const ip = '193.32.162.90';
    await abuse('/report', mine.key, { json: { ip, categories: '18' } });
    s.clock.advance(10 * 60_000);
    await abuse('/report', mine.key, { json: { ip, categories: '22' } });
    await abuse('/report', theirs.key, { json: { ip, categories: '14' } });
    const cleared = await abuse(`/clear-address?ipAddress=${ip}`, mine.key, { method: 'DELETE' });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toEqual({ data: { numReportsDeleted: 2 } });
    const after = await call(s.origin, `/api/v2/check?ip=${ip}&verbose=true`, { key: theirs.key });
    expect(after.body.data).toMatchObject({ totalReports: 1, categories: [14], debugInfo: { uniqueReporters: 1, reportCount: 1 } });
    expect((await abuse(`/clear-address?ipAddress=${ip}`, theirs.key, { method: 'DELETE' })).body).toEqual({ data: { numReportsDeleted: 1 } });
    expect((await s.pool.query('select 1 from ip_stats where ip = $1', [ip])).rowCount).toBe(0);
    expect((await abuse(`/clear-address?ipAddress=${ip}`, theirs.key, { method: 'DELETE' })).body).toEqual({ data: { numReportsDeleted: 0 } });
    expect((await abuse('/clear-address?ipAddress=nope', theirs.key, { method: 'DELETE' })).status).toBe(422);
  });
});

describe('the rest of AbuseIPDB', () => {
  it('answers what it does not serve with 404 in AbuseIPDB\'s shape, and serves its document', async () => {
    const { key } = await s.createKey('free');
    const res = await abuse('/reports?ipAddress=8.8.8.8', key);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ errors: [{ detail: expect.stringMatching(/No endpoint/), status: 404 }] });
    const doc = await call(s.origin, `${BASE}/openapi.json`);
    expect(Object.keys(doc.body.paths).sort()).toEqual(['/blacklist', '/bulk-report', '/check', '/check-block', '/clear-address', '/report']);
  });
});
