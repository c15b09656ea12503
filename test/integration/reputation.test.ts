import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await s?.close();
});

const api = (path: string, options: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${path}`, options);
const report = (key: string, json: unknown) => api('/report', { key, json });

async function usage(key: string) {
  return (await api('/verify-key', { key })).body.data.usage as { checksToday: number; reportsToday: number };
}

describe('POST /report', () => {
  it('stores a report and returns it with the new score', async () => {
    const { key } = await s.createKey('free');
    const res = await report(key, { ip: '8.8.4.4', categories: [18, 22], comment: 'ssh brute force' });
    expect(res.status).toBe(200);
    expect(res.body.meta).toEqual({ success: true, code: 200, message: 'The report was recorded.' });
    expect(res.body.data).toEqual({
      reportId: expect.any(Number),
      ip: '8.8.4.4',
      categories: [18, 22],
      abuseConfidencePercentage: expect.any(Number),
      ignoredCategories: [],
      commentTruncated: false,
    });
    expect(res.body.data.abuseConfidencePercentage).toBeGreaterThan(0);
    const check = await api('/check?ip=8.8.4.4', { key });
    expect(check.body.data).toMatchObject({ ip: '8.8.4.4', totalReports: 1, categories: [18, 22], countryCode: 'US' });
    expect(check.body.data.isp).toMatch(/google/i);
  });

  it('aggregates reports of one reporter about one address within 5 minutes', async () => {
    const { key } = await s.createKey('contributor');
    const first = await report(key, { ip: '9.9.9.10', categories: [14] });
    s.clock.advance(4 * 60_000 + 59_000);
    const second = await report(key, { ip: '9.9.9.10', categories: [18] });
    expect(second.body.data.reportId).toBe(first.body.data.reportId);
    expect(second.body.data.categories).toEqual([14, 18]);
    s.clock.advance(2 * 60_000); // now 6m59s after the first report
    const third = await report(key, { ip: '9.9.9.10', categories: [14] });
    expect(third.body.data.reportId).not.toBe(first.body.data.reportId);

    const history = await api('/reports/9.9.9.10', { key: (await s.createKey('professional')).key });
    expect(history.body.data.total).toBe(2);
    expect(history.body.data.reports.map((r: any) => r.aggregationCount)).toEqual([0, 1]);
    const check = await api('/check?ip=9.9.9.10&verbose=true', { key });
    expect(check.body.data.totalReports).toBe(3); // every submission counts
    expect(check.body.data.debugInfo).toMatchObject({ reportCount: 3, uniqueReporters: 1 });
    expect(await usage(key)).toMatchObject({ reportsToday: 3 });
  });

  it('keeps reports of different reporters apart', async () => {
    const a = await s.createKey('free');
    const b = await s.createKey('free');
    const ra = await report(a.key, { ip: '9.9.9.11', categories: [14] });
    const rb = await report(b.key, { ip: '9.9.9.11', categories: [14] });
    expect(ra.body.data.reportId).not.toBe(rb.body.data.reportId);
    const check = await api('/check?ip=9.9.9.11&verbose=true', { key: a.key });
    expect(check.body.data.debugInfo.uniqueReporters).toBe(2);
  });

  it('normalises IPv6 and IPv4-mapped addresses', async () => {
    const { key } = await s.createKey('free');
    const v6 = await report(key, { ip: '2001:4860:4860:0000:0000:0000:0000:8844', categories: [4] });
    expect(v6.status).toBe(200);
    expect(v6.body.data.ip).toBe('2001:4860:4860::8844');
    const mapped = await report(key, { ip: '::ffff:8.8.8.8', categories: [4] });
    expect(mapped.body.data.ip).toBe('8.8.8.8');
    const check = await api('/check?ip=2001:4860:4860:0:0:0:0:8844', { key });
    expect(check.body.data).toMatchObject({ ip: '2001:4860:4860::8844', totalReports: 1 });
    const upper = await api('/check?ip=2001:4860:4860::8844'.toUpperCase().replace('/CHECK?IP=', '/check?ip='), { key });
    expect(upper.body.data.totalReports).toBe(1);
  });

  it.each([
    ['a private address', { ip: '10.1.2.3', categories: [14] }, 'ip', /private/],
    ['a loopback address', { ip: '127.0.0.1', categories: [14] }, 'ip', /loopback/],
    ['a link-local address', { ip: '169.254.10.1', categories: [14] }, 'ip', /link-local/],
    ['a multicast address', { ip: '224.0.0.5', categories: [14] }, 'ip', /multicast/],
    ['a documentation address', { ip: '203.0.113.7', categories: [14] }, 'ip', /documentation/],
    ['an IPv6 documentation address', { ip: '2001:db8::1', categories: [14] }, 'ip', /documentation/],
    ['an IPv6 unique local address', { ip: 'fd12:3456::1', categories: [14] }, 'ip', /unique local/],
    ['an IPv6 loopback', { ip: '::1', categories: [14] }, 'ip', /loopback/],
    ['only unknown categories', { ip: '9.9.9.12', categories: [99, 100] }, 'categories', /no category id of the report is in the catalogue \(unknown: 99, 100/],
    ['only unknown categories as a string', { ip: '9.9.9.12', categories: '99' }, 'categories', /unknown: 99;/],
  ])('refuses %s with 422 and charges nothing', async (_name, body, field, message) => {
    const { key } = await s.createKey('free');
    const res = await report(key, body);
    expect(res.status).toBe(422);
    expect(res.body.meta).toMatchObject({ success: false, code: 422 });
    expect(res.body.meta.message).toMatch(message);
    expect(res.body.meta.errors).toEqual([{ location: 'body', name: field, message: expect.stringMatching(message) }]);
    expect(res.body.data).toBeNull();
    expect(res.body.code).toBe(field === 'ip' ? 'address_not_reportable' : 'unknown_category');
    expect(await usage(key)).toEqual({ checksToday: 0, reportsToday: 0 });
  });

  it('stores a report with its known categories and names the ids it ignored', async () => {
    const { key } = await s.createKey('free');
    const res = await report(key, { ip: '9.9.9.14', categories: [14, 99, 14, 1000] });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ip: '9.9.9.14', categories: [14], ignoredCategories: [99, 1000], commentTruncated: false });
    expect(await usage(key)).toEqual({ checksToday: 0, reportsToday: 1 });
  });

  it('takes categories as an array, a comma-separated string or a single id', async () => {
    const { key } = await s.createKey('free');
    for (const [ip, categories] of [['9.9.9.21', [18, 21]], ['9.9.9.22', '18,21'], ['9.9.9.23', ' 21 , 18 '], ['9.9.9.24', 18], ['9.9.9.25', '18']] as const) {
      const res = await report(key, { ip, categories });
      expect(res.status, JSON.stringify(categories)).toBe(200);
      expect(res.body.data.categories).toEqual(Array.isArray(categories) || String(categories).includes(',') ? [18, 21] : [18]);
    }
  });

  it('shortens a comment over 1,024 characters instead of refusing the report', async () => {
    const { key } = await s.createKey('professional');
    const res = await report(key, { ip: '9.9.9.15', categories: [14], comment: 'x'.repeat(5000) });
    expect(res.status).toBe(200);
    expect(res.body.data.commentTruncated).toBe(true);
    const history = await api('/reports/9.9.9.15', { key });
    expect(history.body.data.reports[0].comment).toBe('x'.repeat(1023) + '…');
  });

  it('refuses bad input with 400 naming the field', async () => {
    const { key } = await s.createKey('free');
    for (const body of [
      { ip: 'nope', categories: [1] },
      { ip: '9.9.9.9' },
      { ip: '9.9.9.9', categories: ['x'] },
      { ip: '9.9.9.9', categories: [] },
      { ip: '9.9.9.9', categories: '18;21' },
      { ip: '9.9.9.9', categories: 'eighteen' },
      { ip: '9.9.9.9', categories: [1], extra: 1 },
    ]) {
      const res = await report(key, body);
      expect(res.status).toBe(400);
      expect(res.body.meta.errors.length).toBeGreaterThan(0);
    }
    expect(await usage(key)).toEqual({ checksToday: 0, reportsToday: 0 });
  });

  it('strips control characters from comments, counting what remains', async () => {
    const { key } = await s.createKey('professional');
    const comment = 'bad\u0000 bot\u0007\u001b[31m red\u009b\nline two\ttab';
    const res = await report(key, { ip: '9.9.9.13', categories: [19], comment: comment + '\u0001'.repeat(50) + 'y'.repeat(960) });
    expect(res.status).toBe(200);
    const history = await api('/reports/9.9.9.13', { key });
    expect(history.body.data.reports[0].comment).toBe('bad bot[31m red\nline two\ttab' + 'y'.repeat(960));
  });
});

describe('POST /bulk-report', () => {
  it('stores valid lines, lists refused ones with their line, and charges every submitted line', async () => {
    const { key } = await s.createKey('enterprise');
    const csv = [
      'IP,Categories,Comment',
      '8.8.8.9,18|22,"ssh, then web"',
      '10.0.0.1,18,private',
      '',
      '1.1.1.2,99,unknown category',
      'not-an-ip,4,',
      '1.1.1.3,4',
      '1.1.1.4,"broken,4',
      '1.1.1.5,x|y,bad ids',
      '1.1.1.6,4,too,many,columns',
      '2606:4700:4700::1111,4|14,"quoted ""comment"""',
    ].join('\r\n');
    const res = await api('/bulk-report', { key, json: { csv } });
    expect(res.status).toBe(200);
    expect(res.body.meta.message).toBe('The bulk report was processed.');
    expect(res.body.data.success_count).toBe(3);
    expect(res.body.data.error_count).toBe(6);
    expect(res.body.data.errors.map((e: any) => e.line)).toEqual([3, 5, 6, 8, 9, 10]);
    expect(res.body.data.errors[0]).toEqual({ line: 3, input: '10.0.0.1,18,private', error: expect.stringMatching(/private/) });
    expect(await usage(key)).toMatchObject({ reportsToday: 9 });
    const history = await api('/reports/2606:4700:4700::1111', { key });
    expect(history.body.data.reports[0]).toMatchObject({ categories: [4, 14], comment: 'quoted "comment"' });
    const check = await api('/check?ip=8.8.8.9', { key });
    expect(check.body.data.categories).toEqual([18, 22]);
  });

  it('refuses more than 10,000 lines with 413 and charges nothing', async () => {
    const { key } = await s.createKey('enterprise');
    const csv = Array.from({ length: 10_001 }, (_, i) => `9.${Math.floor(i / 256) % 256}.${i % 256}.1,4`).join('\n');
    const res = await api('/bulk-report', { key, json: { csv } });
    expect(res.status).toBe(413);
    expect(res.body.meta.code).toBe(413);
    expect(await usage(key)).toMatchObject({ reportsToday: 0 });
  });

  it('takes two full bulk reports at once: each stores all 10,000 lines', async () => {
    // Addresses in Japan, out of the way of the searches by country below. With a lock per
    // (reporter, address) pair, two of them needed 20,000 entries of
    // PostgreSQL's shared lock table (6,400 by default) and both answered 503.
    const [a, b] = [await s.createKey('enterprise'), await s.createKey('enterprise')];
    const csv = (n: number) => Array.from({ length: 10_000 }, (_, i) => `${n}.${Math.floor(i / 256) % 256}.${i % 256}.1,4`).join('\n');
    const answers = await Promise.all([api('/bulk-report', { key: a.key, json: { csv: csv(133) } }), api('/bulk-report', { key: b.key, json: { csv: csv(126) } })]);
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ success_count: 10_000, error_count: 0 });
    }
    const { rows } = await s.pool.query<{ n: number }>("select count(*)::int as n from reports where account_id = any($1::int[])", [[a.accountId, b.accountId]]);
    expect(rows[0]!.n).toBe(20_000);
  }, 120_000);

  it('is refused to roles below enterprise', async () => {
    const { key } = await s.createKey('business', { licences: 2 });
    const res = await api('/bulk-report', { key, json: { csv: '8.8.8.8,4' } });
    expect(res.status).toBe(403);
  });
});

describe('POST /bulk-check', () => {
  it('answers the five fields per address in one lookup query and charges the valid ones', async () => {
    const { key } = await s.createKey('professional');
    await report(key, { ip: '8.8.8.20', categories: [14] });
    const ips = Array.from({ length: 997 }, (_, i) => `11.0.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    ips.push('8.8.8.20', 'garbage', '::ffff:11.0.0.1');
    const spy = vi.spyOn(s.pool, 'query');
    const res = await api('/bulk-check', { key, json: { ips } });
    const lookups = spy.mock.calls.filter(([q]) => JSON.stringify(q).includes('ip_stats'));
    spy.mockRestore();
    expect(res.status).toBe(200);
    expect(lookups).toHaveLength(1);
    expect(res.body.data.checked).toBe(998); // 997 + 8.8.8.20; the mapped address repeats 11.0.0.1
    expect(res.body.data.invalid).toEqual([{ ip: 'garbage', error: expect.any(String) }]);
    expect(res.body.data.results[0]).toEqual({
      ip: '11.0.0.1',
      abuseConfidencePercentage: 0,
      totalReports: 0,
      lastReportedAt: null,
      categories: [],
    });
    const known = res.body.data.results.find((r: any) => r.ip === '8.8.8.20');
    expect(Object.keys(known).sort()).toEqual(['abuseConfidencePercentage', 'categories', 'ip', 'lastReportedAt', 'totalReports']);
    expect(known.totalReports).toBe(1);
    const single = (await api('/check?ip=8.8.8.20', { key })).body.data;
    expect(known).toEqual({ ip: '8.8.8.20', abuseConfidencePercentage: single.abuseConfidencePercentage, totalReports: 1, lastReportedAt: single.lastReportedAt, categories: [14] });
    expect(res.body.data.results.map((r: any) => r.ip)).toEqual([...ips.slice(0, 997), '8.8.8.20']); // the order of the request
    expect(await usage(key)).toMatchObject({ checksToday: 999 }); // and the single check
  });

  it("charges and reads in one round trip: one statement holds bulk-check's charge and its lookup, as /check's", async () => {
    const { key } = await s.createKey('professional');
    await report(key, { ip: '8.8.8.21', categories: [14] });
    const metered = async (send: () => Promise<{ status: number }>) => {
      const spy = vi.spyOn(s.pool, 'query');
      const res = await send();
      const texts = spy.mock.calls.map(([q]) => JSON.stringify(q)).filter((q) => q.includes('usage_counters') || q.includes('ip_stats'));
      spy.mockRestore();
      expect(res.status).toBe(200);
      return texts;
    };
    for (const texts of [
      await metered(() => api('/bulk-check', { key, json: { ips: ['8.8.8.21', '11.0.9.1'] } })),
      await metered(() => api('/check?ip=8.8.8.21', { key })),
    ]) {
      expect(texts).toHaveLength(1);
      expect(texts[0]).toContain('insert into usage_counters');
      expect(texts[0]).toContain('ip_stats');
    }
    expect(await usage(key)).toMatchObject({ checksToday: 3 });
  });

  it('refuses more than 1,000 addresses with 400', async () => {
    const { key } = await s.createKey('professional');
    const res = await api('/bulk-check', { key, json: { ips: Array.from({ length: 1001 }, () => '8.8.8.8') } });
    expect(res.status).toBe(400);
    expect(res.body.meta.errors[0]).toMatchObject({ location: 'body', name: 'ips' });
  });
});

