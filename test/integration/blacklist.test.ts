import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { expectSchema } from '../support/contract.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

let s: TestServer;
let contributor: string;
const HIGH = ['8.8.4.1', '8.8.4.2', '8.8.4.3', '8.8.4.4', '8.8.4.5']; // 20 reporters, SSH and C2
const MID = ['9.9.8.1', '9.9.8.2', '9.9.8.3']; // 4 reporters, port scans
const LOW = ['1.1.8.1', '1.1.8.2']; // 1 reporter, port scans

const api = (path: string, o: Parameters<typeof call>[2] = {}, server = s) => call(server.origin, `/api/v2${path}`, o);
const regenerate = (server = s) => blacklistSnapshots(server.pool, server.clock).regenerate();

beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
  contributor = (await s.createKey('contributor')).key;
  for (let r = 0; r < 20; r++) {
    const { key } = await s.createKey('enterprise');
    const lines = HIGH.map((ip) => `${ip},22|27,ssh and c2`);
    if (r < 4) lines.push(...MID.map((ip) => `${ip},14`));
    if (r === 0) lines.push(...LOW.map((ip) => `${ip},14`));
    s.clock.advance(1000);
    expect((await api('/bulk-report', { key, json: { csv: lines.join('\n') } })).status).toBe(200);
  }
  await regenerate();
});
afterAll(async () => {
  await s?.close();
});

const ips = (body: any) => body.data.map((e: any) => e.ip);

