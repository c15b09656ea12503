import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Role } from '../../src/roles.js';
import { call, rateLimitedBody, type CallResult } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** Quotas, metering and rate-limit headers, as "Limits" in the specification says. */
let s: TestServer; // trusts X-Forwarded-For from loopback, so each test can be its own source
let plain: TestServer; // trusts no proxy
beforeAll(async () => {
  s = await startTestServer({ config: { trustProxy: ['loopback'] } });
  plain = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
  plain.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await Promise.all([s?.close(), plain?.close()]);
});

let nextSource = 1;
/** A fresh public source address for one test. */
const source = () => `198.18.${Math.floor(nextSource / 250)}.${(nextSource++ % 250) + 1}`;

const api = (path: string, o: Parameters<typeof call>[2] & { from?: string } = {}, server = s) =>
  call(server.origin, `/api/v2${path}`, {
    ...o,
    headers: { ...o.headers, ...(o.from ? { 'X-Forwarded-For': o.from } : {}) },
  });

async function counter(subject: string, counterName: string, server = s): Promise<number> {
  const { rows } = await server.pool.query<{ used: number }>(
    'select coalesce(sum(used), 0)::int as used from usage_counters where subject = $1 and counter = $2',
    [subject, counterName],
  );
  return rows[0]!.used;
}

async function newKey(role: Role, server = s) {
  return server.createKey(role, role === 'business' ? { licences: 2 } : {});
}

function rateHeaders(res: CallResult) {
  return {
    limit: Number(res.headers.get('x-ratelimit-limit')),
    remaining: Number(res.headers.get('x-ratelimit-remaining')),
    reset: Number(res.headers.get('x-ratelimit-reset')),
  };
}