describe('GET /check and /check-public', () => {
  it('adds the breakdown with verbose and the reports with include_reports', async () => {
    const { key } = await s.createKey('professional');
    await report(key, { ip: '8.8.8.30', categories: [15], comment: 'probe' });
    const plain = await api('/check?ip=8.8.8.30', { key });
    expect(plain.body.data.confidenceBreakdown).toBeUndefined();
    expect(plain.body.data.isWhitelisted).toBe(false);
    const full = await api('/check?ip=8.8.8.30&verbose=true&include_reports=true', { key });
    expect(full.body.data.confidenceBreakdown).toMatchObject({
      maxConfidence: 60,
      constraintReasons: [{ code: 'single_reporter', cap: 60, message: expect.any(String) }],
    });
    expect(full.body.data.debugInfo).toMatchObject({ reportCount: 1, uniqueReporters: 1, honeypotReportsCount: 0, effectiveReportCount: 1 });
    expect(full.body.data.reports).toEqual([expect.objectContaining({ categories: [15], comment: 'probe', reporterRole: 'professional' })]);
    const pub = await api('/check-public?ip=8.8.8.30&verbose=true');
    expect(pub.body.data.confidenceBreakdown).toBeDefined();
    expect(pub.body.data.debugInfo).toBeUndefined();
    expect(pub.body.data.isWhitelisted).toBeUndefined();
  });

  it('answers an unreported address with zeros and its geolocation', async () => {
    const res = await api('/check-public?ip=1.0.0.1');
    expect(res.body.data).toEqual({
      ip: '1.0.0.1',
      abuseConfidencePercentage: 0,
      totalReports: 0,
      lastReportedAt: null,
      categories: [],
      countryCode: expect.stringMatching(/^[A-Z]{2}$/),
      isp: expect.stringMatching(/cloudflare/i),
    });
    const private_ = await api('/check-public?ip=192.168.1.1');
    expect(private_.body.data).toMatchObject({ totalReports: 0, countryCode: 'ZZ', isp: '' });
  });

  it('aggregates up to, and not at, exactly 5 minutes after the earlier report', async () => {
    const { key } = await s.createKey('contributor');
    const first = await report(key, { ip: '9.9.9.30', categories: [14] });
    s.clock.advance(5 * 60_000 - 1); // 4:59.999
    expect((await report(key, { ip: '9.9.9.30', categories: [14] })).body.data.reportId).toBe(first.body.data.reportId);
    // The window is measured from the report's own time, not from the last aggregated submission.
    s.clock.advance(1); // exactly 5:00 after the first report
    const at5 = await report(key, { ip: '9.9.9.30', categories: [14] });
    expect(at5.body.data.reportId).not.toBe(first.body.data.reportId);
    s.clock.advance(5 * 60_000 - 1);
    expect((await report(key, { ip: '9.9.9.30', categories: [14] })).body.data.reportId).toBe(at5.body.data.reportId);
  });

  it('scores a single whitelisted address 0, and its neighbours as before', async () => {
    const reporters = await Promise.all([s.createKey('free'), s.createKey('free'), s.createKey('free')]);
    for (const r of reporters) {
      await report(r.key, { ip: '8.8.2.60', categories: [27] });
      await report(r.key, { ip: '8.8.2.61', categories: [27] });
    }
    const before = await api('/check?ip=8.8.2.61', { key: reporters[0]!.key });
    await new Whitelist(s.orm.em).add('8.8.2.60', 'one resolver');
    const listed = await api('/check?ip=8.8.2.60', { key: reporters[0]!.key });
    expect(listed.body.data).toMatchObject({ abuseConfidencePercentage: 0, isWhitelisted: true });
    const neighbour = await api('/check?ip=8.8.2.61', { key: reporters[0]!.key });
    expect(neighbour.body.data).toMatchObject({ abuseConfidencePercentage: before.body.data.abuseConfidencePercentage, isWhitelisted: false });
    // The same for an IPv6 address: exactly that /128.
    await new Whitelist(s.orm.em).add('2001:4860:4860::8844');
    expect((await api('/check?ip=2001:4860:4860::8844', { key: reporters[0]!.key })).body.data.isWhitelisted).toBe(true);
    expect((await api('/check?ip=2001:4860:4860::8845', { key: reporters[0]!.key })).body.data.isWhitelisted).toBe(false);
    await new Whitelist(s.orm.em).remove('8.8.2.60');
    await new Whitelist(s.orm.em).remove('2001:4860:4860::8844');
  });

  it('scores a whitelisted address 0 and says why', async () => {
    const a = await s.createKey('free');
    const b = await s.createKey('free');
    const c = await s.createKey('honeypot');
    for (const k of [a, b, c]) await report(k.key, { ip: '8.8.8.40', categories: [27] });
    const before = await api('/check?ip=8.8.8.40', { key: a.key });
    expect(before.body.data.abuseConfidencePercentage).toBeGreaterThan(0);
    await new Whitelist(s.orm.em).add('8.8.8.0/24', 'resolver');
    const after = await api('/check?ip=8.8.8.40&verbose=true', { key: a.key });
    expect(after.body.data).toMatchObject({ abuseConfidencePercentage: 0, isWhitelisted: true });
    expect(after.body.data.confidenceBreakdown.constraintReasons.map((r: any) => r.code)).toContain('whitelisted');
    await new Whitelist(s.orm.em).remove('8.8.8.0/24');
  });
});