describe('GET /blacklist', () => {
  it('lists addresses at or above 75 by default, highest score first, as the contract says', async () => {
    const res = await api('/blacklist', { key: contributor });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expectSchema('BlacklistList', res.body);
    expect(ips(res.body).sort()).toEqual([...HIGH].sort());
    expect(res.body.meta).toEqual({
      generatedAt: '2026-06-15T12:00:20.000Z',
      confidence: '75',
      confidenceMinimum: '75',
      count: 5,
      format: 'standard',
    });
    // same score: the most recent report first (all were reported together: then by address)
    const scores = res.body.data.map((e: any) => e.abuseConfidencePercentage);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(res.body.data[0]).toEqual({
      ip: res.body.data[0].ip,
      ipAddress: res.body.data[0].ip,
      abuseConfidencePercentage: expect.any(Number),
      lastReportedAt: '2026-06-15T12:00:20.000Z',
    });
  });

  it('takes confidence and its aliases, the earliest name winning', async () => {
    const all = await api('/blacklist?confidence=0', { key: contributor });
    expect(all.body.data).toHaveLength(10);
    expect(ips(all.body).slice(0, 5).sort()).toEqual([...HIGH].sort());
    expect(ips(all.body).slice(5, 8).sort()).toEqual([...MID].sort());
    const midScore = all.body.data[5].abuseConfidencePercentage;
    const alias = await api(`/blacklist?confidenceMinimum=${midScore}`, { key: contributor });
    expect(alias.body.data).toHaveLength(8);
    expect(alias.body.meta.confidence).toBe(String(midScore));
    const legacy = await api(`/blacklist?confidence=0&confidenceMinimum=0&confidence_minimum=${midScore}`, { key: contributor });
    expect(legacy.body.data).toHaveLength(8);
    expect((await api('/blacklist?confidence=101', { key: contributor })).status).toBe(400);
  });

  it('filters by one or more categories and truncates at limit', async () => {
    const ssh = await api('/blacklist?confidence=0&category=22', { key: contributor });
    expect(ips(ssh.body).sort()).toEqual([...HIGH].sort());
    const both = await api('/blacklist?confidence=0&category=14,22', { key: contributor });
    expect(both.body.data).toHaveLength(10);
    const limited = await api('/blacklist?confidence=0&limit=3', { key: contributor });
    expect(ips(limited.body)).toEqual(ips(both.body).slice(0, 3));
    expect(limited.body.meta.count).toBe(3);
    const unknown = await api('/blacklist?category=14,99', { key: contributor });
    expect(unknown.status).toBe(422);
    expect(unknown.body.meta.errors).toEqual([{ location: 'query', name: 'category', message: expect.stringContaining('99') }]);
    expect((await api('/blacklist?category=ssh', { key: contributor })).status).toBe(400);
  });

  it('serves text and CSV', async () => {
    const txt = await api('/blacklist?format=txt&confidence=0', { key: contributor });
    expect(txt.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const json = await api('/blacklist?confidence=0', { key: contributor });
    expect(txt.body).toBe(ips(json.body).join('\n') + '\n');
    const csv = await api('/blacklist?format=csv&confidence=0&limit=2', { key: contributor });
    expect(csv.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    const [header, first, second, rest] = (csv.body as string).split('\n');
    expect(header).toBe('ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories');
    expect(first).toBe(`${json.body.data[0].ip},${json.body.data[0].abuseConfidencePercentage},2026-06-15T12:00:20.000Z,20,22|27`);
    expect(second).toMatch(/^8\.8\.4\.\d,\d+,/);
    expect(rest).toBe('');
  });

  it('accepts the earlier source name and refuses others', async () => {
    const dynamic = await api('/blacklist?source=dynamic', { key: contributor });
    const community = await api('/blacklist?source=community', { key: contributor });
    expect(community.body.data).toEqual(dynamic.body.data);
    const other = await api('/blacklist?source=internal', { key: contributor });
    expect(other.status).toBe(400);
    expect(other.body.meta.errors[0]).toMatchObject({ location: 'query', name: 'source' });
  });

  it('sends the same ETag from every process and 304 for it', async () => {
    const sibling = await s.sibling();
    try {
      const a = await api('/blacklist?confidence=50', { key: contributor });
      const b = await api('/blacklist?confidence=50', { key: contributor }, sibling);
      const etag = a.headers.get('etag')!;
      expect(etag).toMatch(/^"bl-[0-9a-f]{16}"$/);
      expect(b.headers.get('etag')).toBe(etag);
      expect(b.body).toEqual(a.body);
      const notModified = await api('/blacklist?confidence=50', { key: contributor, headers: { 'If-None-Match': etag } }, sibling);
      expect(notModified.status).toBe(304);
      expect(notModified.body).toBe('');
      expect(notModified.headers.get('etag')).toBe(etag);
      const otherParams = await api('/blacklist?confidence=51', { key: contributor, headers: { 'If-None-Match': etag } });
      expect(otherParams.status).toBe(200);
      expect(otherParams.headers.get('etag')).not.toBe(etag);
    } finally {
      await sibling.close();
    }
  });

  it('keeps a rendered list up to BLACKLIST_CACHE_MB, and renders every request at 0', async () => {
    const uncached = await s.sibling({ blacklistCacheBytes: 0 });
    const path = '/blacklist?confidence=60&limit=3';
    const moved = '2026-06-15T13:00:00.000Z'; // later: the entry stays first in the list's order
    try {
      const first = await api(path, { key: contributor });
      const before = await api(path, { key: contributor }, uncached);
      expect(before.body).toEqual(first.body);
      // The snapshot's rows change under the same ETag: only a kept rendering can still show the old ones.
      const { ip, lastReportedAt } = first.body.data[0];
      const entry = 'update blacklist_entries set last_reported_at = $1 where until_snapshot is null and ip = $2';
      expect((await s.pool.query(entry, [moved, ip])).rowCount).toBe(1);
      try {
        const kept = await api(path, { key: contributor });
        const rendered = await api(path, { key: contributor }, uncached);
        expect(kept.body).toEqual(first.body);
        expect(rendered.headers.get('etag')).toBe(first.headers.get('etag'));
        expect(rendered.body.data[0]).toEqual({ ...first.body.data[0], lastReportedAt: moved });
      } finally {
        await s.pool.query(entry, [lastReportedAt, ip]);
      }
    } finally {
      await uncached.close();
    }
  });

  it('changes the tag only when a regeneration changes the list', async () => {
    const before = (await api('/blacklist?confidence=0', { key: contributor })).headers.get('etag');
    const unchanged = await regenerate();
    expect(unchanged.changed).toBe(false);
    expect((await api('/blacklist?confidence=0', { key: contributor })).headers.get('etag')).toBe(before);
    const { key } = await s.createKey('free');
    await api('/report', { key, json: { ip: '4.2.2.9', categories: [14] } });
    const changed = await regenerate();
    expect(changed.changed).toBe(true);
    const after = await api('/blacklist?confidence=0', { key: contributor });
    expect(after.headers.get('etag')).not.toBe(before);
    expect(ips(after.body)).toContain('4.2.2.9');
  });

  it('never lists a whitelisted address', async () => {
    await new Whitelist(s.orm.em).add('8.8.4.0/30', 'test');
    await regenerate();
    const res = await api('/blacklist?confidence=0', { key: contributor });
    expect(ips(res.body)).not.toContain('8.8.4.1');
    expect(ips(res.body)).not.toContain('8.8.4.2');
    expect(ips(res.body)).toContain('8.8.4.4');
    await new Whitelist(s.orm.em).remove('8.8.4.0/30');
    await regenerate();
  });

  it('is for contributors and up, and charges no quota', async () => {
    const free = await s.createKey('free');
    expect((await api('/blacklist', { key: free.key })).status).toBe(403);
    const res = await api('/blacklist', { key: contributor });
    const remaining = res.headers.get('x-ratelimit-remaining');
    await api('/blacklist?format=txt', { key: contributor });
    const again = await api('/blacklist-detailed', { key: contributor });
    expect(again.headers.get('x-ratelimit-remaining')).toBe(remaining);
    expect(again.headers.get('x-ratelimit-limit')).toBe('5000');
  });
});

describe('the deprecated blacklist endpoints', () => {
  it('keep working with Deprecation, Sunset and Link headers, charging nothing', async () => {
    const detailed = await api('/blacklist-detailed?confidence=0', { key: contributor });
    expect(detailed.status).toBe(200);
    expectSchema('BlacklistDetailedList', detailed.body);
    expect(detailed.body.meta.format).toBe('detailed');
    expect(detailed.body.data.find((e: any) => e.ip === '8.8.4.4')).toMatchObject({ categories: [22, 27], countryCode: 'US' });
    const combined = await api('/blacklist-combined', { key: contributor });
    expectSchema('BlacklistList', combined.body);
    expect(combined.body.meta.format).toBe('combined');
    const git = await api('/blacklist-export/git?format=json', { key: contributor });
    expect(git.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(git.body).toBe((await api('/blacklist?format=txt', { key: contributor })).body);
    for (const res of [detailed, combined, git]) {
      expect(res.headers.get('deprecation')).toBe('@1735689600');
      expect(res.headers.get('sunset')).toBe('Fri, 31 Dec 2027 23:59:59 GMT');
      expect(res.headers.get('link')).toMatch(/^<\/api\/v2\/blacklist(\?format=txt)?>; rel="successor-version"$/);
    }
    const etag = git.headers.get('etag')!;
    const cached = await api('/blacklist-export/git', { key: contributor, headers: { 'If-None-Match': etag } });
    expect(cached.status).toBe(304);
    expect(cached.headers.get('deprecation')).toBe('@1735689600');
    expect((await api('/verify-key', { key: contributor })).body.data.usage).toEqual({ checksToday: 0, reportsToday: 0 });
    expect((await api('/blacklist-detailed', { key: (await s.createKey('free')).key })).status).toBe(403);
  });
});

describe('blacklist categories and statistics', () => {
  it('lists the thematic categories, usable as category filters', async () => {
    const res = await api('/blacklist-categories');
    expect(res.status).toBe(200);
    expect(res.body.data).toHaveLength(11);
    const ssh = res.body.data.find((c: any) => c.slug === 'ssh');
    const list = await api(`/blacklist?confidence=0&category=${ssh.categories.join(',')}`, { key: contributor });
    expect(ips(list.body).sort()).toEqual([...HIGH].sort());
  });

  it('counts the list by confidence band and blacklist category', async () => {
    const res = await api('/blacklist-stats');
    expect(res.status).toBe(200);
    const all = (await api('/blacklist?confidence=0', { key: contributor })).body.data;
    const band = (lo: number, hi: number) => all.filter((e: any) => e.abuseConfidencePercentage >= lo && e.abuseConfidencePercentage <= hi).length;
    expect(res.body.data).toMatchObject({
      total: all.length,
      community: band(25, 100),
      byConfidence: { '90-100': band(90, 100), '75-89': band(75, 89), '50-74': band(50, 74), '25-49': band(25, 49) },
    });
    expect(res.body.data.byCategory.find((c: any) => c.name === 'SSH').count).toBe(5);
    expect(res.body.data.byCategory.find((c: any) => c.name === 'Scanners').count).toBe(band(25, 100) - 5);
  });
});