describe('metering: each operation charges exactly its counter', () => {
  it('charges as the table "What is metered" says', async () => {
    const pro = await newKey('professional');
    const ent = await newKey('enterprise');
    const account = (k: { accountId: number }) => `a:${k.accountId}`;
    type Answer = { status: number; code?: string };
    const cases: { name: string; run: () => Promise<CallResult>; key?: { accountId: number }; check: number; report: number; publicCost: number; answer: Answer }[] = [];
    const ip = source();
    // Each case answers exactly as documented: 200, or the error's status and its `code` (ErrorEnvelope).
    const add = (
      name: string,
      run: () => Promise<CallResult>,
      key: { accountId: number } | undefined,
      check: number,
      report: number,
      publicCost: number,
      answer: Answer = { status: 200 },
    ) => cases.push({ name, run, key, check, report, publicCost, answer });
    add('check', () => api('/check?ip=8.8.8.8', { key: pro.key }), pro, 1, 0, 0);
    add('check-public with key', () => api('/check-public?ip=8.8.8.8', { key: pro.key, from: ip }), pro, 1, 0, 0);
    add('search-public with key', () => api('/search-public?q=8.8', { key: pro.key, from: ip }), pro, 1, 0, 0);
    add('categories with key', () => api('/categories', { key: pro.key, from: ip }), pro, 0, 0, 0);
    add('check-public without key', () => api('/check-public?ip=8.8.8.8', { from: ip }), undefined, 0, 0, 1);
    add('search-public without key', () => api('/search-public?q=8.8', { from: ip }), undefined, 0, 0, 1);
    add('categories without key', () => api('/categories', { from: ip }), undefined, 0, 0, 1);
    add('bulk-check of 3 valid and 1 invalid', () => api('/bulk-check', { key: pro.key, json: { ips: ['8.8.8.8', '1.1.1.1', '9.9.9.9', 'x'] } }), pro, 3, 0, 0);
    add('report', () => api('/report', { key: pro.key, json: { ip: '8.8.8.8', categories: [4] } }), pro, 0, 1, 0);
    add('bulk-report of 4 lines', () => api('/bulk-report', { key: ent.key, json: { csv: '8.8.8.8,4\n1.1.1.1,4\n10.0.0.1,4\n9.9.9.9,4' } }), ent, 0, 4, 0);
    add('stats-public with key', () => api('/stats-public', { key: pro.key, from: ip }), pro, 1, 0, 0);
    add('attack-map-data with key', () => api('/attack-map-data', { key: pro.key, from: ip }), pro, 1, 0, 0);
    add('stats-public without key', () => api('/stats-public', { from: ip }), undefined, 0, 0, 1);
    add('attack-map-data without key', () => api('/attack-map-data', { from: ip }), undefined, 0, 0, 1);
    add('statistics without key', () => api('/statistics', { from: ip }), undefined, 0, 0, 0);
    add('statistics with key', () => api('/statistics', { key: pro.key, from: ip }), pro, 0, 0, 0);
    add('blacklist-categories', () => api('/blacklist-categories', { from: ip }), undefined, 0, 0, 0);
    add('blacklist-stats', () => api('/blacklist-stats', { key: pro.key }), pro, 0, 0, 0);
    add('blacklist', () => api('/blacklist', { key: pro.key }), pro, 0, 0, 0);
    add('blacklist-detailed', () => api('/blacklist-detailed', { key: pro.key }), pro, 0, 0, 0);
    add('blacklist-combined', () => api('/blacklist-combined', { key: pro.key }), pro, 0, 0, 0);
    add('blacklist-export/git', () => api('/blacklist-export/git', { key: pro.key }), pro, 0, 0, 0);
    add('trends', () => api('/trends', { key: pro.key }), pro, 0, 0, 0);
    add('verify-key', () => api('/verify-key', { key: pro.key }), pro, 0, 0, 0);
    add('reports/{ip}', () => api('/reports/8.8.8.8', { key: pro.key }), pro, 0, 0, 0);
    add('a 422 report', () => api('/report', { key: pro.key, json: { ip: '10.0.0.1', categories: [4] } }), pro, 0, 0, 0, { status: 422, code: 'address_not_reportable' });
    add('a 400 check', () => api('/check?ip=nope', { key: pro.key }), pro, 0, 0, 0, { status: 400, code: 'invalid_request' });
    add('a 403 bulk-report', () => api('/bulk-report', { key: pro.key, json: { csv: '8.8.8.8,4' } }), pro, 0, 0, 0, { status: 403, code: 'tier_forbidden' });
    add('a 401 check-public', () => api('/check-public?ip=8.8.8.8', { key: 'trs_' + 'Q'.repeat(43), from: ip }), undefined, 0, 0, 0, { status: 401, code: 'invalid_api_key' });
    add('a 400 public call', () => api('/check-public?ip=nope', { from: ip }), undefined, 0, 0, 0, { status: 400, code: 'invalid_request' });

    for (const c of cases) {
      const subject = c.key ? `a:${c.key.accountId}` : undefined;
      const before = {
        check: subject ? await counter(subject, 'check') : 0,
        report: subject ? await counter(subject, 'report') : 0,
        public: await counter(`ip:${ip}`, 'public'),
        proCheck: await counter(account(pro), 'check'),
      };
      const res = await c.run();
      expect({ name: c.name, status: res.status, code: res.status >= 400 ? res.body?.code : undefined }).toEqual({ name: c.name, ...c.answer });
      const after = {
        check: subject ? await counter(subject, 'check') : 0,
        report: subject ? await counter(subject, 'report') : 0,
        public: await counter(`ip:${ip}`, 'public'),
      };
      expect({ name: c.name, check: after.check - before.check, report: after.report - before.report, public: after.public - before.public }).toEqual({
        name: c.name,
        check: c.check,
        report: c.report,
        public: c.publicCost,
      });
    }
    const usage = (await api('/verify-key', { key: pro.key })).body.data.usage;
    expect(usage).toEqual({ checksToday: await counter(account(pro), 'check'), reportsToday: await counter(account(pro), 'report') });
  });
});

