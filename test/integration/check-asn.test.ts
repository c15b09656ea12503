import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * GET /check-asn and the summary of GET /check-block: an AS's (or a network's) reported
 * addresses, how many are listed, the top categories and the IPv6 ones by /64. The addresses
 * are placed in their AS by the bundled GeoIP data, as at report time.
 */
let s: TestServer;
let reporters: string[];
let reader: string;
/** AS208677 (Cloud.ru) in the bundled data. */
const AS_V4 = 208677;
const V4 = ['45.155.205.7', '45.155.205.90', '45.155.204.1'];
/** AS9009 (M247): two addresses in one /64, one in another. */
const AS_V6 = 9009;
const V6 = ['2a0d:5600:24::1', '2a0d:5600:24::2', '2a0d:5600:24:ffff::9'];

const api = (p: string, key?: string) => call(s.origin, `/api/v2${p}`, { key });
const remaining = (res: { headers: Headers }) => Number(res.headers.get('x-ratelimit-remaining'));

beforeAll(async () => {
  s = await startTestServer();
  reporters = [];
  for (let r = 0; r < 8; r++) reporters.push((await s.createKey('honeypot')).key);
  reader = (await s.createKey('enterprise')).key;
  const plan: [string, number, number[]][] = [
    [V4[0]!, 8, [18, 22]],
    [V4[1]!, 2, [22]],
    [V4[2]!, 1, [14]],
    [V6[0]!, 8, [18, 22]],
    [V6[1]!, 1, [22]],
    [V6[2]!, 1, [21]],
  ];
  for (const [ip, n, categories] of plan) {
    for (let r = 0; r < n; r++) {
      const res = await call(s.origin, '/api/v2/report', { key: reporters[r], json: { ip, categories } });
      expect(res.status, ip).toBe(200);
    }
  }
  await blacklistSnapshots(s.pool, s.clock).regenerate();
});
afterAll(async () => {
  await s?.close();
});

/** The addresses GET /blacklist lists by default (its default confidence), as a set. */
async function blacklisted(): Promise<Set<string>> {
  const res = await api('/blacklist?format=txt', reader);
  expect(res.status).toBe(200);
  return new Set(String(res.body).split('\n').filter((line) => line && !line.startsWith('#')));
}