describe('GET /reports/{ip}', () => {
  it('pages reports newest first', async () => {
    const reporters = await Promise.all(Array.from({ length: 7 }, () => s.createKey('free')));
    for (const [i, r] of reporters.entries()) {
      await report(r.key, { ip: '8.8.8.50', categories: [i + 1] });
      s.clock.advance(1000);
    }
    const { key } = await s.createKey('professional');
    const p1 = await api('/reports/8.8.8.50?per_page=3', { key });
    expect(p1.body.data).toMatchObject({ ip: '8.8.8.50', total: 7, page: 1, per_page: 3, total_pages: 3 });
    expect(p1.body.data.reports.map((r: any) => r.categories[0])).toEqual([7, 6, 5]);
    const p3 = await api('/reports/8.8.8.50?per_page=3&page=3', { key });
    expect(p3.body.data.reports.map((r: any) => r.categories[0])).toEqual([1]);
    const p4 = await api('/reports/8.8.8.50?per_page=3&page=4', { key });
    expect(p4.body.data).toMatchObject({ reports: [], total: 7, page: 4 });
    const defaults = await api('/reports/8.8.8.50', { key });
    expect(defaults.body.data).toMatchObject({ per_page: 25, total_pages: 1 });
    const none = await api('/reports/8.8.8.51', { key });
    expect(none.body.data).toMatchObject({ reports: [], total: 0, total_pages: 0 });
  });

  it('refuses out-of-range paging and bad addresses with 400', async () => {
    const { key } = await s.createKey('professional');
    for (const q of ['per_page=101', 'per_page=0', 'page=0', 'page=x']) {
      expect((await api(`/reports/8.8.8.50?${q}`, { key })).status).toBe(400);
    }
    expect((await api('/reports/not-an-ip', { key })).status).toBe(400);
  });

  it('is refused to free and contributor keys', async () => {
    for (const role of ['free', 'contributor'] as const) {
      const { key } = await s.createKey(role);
      expect((await api('/reports/8.8.8.50', { key })).status).toBe(403);
    }
  });
});