describe('daily quotas', () => {
  // 1,000 checks and 50 reports: 10-15 s alone, more beside two other files on two cores.
  it('gives a Free key 1,000 checks, then 429 with Retry-After; its reports stop at 50', { timeout: 120_000 }, async () => {
    const free = await newKey('free');
    for (let batch = 0; batch < 10; batch++) {
      const results = await Promise.all(Array.from({ length: 100 }, () => api('/check?ip=8.8.8.8', { key: free.key })));
      expect(results.every((r) => r.status === 200)).toBe(true);
    }
    const refused = await api('/check?ip=8.8.8.8', { key: free.key });
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual(rateLimitedBody(refused));
    expect(refused.body.data.retryAfter).toBe(12 * 3600); // 12:00 UTC -> next midnight
    expect(rateHeaders(refused)).toMatchObject({ limit: 1000, remaining: 0 });
    expect(await counter(`a:${free.accountId}`, 'check')).toBe(1000);

    for (let i = 0; i < 50; i++) {
      expect((await api('/report', { key: free.key, json: { ip: '8.8.8.8', categories: [4] } })).status).toBe(200);
    }
    const report51 = await api('/report', { key: free.key, json: { ip: '8.8.8.8', categories: [4] } });
    expect(report51.status).toBe(429);
    expect(report51.body.data.retryAfter).toBe(Number(report51.headers.get('retry-after')));
  });

  it('multiplies business quotas by licences and reports unlimited as -1', async () => {
    const business = await s.createKey('business', { licences: 5 });
    const res = await api('/check?ip=8.8.8.8', { key: business.key });
    expect(rateHeaders(res)).toMatchObject({ limit: 500_000, remaining: 499_999 });
    const honeypot = await newKey('honeypot');
    const unlimited = await api('/check?ip=8.8.8.8', { key: honeypot.key });
    expect(rateHeaders(unlimited)).toMatchObject({ limit: -1, remaining: -1 });
    expect(unlimited.headers.get('ratelimit-policy')).toBeNull();
    expect(await counter(`a:${honeypot.accountId}`, 'check')).toBe(1); // still counted for usage
  });

  it('refuses a bulk request that does not fit whole, charging nothing, then admits one that fits', async () => {
    const pro = await newKey('professional');
    await s.pool.query(`insert into usage_counters values ($1, 'check', '2026-06-15', 24995)`, [`a:${pro.accountId}`]);
    const ips = Array.from({ length: 6 }, (_, i) => `8.8.8.${i + 1}`);
    const tooMany = await api('/bulk-check', { key: pro.key, json: { ips } });
    expect(tooMany.status).toBe(429);
    expect(await counter(`a:${pro.accountId}`, 'check')).toBe(24_995);
    const fits = await api('/bulk-check', { key: pro.key, json: { ips: ips.slice(0, 5) } });
    expect(fits.status).toBe(200);
    expect(rateHeaders(fits)).toMatchObject({ limit: 25_000, remaining: 0 });
    expect(await counter(`a:${pro.accountId}`, 'check')).toBe(25_000);
  });
});

describe('charges of one counter grouped while one is in flight', () => {
  it('admits exactly what fits of 120 concurrent checks, in fewer statements than requests, each answered with its own counter', async () => {
    const pro = await newKey('professional');
    await s.pool.query(`insert into usage_counters values ($1, 'check', '2026-06-15', $2)`, [`a:${pro.accountId}`, 25_000 - 45]);
    // Each address reported a different number of times, so that an answer given another's row shows.
    const ipOf = (i: number) => `8.8.${i % 3}.${i + 1}`;
    await s.pool.query(
      `insert into ip_stats (ip, total_reports, report_rows, unique_reporters, honeypot_reports, first_reported_at, last_reported_at, categories, max_severity, decay_sum)
       select ip, n, 1, 1, 0, now(), now(), '{}', 0, 1 from unnest($1::text[], $2::int[]) as v(ip, n)`,
      [Array.from({ length: 120 }, (_, i) => ipOf(i)), Array.from({ length: 120 }, (_, i) => i + 1)],
    );
    const spy = vi.spyOn(s.pool, 'query');
    const results = await Promise.all(Array.from({ length: 120 }, (_, i) => api(`/check?ip=${ipOf(i)}`, { key: pro.key })));
    const alone = spy.mock.calls.filter(([q]) => JSON.stringify(q).includes('insert into usage_counters')).length;
    spy.mockRestore();
    const admitted = results.filter((r) => r.status === 200);
    expect(admitted).toHaveLength(45);
    expect(results.filter((r) => r.status === 429)).toHaveLength(75);
    expect(await counter(`a:${pro.accountId}`, 'check')).toBe(25_000);
    // Those that waited for a charge in flight were charged together (Meter.chargeGroup), not one statement each.
    expect(alone).toBeLessThan(120);
    // Each admitted answer shows the counter after its own charge: 45 distinct remainders, 44 down to 0.
    expect(admitted.map((r) => rateHeaders(r).remaining).sort((a, b) => a - b)).toEqual(Array.from({ length: 45 }, (_, i) => i));
    // Each admitted answer is about its own address, read from its own row (the group's reads go
    // as one statement: Meter.chargeGroup, readTogether).
    results.forEach((r, i) => {
      if (r.status !== 200) return;
      expect(r.body.data.ip).toBe(ipOf(i));
      expect(r.body.data.totalReports).toBe(i + 1);
    });
  });
});