describe('GET /check-asn', () => {
  it('answers for an AS: organisation, announced space, reported addresses by score, listed counts as /blacklist has them', async () => {
    const { key } = await s.createKey('free');
    const res = await api(`/check-asn?asn=${AS_V4}`, key);
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data).toMatchObject({ asn: AS_V4, organisation: expect.stringContaining('Cloud'), maxAgeInDays: null, reportedCount: 3, truncated: false });
    expect(data.announced.ipv4Addresses).toBeGreaterThan(0);
    expect(data.reported.map((r: any) => r.ip)).toEqual(V4);
    const scores = data.reported.map((r: any) => r.abuseConfidencePercentage);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    expect(data.reported[0]).toMatchObject({ totalReports: 8, categories: [18, 22], countryCode: 'RU' });
    const listed = await blacklisted();
    const expected = V4.filter((ip) => listed.has(ip)).length;
    expect(expected).toBeGreaterThan(0);
    expect(data.summary).toMatchObject({ listedCount: expected, listedConfidence: 75, ipv6NetworkCount: 0, ipv6Networks: [] });
    expect(data.summary.listedShare).toBeCloseTo(expected / data.announced.ipv4Addresses, 12);
    expect(data.summary.topCategories).toEqual([
      { id: 22, count: 2 },
      { id: 14, count: 1 },
      { id: 18, count: 1 },
    ]);
    expect(remaining(res)).toBe(1000 - 3);
  });

  it('groups IPv6 reported addresses by /64', async () => {
    const { key } = await s.createKey('free');
    const res = await api(`/check-asn?asn=${AS_V6}`, key);
    expect(res.status).toBe(200);
    const { summary, reported, reportedCount } = res.body.data;
    expect(reportedCount).toBe(3);
    expect(reported.map((r: any) => r.ip).sort()).toEqual([...V6].sort());
    expect(summary.ipv6NetworkCount).toBe(2);
    expect(summary.ipv6Networks.map((n: any) => [n.network, n.reportedCount])).toEqual([
      ['2a0d:5600:24::/64', 2],
      ['2a0d:5600:24:ffff::/64', 1],
    ]);
    expect(summary.ipv6Networks[0]).toMatchObject({ totalReports: 9, categories: [18, 22] });
    // AS9009 announces IPv4 space too, of which none is listed here.
    expect(summary.listedShare).toBe(0);
    const listed = await blacklisted();
    expect(summary.listedCount).toBe(V6.filter((ip) => listed.has(ip)).length);
    expect(summary.ipv6Networks[0].listedCount).toBe(V6.slice(0, 2).filter((ip) => listed.has(ip)).length);
  });

  it('cuts at limit and charges what it returns; an AS without reports costs one check and names no ranges it does not know', async () => {
    const { key } = await s.createKey('free');
    const cut = await api(`/check-asn?asn=${AS_V4}&limit=1`, key);
    expect(cut.status).toBe(200);
    expect(cut.body.data).toMatchObject({ reportedCount: 3, truncated: true });
    expect(cut.body.data.reported.map((r: any) => r.ip)).toEqual([V4[0]]);
    // The summary still covers every reported address.
    expect(cut.body.data.summary.topCategories).toHaveLength(3);
    expect(remaining(cut)).toBe(999);
    const empty = await api('/check-asn?asn=15169', key);
    expect(empty.body.data).toMatchObject({ asn: 15169, organisation: 'Google LLC', reportedCount: 0, reported: [], summary: { listedCount: 0, topCategories: [] } });
    expect(remaining(empty)).toBe(998);
    const unknown = await api('/check-asn?asn=4199999999', key);
    expect(unknown.status).toBe(200);
    expect(unknown.body.data).toMatchObject({ organisation: null, reportedCount: 0 });
    expect(unknown.body.data.announced).toBeUndefined();
  });

  it('counts only addresses reported within maxAgeInDays', async () => {
    const { key } = await s.createKey('free');
    await s.pool.query(`update ip_stats set last_reported_at = last_reported_at - interval '40 days' where ip = $1`, [V4[2]]);
    try {
      const res = await api(`/check-asn?asn=${AS_V4}&maxAgeInDays=30`, key);
      expect(res.status).toBe(200);
      expect(res.body.data).toMatchObject({ maxAgeInDays: 30, reportedCount: 2 });
      expect(res.body.data.reported.map((r: any) => r.ip)).toEqual(V4.slice(0, 2));
      expect(res.body.data.summary.topCategories.map((c: any) => c.id)).not.toContain(14);
    } finally {
      await s.pool.query(`update ip_stats set last_reported_at = last_reported_at + interval '40 days' where ip = $1`, [V4[2]]);
    }
  });

  it('refuses a bad asn with 400 naming asn: not an integer, 0, beyond 32 bits, special-purpose', async () => {
    const { key } = await s.createKey('free');
    for (const asn of ['abc', '1.5', '0', '-1', '4294967296', '99999999999999999999', 'AS208677', '', '23456', '64496', '64512', '65535', '131071', '4200000000', '4294967295']) {
      const res = await api(`/check-asn?asn=${encodeURIComponent(asn)}`, key);
      expect(res.status, asn).toBe(400);
      expect(res.body.meta.errors, asn).toEqual(expect.arrayContaining([expect.objectContaining({ location: 'query', name: 'asn' })]));
    }
    expect((await api('/check-asn', key)).status).toBe(400);
    for (const bad of ['limit=0', 'limit=1001', 'maxAgeInDays=0', 'maxAgeInDays=366', 'maxAgeInDays=x', 'other=1']) {
      expect((await api(`/check-asn?asn=${AS_V4}&${bad}`, key)).status, bad).toBe(400);
    }
  });

  it('needs a key (401), and refuses a charge beyond the quota (429, nothing charged)', async () => {
    const unkeyed = await api(`/check-asn?asn=${AS_V4}`);
    expect(unkeyed.status).toBe(401);
    expect((await api(`/check-asn?asn=${AS_V4}`, 'not-a-key')).status).toBe(401);
    const { key, accountId } = await s.createKey('free');
    const day = s.clock.now().toISOString().slice(0, 10);
    await s.pool.query(`insert into usage_counters (subject, counter, day, used) values ($1, 'check', $2, 998)`, [`a:${accountId}`, day]);
    const refused = await api(`/check-asn?asn=${AS_V4}`, key);
    expect(refused.status).toBe(429);
    expect(remaining(refused)).toBe(2);
    const fits = await api(`/check-asn?asn=${AS_V4}&limit=2`, key);
    expect(fits.status).toBe(200);
    expect(remaining(fits)).toBe(0);
  });

  it('takes no SQL or repeated parameters as an AS number', async () => {
    const { key } = await s.createKey('free');
    // (The validator reads numbers as JavaScript does: `0x10` is AS16, `1e3` AS1000.)
    for (const asn of ["1'--", '1;select 1', '1%20or%201=1', '1%00']) {
      expect((await api(`/check-asn?asn=${asn}`, key)).status, asn).toBe(400);
    }
    expect((await api(`/check-asn?asn=${AS_V4}&asn=1`, key)).status).toBe(400);
  });
});