describe('GET /search-public', () => {
  it('finds addresses by full address, prefix, country and ASN', async () => {
    const { key } = await s.createKey('free');
    await report(key, { ip: '8.8.8.60', categories: [14] });
    await report(key, { ip: '1.1.1.60', categories: [14] });
    const full = await api('/search-public?q=8.8.8.60');
    expect(full.body.data).toEqual({
      query: '8.8.8.60',
      results: [{ ip: '8.8.8.60', abuseConfidencePercentage: expect.any(Number), totalReports: 1, countryCode: 'US' }],
    });
    const prefix = await api('/search-public?q=8.8.8.');
    expect(prefix.body.data.results.map((r: any) => r.ip)).toContain('8.8.8.60');
    expect(prefix.body.data.results.every((r: any) => r.ip.startsWith('8.8.8.'))).toBe(true);
    const country = await api('/search-public?q=us');
    expect(country.body.data.results.map((r: any) => r.ip)).toContain('8.8.8.60');
    expect(country.body.data.results.every((r: any) => r.countryCode === 'US')).toBe(true);
    for (const q of ['AS15169', '15169', 'as15169']) {
      const asn = await api(`/search-public?q=${q}`);
      expect(asn.body.data.results.map((r: any) => r.ip)).toContain('8.8.8.60');
      expect(asn.body.data.results.map((r: any) => r.ip)).not.toContain('1.1.1.60');
    }
    const cloudflare = await api('/search-public?q=AS13335');
    expect(cloudflare.body.data.results.map((r: any) => r.ip)).toContain('1.1.1.60');
    expect(cloudflare.body.data.results.map((r: any) => r.ip)).not.toContain('8.8.8.60');
    const nothing = await api('/search-public?q=no such thing');
    expect(nothing.body.data.results).toEqual([]);
  });

  it('honours limit, at most 50', async () => {
    const reporter = await s.createKey('enterprise');
    const csv = Array.from({ length: 60 }, (_, i) => `8.8.9.${i + 1},4`).join('\n');
    await api('/bulk-report', { key: reporter.key, json: { csv } });
    expect((await api('/search-public?q=8.8.9.')).body.data.results).toHaveLength(20);
    expect((await api('/search-public?q=8.8.9.&limit=50')).body.data.results).toHaveLength(50);
    expect((await api('/search-public?q=8.8.9.&limit=51')).status).toBe(400);
  });
});