describe('charges of one counter grouped while one is in flight, of several kinds', () => {
  it('answers every one of many concurrent /check and /bulk-check requests of one account, in any mix', async () => {
    // A group holds the reads of whatever requests of the counter waited: /check's and
    // /bulk-check's in any order. Each kind's reads go as one named statement per count; its text
    // must not depend on the order, or a connection refuses a later group's text under the name
    // it prepared for an earlier one, and the whole group answers 500.
    const ent = await newKey('enterprise');
    for (let round = 0; round < 6; round++) {
      const results = await Promise.all(
        Array.from({ length: 80 }, (_, i) =>
          (i + round) % 3 === 0
            ? api('/bulk-check', { key: ent.key, json: { ips: [`8.8.4.${i + 1}`, `8.8.5.${i + 1}`] } })
            : api(`/check?ip=8.8.${(i + round) % 4}.${i + 1}`, { key: ent.key }),
        ),
      );
      expect(results.filter((r) => r.status !== 200).map((r) => `${r.status} ${JSON.stringify(r.body).slice(0, 120)}`)).toEqual([]);
    }
  });
});

describe('exact counters across processes', () => {
  it('admits exactly L of 5L concurrent unit requests spread over two processes', async () => {
    const sibling = await s.sibling();
    try {
      const ip = source();
      const results = await Promise.all(
        Array.from({ length: 500 }, (_, i) => api('/check-public?ip=8.8.8.8', { from: ip }, i % 2 ? sibling : s)),
      );
      const admitted = results.filter((r) => r.status === 200).length;
      expect(admitted).toBe(100);
      expect(results.filter((r) => r.status === 429)).toHaveLength(400);
      expect(await counter(`ip:${ip}`, 'public')).toBe(100);
    } finally {
      await sibling.close();
    }
  });

  it('never admits more than L with mixed costs, never refuses what fits, and stores what it admitted', async () => {
    const sibling = await s.sibling();
    try {
      const pro = await newKey('professional');
      const L = 100;
      await s.pool.query(`insert into usage_counters values ($1, 'check', '2026-06-15', $2)`, [`a:${pro.accountId}`, 25_000 - L]);
      const requests = Array.from({ length: 5 * L }, (_, i) => {
        const cost = [1, 1, 2, 3, 5, 8][i % 6]!;
        const ips = Array.from({ length: cost }, (_, j) => `8.8.${j}.${(i % 250) + 1}`);
        const server = i % 2 ? sibling : s;
        return { cost, run: () => (cost === 1 ? api('/check?ip=8.8.8.8', { key: pro.key }, server) : api('/bulk-check', { key: pro.key, json: { ips } }, server)) };
      });
      const results = await Promise.all(requests.map(async (r) => ({ cost: r.cost, status: (await r.run()).status })));
      const admittedUnits = results.filter((r) => r.status === 200).reduce((sum, r) => sum + r.cost, 0);
      expect(results.filter((r) => r.status !== 200 && r.status !== 429).map((r) => r.status)).toEqual([]);
      expect(admittedUnits).toBeLessThanOrEqual(L);
      const stored = await counter(`a:${pro.accountId}`, 'check');
      expect(stored).toBe(25_000 - L + admittedUnits);
      const remaining = 25_000 - stored;
      for (const refused of results.filter((r) => r.status === 429)) expect(refused.cost).toBeGreaterThan(remaining);
    } finally {
      await sibling.close();
    }
  });
});

describe('the per-IP public allowance', () => {
  it('is kept per source address and shared by all unauthenticated calls', async () => {
    const [a, b] = [source(), source()];
    await api('/check-public?ip=8.8.8.8', { from: a });
    await api('/categories', { from: a });
    const res = await api('/search-public?q=8.8', { from: a });
    expect(rateHeaders(res)).toMatchObject({ limit: 100, remaining: 97 });
    expect(rateHeaders(await api('/categories', { from: b }))).toMatchObject({ remaining: 99 });
  });

  it('counts an IPv4-mapped IPv6 address as its IPv4 address and IPv6 per /64', async () => {
    await api('/categories', { from: '::ffff:198.51.100.77' });
    expect(rateHeaders(await api('/categories', { from: '198.51.100.77' }))).toMatchObject({ remaining: 98 });
    await api('/categories', { from: '2001:db8:aa:bb::1' });
    expect(rateHeaders(await api('/categories', { from: '2001:db8:aa:bb:ffff:1:2:3' }))).toMatchObject({ remaining: 98 });
    expect(rateHeaders(await api('/categories', { from: '2001:db8:aa:bc::1' }))).toMatchObject({ remaining: 99 });
  });

  it('ignores X-Forwarded-For unless TRUST_PROXY trusts the peer', async () => {
    const first = await api('/categories', { from: '192.0.2.1' }, plain);
    const second = await api('/categories', { from: '192.0.2.2' }, plain);
    expect(rateHeaders(second).remaining).toBe(rateHeaders(first).remaining - 1);
  });

  it('refuses /statistics once the allowance is used up, without charging it', async () => {
    const ip = source();
    const before = await api('/statistics', { from: ip });
    expect(before.status).not.toBe(429);
    expect(await counter(`ip:${ip}`, 'public')).toBe(0);
    await s.pool.query(`insert into usage_counters values ($1, 'public', '2026-06-15', 100)`, [`ip:${ip}`]);
    const after = await api('/statistics', { from: ip });
    expect(after.status).toBe(429);
    expect(after.body.data.retryAfter).toBe(Number(after.headers.get('retry-after')));
    const withKey = await api('/statistics', { from: ip, key: (await newKey('free')).key });
    expect(withKey.status).toBe(200);
  });
});