describe('GET /check-block summary', () => {
  it('summarises a network: listed count as /blacklist has it, share of an IPv4 network, top categories', async () => {
    const { key } = await s.createKey('free');
    const res = await api('/check-block?network=45.155.205.0/24', key);
    expect(res.status).toBe(200);
    const listed = await blacklisted();
    const inNet = V4.slice(0, 2);
    const expected = inNet.filter((ip) => listed.has(ip)).length;
    expect(res.body.data.summary).toMatchObject({ listedCount: expected, listedConfidence: 75, listedShare: expected / 256, ipv6NetworkCount: 0 });
    expect(res.body.data.summary.topCategories).toEqual([
      { id: 22, count: 2 },
      { id: 18, count: 1 },
    ]);
  });

  it('groups the IPv6 reported addresses of a network by /64', async () => {
    const { key } = await s.createKey('free');
    const res = await api(`/check-block?network=${encodeURIComponent('2a0d:5600:24::/48')}`, key);
    expect(res.status).toBe(200);
    expect(res.body.data.reported).toHaveLength(3);
    expect(res.body.data.summary.listedShare).toBeUndefined();
    expect(res.body.data.summary.ipv6Networks.map((n: any) => n.network)).toEqual(['2a0d:5600:24::/64', '2a0d:5600:24:ffff::/64']);
  });
});

describe('trs geo backfill-asn', () => {
  it('fills the AS of addresses stored without one, in batches, and /check-asn then counts them', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'trs-asn-'));
    const env = { ...process.env, DATABASE_URL: s.db.url, DATA_DIR: dir, LOG_LEVEL: 'warn' };
    if (s.db.embedded) delete (env as Record<string, string | undefined>).DATABASE_URL;
    try {
      // As an address reported before the AS was looked up: its AS (and organisation) unknown.
      await s.pool.query(`update ip_stats set asn = null, isp = null where ip = any($1)`, [[V4[1], V4[2], V6[2]]]);
      const { key } = await s.createKey('free');
      expect((await api(`/check-asn?asn=${AS_V4}`, key)).body.data.reportedCount).toBe(1);
      // A new report fills a missing AS (and never replaces one).
      expect((await call(s.origin, '/api/v2/report', { key: reporters[7], json: { ip: V4[2], categories: [14] } })).status).toBe(200);
      expect((await api(`/check-asn?asn=${AS_V4}`, key)).body.data.reportedCount).toBe(2);
      await s.pool.query(`update ip_stats set asn = null, isp = null where ip = $1`, [V4[2]]);
      const run = await runCli(env, 'geo', 'backfill-asn', '--batch', '2', '--json');
      expect(run.code, run.err).toBe(0);
      expect(JSON.parse(run.out)).toEqual({ scanned: 3, filled: 3 });
      const { rows } = await s.pool.query<{ ip: string; asn: number; isp: string }>(`select ip, asn, isp from ip_stats where ip = any($1) order by ip`, [[V4[1], V4[2], V6[2]]]);
      expect(rows.map((r) => [r.ip, r.asn])).toEqual([[V4[2], AS_V4], [V4[1], AS_V4], [V6[2], AS_V6]].sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
      expect(rows.every((r) => r.isp)).toBe(true);
      expect((await api(`/check-asn?asn=${AS_V4}`, key)).body.data.reportedCount).toBe(3);
      // A second run finds nothing left to fill.
      const again = await runCli(env, 'geo', 'backfill-asn', '--json');
      expect(JSON.parse(again.out)).toEqual({ scanned: 0, filled: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
