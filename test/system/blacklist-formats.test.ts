import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { expectSchema } from '../support/contract.js';
import { call } from '../support/http.js';
import { reportFromAccounts } from '../support/reports.js';
import { createNetns, type Netns } from '../support/netns.js';
import { missingTools, requireTools } from '../support/tools.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The firewall formats of GET /blacklist, aggregation and deltas. Each format's file is loaded
 * by the real tool in a scratch network namespace (root with iproute2, as on CI), then its
 * delta over it, and what the tool holds is read back; a machine without one of the tools skips
 * those tests naming it (CI=true fails them), and checks the nftables syntax where it can.
 */
let s: TestServer;
let key: string;
let work: string;
const BLOCK = ['45.155.205.4', '45.155.205.5', '45.155.205.6', '45.155.205.7'];
const LONE = '45.155.205.9';
const V6 = ['2a0d:5600:24::2', '2a0d:5600:24::3'];
const NEW = '193.32.162.10';
const ALL = [...BLOCK, LONE, ...V6];
/** What loading and reading back every format takes: `ip` for the namespace, each format's loader and lister. */
const NAMESPACE_TOOLS = ['ip', 'nft', 'ipset', 'iptables-restore', 'iptables', 'ip6tables-restore', 'ip6tables'];
const missingForNamespace = missingTools(NAMESPACE_TOOLS, { netns: true });