describe('rate-limit headers', () => {
  it('are on every response, with the IETF draft fields beside them', async () => {
    const free = await newKey('free');
    const pro = await newKey('professional');
    const responses = [
      await api('/check?ip=8.8.8.8', { key: free.key }),
      await api('/verify-key', { key: free.key }),
      await api('/check?ip=bad', { key: free.key }),
      await api('/reports/8.8.8.8', { key: free.key }),
      await api('/nope', { key: free.key }),
      await api('/verify-key', { key: 'trs_' + 'W'.repeat(43), from: source() }),
      // operations whose handler charges, each on a path where it charges nothing
      await api('/bulk-check', { key: pro.key, json: { ips: ['not-an-address'] } }),
      await api('/report', { key: pro.key, json: { ip: '10.0.0.1', categories: [18] } }),
      await api('/whitelist', { key: pro.key, json: { ipAddress: '8.8.4.4' } }),
      await api('/whitelist', { key: pro.key, json: { ipAddress: '8.8.4.4' } }), // a repeat, not charged
      await api('/check-public?ip=8.8.8.8', { from: source() }),
    ];
    expect(responses.slice(6).map((r) => r.status)).toEqual([200, 422, 200, 200, 200]);
    for (const res of responses) {
      const h = rateHeaders(res);
      expect(h.limit, `status ${res.status}`).toBeGreaterThan(0);
      expect(h.reset).toBe(Date.parse('2026-06-16T00:00:00Z') / 1000);
      expect(res.headers.get('ratelimit-policy')).toBe(`"daily";q=${h.limit};w=86400`);
      expect(res.headers.get('ratelimit')).toBe(`"daily";r=${h.remaining};t=${12 * 3600}`);
    }
    // an uncharged operation shows the main limit: the key's check quota
    expect(rateHeaders(responses[1]!)).toMatchObject({ limit: 1000, remaining: 999 });
    expect(rateHeaders(responses[5]!)).toMatchObject({ limit: 100 });
    expect(rateHeaders(responses[6]!)).toMatchObject({ limit: 25_000, remaining: 25_000 });
    // The list's headers are read in the statement that reads its snapshot, on the 304 too.
    const list = await api('/blacklist?format=txt', { key: pro.key });
    const unchanged = await api('/blacklist?format=txt', { key: pro.key, headers: { 'If-None-Match': list.headers.get('etag')! } });
    expect([list.status, unchanged.status]).toEqual([200, 304]);
    for (const res of [list, unchanged]) expect(rateHeaders(res)).toMatchObject({ limit: 25_000, remaining: 25_000 });
    const unlimited = await api('/bulk-report', { key: (await newKey('enterprise')).key, json: { csv: 'not-an-address,18' } });
    expect(unlimited.status).toBe(200);
    expect(rateHeaders(unlimited)).toMatchObject({ limit: -1, remaining: -1 });
  });

  it('roll over at 00:00 UTC', async () => {
    const free = await newKey('free');
    s.clock.set('2026-06-15T23:59:59Z');
    const late = await api('/check?ip=8.8.8.8', { key: free.key });
    expect(rateHeaders(late)).toMatchObject({ remaining: 999, reset: Date.parse('2026-06-16T00:00:00Z') / 1000 });
    expect(late.headers.get('ratelimit')).toBe('"daily";r=999;t=1');
    s.clock.set('2026-06-16T00:00:00Z');
    const early = await api('/check?ip=8.8.8.8', { key: free.key });
    expect(rateHeaders(early)).toMatchObject({ remaining: 999, reset: Date.parse('2026-06-17T00:00:00Z') / 1000 });
    expect((await api('/verify-key', { key: free.key })).body.data.usage.checksToday).toBe(1);
    s.clock.set('2026-06-15T12:00:00Z');
  });
});