const api = (p: string, o: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${p}`, { key, ...o });
const regenerate = () => blacklistSnapshots(s.pool, s.clock, 3).regenerate();


/** Every address or CIDR block in a tool's listing. */
const members = (text: string) =>
  [...text.matchAll(/(?<![\w:.])((?:\d{1,3}\.){3}\d{1,3}(?:\/\d+)?|[0-9a-f]{1,4}(?::[0-9a-f]{0,4}){2,7}(?:\/\d+)?)(?![\w:.])/g)].map((m) => m[1]!).sort();

beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
  key = (await s.createKey('contributor')).key;
  await reportFromAccounts(s, ALL);
  await regenerate();
  work = mkdtempSync(path.join(tmpdir(), 'trs-formats-'));
});
afterAll(async () => {
  await s?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('GET /blacklist in firewall formats', () => {
  it('cidr: one block per line, /32 and /128 for addresses, in list order', async () => {
    const res = await api('/blacklist?format=cidr&confidence=50');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const lines = String(res.body).trimEnd().split('\n');
    expect(lines.sort()).toEqual(ALL.map((ip) => `${ip}/${ip.includes(':') ? 128 : 32}`).sort());
  });

  it('aggregates losslessly: only addresses that fill an aligned block merge', async () => {
    const cidr = await api('/blacklist?format=cidr&confidence=50&aggregate=true');
    expect(String(cidr.body)).toBe(`45.155.205.4/30\n${LONE}/32\n2a0d:5600:24::2/127\n`);
    const txt = await api('/blacklist?format=txt&confidence=50&aggregate=true');
    expect(String(txt.body)).toBe(`45.155.205.4/30\n${LONE}\n2a0d:5600:24::2/127\n`);
    const plain = await api('/blacklist?format=txt&confidence=50');
    expect(String(plain.body).trimEnd().split('\n').sort()).toEqual([...ALL].sort());
  });

  it('refuses aggregate with json and csv, and since with nginx (422 invalid_combination)', async () => {
    for (const query of ['format=json&aggregate=true', 'format=csv&aggregate=true', 'format=nginx&since=%22bl-0123456789abcdef%22']) {
      const res = await api(`/blacklist?${query}`);
      expect(res.status, query).toBe(422);
      expect(res.body).toMatchObject({ meta: { success: false, code: 422 }, code: 'invalid_combination' });
    }
    expect((await api('/blacklist?format=pf')).status).toBe(400);
    expect((await api('/blacklist?aggregate=maybe')).status).toBe(400);
  });

  it('gives every format and aggregation its own ETag, and 304 for it', async () => {
    const tags = new Set<string>();
    for (const query of ['format=nftables', 'format=nftables&aggregate=true', 'format=ipset', 'format=iptables', 'format=ip6tables', 'format=nginx', 'format=cidr']) {
      const res = await api(`/blacklist?${query}`);
      expect(res.status).toBe(200);
      const etag = res.headers.get('etag')!;
      tags.add(etag);
      const again = await api(`/blacklist?${query}`, { headers: { 'If-None-Match': etag } });
      expect(again.status, query).toBe(304);
      expect(again.body).toBe('');
    }
    expect(tags.size).toBe(7);
  });

  it('nginx: a geo map of the addresses', async () => {
    const res = await api('/blacklist?format=nginx&confidence=50&aggregate=true');
    const text = String(res.body);
    expect(text).toMatch(/^# Threat-Reputation Service blacklist: confidence 50 and above, generated /);
    expect(text).toContain('geo $trs_blacklist {\n\tdefault 0;\n\t45.155.205.4/30 1;\n');
    expect(text.endsWith('}\n# 3 entries\n')).toBe(true);
  });

  it('nginx: nginx -t loads the geo map', async (ctx) => {
    // Optional: .ci/run does not install nginx, so its absence is a skip everywhere.
    const missing = missingTools(['nginx']);
    if (missing) return ctx.skip(`${missing} (optional: .ci/run does not install it)`);
    const text = String((await api('/blacklist?format=nginx&confidence=50&aggregate=true')).body);
    const file = path.join(work, 'nginx.conf');
    writeFileSync(path.join(work, 'trs.conf'), text);
    writeFileSync(file, `events {}\nhttp {\n include ${path.join(work, 'trs.conf')};\n server { listen 127.0.0.1:1; if ($trs_blacklist) { return 403; } }\n}\n`);
    const { spawnSync } = await import('node:child_process');
    const check = spawnSync('nginx', ['-t', '-c', file, '-p', work, '-e', path.join(work, 'error.log')]);
    expect(check.status, check.stderr.toString()).toBe(0);
  });
});

describe('the files load in the real tools, in a scratch network namespace', () => {
  let ns: Netns;
  let etags: Record<string, string>;
  const formats = ['nftables', 'nftables&aggregate=true', 'ipset', 'ipset&aggregate=true', 'iptables', 'ip6tables&aggregate=true'];

  beforeAll(async () => {
    if (missingForNamespace) return;
    ns = await createNetns();
    etags = {};
  });
  beforeEach((ctx) => requireTools(ctx, missingForNamespace));
  afterAll(async () => {
    await ns?.remove();
  });

  const fileOf = (format: string, kind: string) => path.join(work, `${format.replace(/\W/g, '-')}-${kind}.txt`);
  const loadFile = (format: string, file: string) =>
    ns.sh(format.startsWith('nftables') ? `nft -f ${file}` : format.startsWith('ipset') ? `ipset restore -file ${file}` : `${format.split('&')[0]}-restore --noflush ${file}`);

  /** Downloads a format (its delta since a tag) and loads it; the tag of what it loaded. */
  async function load(format: string, since?: string) {
    const res = await api(`/blacklist?format=${format}&confidence=50${since ? `&since=${encodeURIComponent(since)}` : ''}`);
    expect(res.status, String(res.body)).toBe(200);
    const file = fileOf(format, since ? 'delta' : 'full');
    writeFileSync(file, String(res.body));
    await loadFile(format, file);
    return res.headers.get('etag')!;
  }

  const held = {
    nft: async () => members((await ns.sh('nft list set inet trs v4; nft list set inet trs v6')).out),
    ipset: async () => members((await ns.sh('ipset list trs-v4; ipset list trs-v6')).out.replace(/^(Name|Header|Type|Revision|Size|References|Number).*$/gm, '')),
    iptables: async (tool: string) => members((await ns.sh(`${tool} -S trs-blacklist`)).out),
  };
  const holding = (format: string) =>
    format.startsWith('nftables') ? held.nft() : format.startsWith('ipset') ? held.ipset() : held.iptables(format.split('&')[0]!);

  it('each full file loads and holds the list', async () => {
    for (const format of formats) {
      etags[format] = await load(format);
      const aggregated = format.endsWith('aggregate=true');
      const family = format.startsWith('iptables') ? 4 : format.startsWith('ip6tables') ? 6 : undefined;
      const expected = (aggregated ? ['45.155.205.4/30', LONE, '2a0d:5600:24::2/127'] : ALL).filter(
        (ip) => family === undefined || (family === 6) === ip.includes(':'),
      );
      // iptables writes single addresses with their length
      const shown = format.includes('tables') && !format.startsWith('nftables') ? expected.map((ip) => (ip.includes('/') ? ip : `${ip}/${ip.includes(':') ? 128 : 32}`)) : expected;
      expect(await holding(format), format).toEqual([...shown].sort());
      // Loading it again replaces, never doubles.
      await load(format);
      expect(await holding(format), `${format} again`).toEqual([...shown].sort());
    }
  });

  it('each delta file applies over the full one, to the new list', async () => {
    await reportFromAccounts(s, [NEW]);
    await new Whitelist(s.orm.em).add(LONE, 'a false positive');
    s.clock.advance(60_000);
    await regenerate();
    for (const format of formats) {
      // The formats share tables, sets and chains: the full file of each goes back in first.
      await loadFile(format, fileOf(format, 'full'));
      await load(format, etags[format]);
      const aggregated = format.endsWith('aggregate=true');
      const family = format.startsWith('iptables') ? 4 : format.startsWith('ip6tables') ? 6 : undefined;
      const expected = (aggregated ? ['45.155.205.4/30', NEW, '2a0d:5600:24::2/127'] : [...BLOCK, NEW, ...V6]).filter(
        (ip) => family === undefined || (family === 6) === ip.includes(':'),
      );
      const shown = format.includes('tables') && !format.startsWith('nftables') ? expected.map((ip) => (ip.includes('/') ? ip : `${ip}/${ip.includes(':') ? 128 : 32}`)) : expected;
      expect(await holding(format), format).toEqual([...shown].sort());
    }
    await new Whitelist(s.orm.em).remove(LONE);
  });
});

describe('without a network namespace: nft checks the syntax', () => {
  it('nft -c accepts the nftables file', async (ctx) => {
    if (!missingForNamespace) return ctx.skip('the namespace tests above load the files for real');
    requireTools(ctx, missingTools(['nft']));
    const res = await api('/blacklist?format=nftables&confidence=50&aggregate=true');
    const file = path.join(work, 'check.nft');
    writeFileSync(file, String(res.body));
    const { spawnSync } = await import('node:child_process');
    const check = spawnSync('nft', ['-c', '-f', file]);
    // nft -c needs CAP_NET_ADMIN for some checks: a permission error is no verdict.
    if (!/Operation not permitted/.test(check.stderr.toString())) expect(check.status, check.stderr.toString()).toBe(0);
  });
});

describe('deltas: /blacklist?since=ETAG', () => {
  const FRESH = '185.220.101.33';
  let before: Record<string, string>;

  beforeAll(async () => {
    await regenerate(); // whatever the namespace tests changed settles first
    before = {};
    for (const query of ['format=json', 'format=txt', 'format=csv', 'format=cidr&aggregate=true']) {
      before[query] = (await api(`/blacklist?${query}&confidence=50`)).headers.get('etag')!;
    }
    await reportFromAccounts(s, [FRESH]);
    await new Whitelist(s.orm.em).add(BLOCK[0]!, 'unblocked by its owner');
    s.clock.advance(60_000);
    await regenerate();
  });
  afterAll(async () => {
    await new Whitelist(s.orm.em).remove(BLOCK[0]!);
  });

  const since = (query: string) => `/blacklist?${query}&confidence=50&since=${encodeURIComponent(before[query]!)}`;

  it('json: the entries added and the addresses removed, with the current ETag', async () => {
    const res = await api(since('format=json'));
    expect(res.status).toBe(200);
    expectSchema('BlacklistDelta', res.body);
    expect(res.body.data.added.map((e: any) => e.ip)).toEqual([FRESH]);
    expect(res.body.data.removed).toEqual([{ ip: BLOCK[0], ipAddress: BLOCK[0] }]);
    expect(res.body.meta).toMatchObject({ since: before['format=json'], added: 1, removed: 1, format: 'delta', confidence: '50' });
    const full = await api('/blacklist?format=json&confidence=50');
    expect(res.headers.get('etag')).toBe(full.headers.get('etag'));
    expect(full.body.data.map((e: any) => e.ip)).toContain(FRESH);
  });

  it('txt and csv: removals first, marked', async () => {
    expect(String((await api(since('format=txt'))).body)).toBe(`-${BLOCK[0]}\n+${FRESH}\n`);
    const csv = String((await api(since('format=csv'))).body).split('\n');
    expect(csv[0]).toBe('change,ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories');
    expect(csv[1]).toMatch(new RegExp(`^removed,${BLOCK[0]!.replace(/\./g, '\\.')},\\d+,`));
    expect(csv[2]).toMatch(new RegExp(`^added,${FRESH.replace(/\./g, '\\.')},\\d+,2026-`));
  });

  it('aggregated: the blocks that changed', async () => {
    const res = await api(since('format=cidr&aggregate=true'));
    expect(String(res.body)).toBe(`-45.155.205.4/30\n+45.155.205.5/32\n+45.155.205.6/31\n+${FRESH}/32\n`);
  });

  it('the same ETag rules: 304 for the current tag, an empty delta from the current list', async () => {
    const current = (await api('/blacklist?format=json&confidence=50')).headers.get('etag')!;
    const unchanged = await api(since('format=json'), { headers: { 'If-None-Match': current } });
    expect(unchanged.status).toBe(304);
    const empty = await api(`/blacklist?format=json&confidence=50&since=${encodeURIComponent(current)}`);
    expect(empty.body.data).toEqual({ added: [], removed: [] });
    const weak = await api(`/blacklist?format=txt&confidence=50&since=${encodeURIComponent(`W/${before['format=txt']}`)}`);
    expect(weak.status).toBe(200);
    expect(String(weak.body)).toBe(`-${BLOCK[0]}\n+${FRESH}\n`);
  });

  it('410 Gone for a tag of other parameters, an unknown one, or one no longer kept', async () => {
    const otherParameters = await api(`/blacklist?format=json&confidence=60&since=${encodeURIComponent(before['format=json']!)}`);
    expect(otherParameters.status).toBe(410);
    expect(otherParameters.body).toMatchObject({ meta: { success: false, code: 410 }, code: 'snapshot_expired', data: null });
    expect((await api('/blacklist?since=%22bl-0000000000000000%22')).status).toBe(410);
    expect((await api('/blacklist?since=whatever')).status).toBe(400);
    // Three more regenerations (the tests keep 3 earlier snapshots): the first list goes.
    for (const ip of ['185.220.101.40', '185.220.101.41', '185.220.101.42']) {
      await reportFromAccounts(s, [ip], { reporters: 6 });
      await regenerate();
    }
    expect((await api(since('format=json'))).status).toBe(410);
  });
});
