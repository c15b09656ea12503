import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { expectSchema } from '../support/contract.js';
import { bouncersOf } from '../support/crowdsec.js';
import { call } from '../support/http.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The CrowdSec bouncer API: decisions from the blacklist snapshot, per bouncer, as a stream of
 * what changed since each bouncer's previous pull, and lookups by address or range.
 */
let s: TestServer;
let key: string;
const LISTED = ['45.155.205.7', '45.155.205.90', '2a0d:5600:24::5'];
const FIREWALL_BOUNCER = 'crowdsec-firewall-bouncer/v0.0.25';

const regenerate = () => blacklistSnapshots(s.pool, s.clock, 3).regenerate();
const pull = (query = '', apiKey = key, base = '/crowdsec/v1') =>
  call(s.origin, `${base}/decisions/stream${query}`, { headers: { 'X-Api-Key': apiKey, 'User-Agent': FIREWALL_BOUNCER } });
const lookup = (query: string, apiKey = key) => call(s.origin, `/crowdsec/v1/decisions${query}`, { headers: { 'X-Api-Key': apiKey } });
const values = (decisions: any[] | null) => (decisions ?? []).map((d) => d.value).sort();


/** Seconds of a Go duration string. */
const secondsOf = (d: string) => {
  const m = /^(?:(\d+)h)?(?:(\d+)m)?(\d+)s$/.exec(d)!;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3]);
};

beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
  await reportFromAccounts(s, LISTED);
  await regenerate();
  key = (await bouncersOf(s).add('firewall', { confidence: 50 })).key;
});
afterAll(async () => {
  await s?.close();
});

describe('GET /crowdsec/v1/decisions/stream', () => {
  it('gives a starting bouncer every decision, as CrowdSec decisions', async () => {
    const res = await pull('?startup=true');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-encoding')).toBeNull();
    expectSchema('DecisionsStreamResponse', res.body, 'crowdsec');
    expect(values(res.body.new)).toEqual([...LISTED].sort());
    expect(res.body.deleted).toEqual([]);
    for (const d of res.body.new) {
      expect(d).toMatchObject({ origin: 'trs', type: 'ban', scope: 'Ip', scenario: 'trs/brute-force,ssh' });
      expect(secondsOf(d.duration)).toBeGreaterThan(12 * 3600);
      expect(secondsOf(d.duration)).toBeLessThanOrEqual(24 * 3600);
    }
    // The pull is remembered with the bouncer's user agent.
    const [bouncer] = await bouncersOf(s).list();
    expect(bouncer).toMatchObject({ name: 'firewall', userAgent: FIREWALL_BOUNCER, lastIp: '127.0.0.1', lastSnapshotId: expect.any(Number) });
  });

  it('answers a later pull with nothing when nothing changed (the stock bouncer sends `?` alone)', async () => {
    s.clock.advance(10_000);
    const res = await pull('?');
    expect(res.body).toEqual({ new: [], deleted: [] });
  });

  it('reports what a regeneration added and what left the list', async () => {
    await reportFromAccounts(s, ['193.32.162.10']);
    await new Whitelist(s.orm.em).add(LISTED[1]!, 'a customer');
    s.clock.advance(10_000);
    await regenerate();
    const res = await pull();
    expectSchema('DecisionsStreamResponse', res.body, 'crowdsec');
    expect(values(res.body.new)).toEqual(['193.32.162.10']);
    expect(values(res.body.deleted)).toEqual([LISTED[1]]);
    expect(res.body.deleted[0]).toMatchObject({ duration: '0s', scope: 'Ip', type: 'ban' });
    s.clock.advance(10_000);
    expect((await pull()).body).toEqual({ new: [], deleted: [] });
    await new Whitelist(s.orm.em).remove(LISTED[1]!);
  });

  it('renews every decision once in 12 hours, as a deletion and a new decision of the same answer', async () => {
    const renewed = new Map<string, number>();
    for (let hour = 0; hour < 12; hour++) {
      s.clock.advance(3600_000);
      const res = await pull();
      expect(values(res.body.new)).toEqual(values(res.body.deleted));
      for (const d of res.body.new) {
        renewed.set(d.value, (renewed.get(d.value) ?? 0) + 1);
        const old = res.body.deleted.find((x: any) => x.value === d.value);
        expect(old.id).not.toBe(d.id);
        // Right after its renewal a decision holds a whole cycle and up to an hour more.
        expect(secondsOf(d.duration)).toBeGreaterThan(23 * 3600);
      }
    }
    expect([...renewed.keys()].sort()).toEqual(['193.32.162.10', ...LISTED.filter((ip) => ip !== LISTED[1])].sort());
    expect([...renewed.values()].every((n) => n === 1)).toBe(true);
  });

  it('renews everything for a bouncer away a whole cycle: all it held deleted, all listed new', async () => {
    s.clock.advance(13 * 3600_000);
    const res = await pull();
    expectSchema('DecisionsStreamResponse', res.body, 'crowdsec');
    expect(values(res.body.deleted)).toEqual(values(res.body.new));
    expect(res.body.new.length).toBeGreaterThanOrEqual(3);
    for (const d of res.body.new) expect(res.body.deleted.find((x: any) => x.value === d.value).id).not.toBe(d.id);
  });

  it('applies the bouncer filters: scopes, origins, scenarios containing and not containing', async () => {
    const startup = async (q: string) => values((await pull(`?startup=true&${q}`)).body.new);
    const all = await startup('');
    expect(all.length).toBeGreaterThanOrEqual(3);
    expect(await startup('scopes=ip,range')).toEqual(all);
    expect(await startup('scopes=Ip')).toEqual(all);
    expect(await startup('scopes=range')).toEqual([]);
    expect(await startup('origins=crowdsec,cscli')).toEqual([]);
    expect(await startup('origins=crowdsec,trs')).toEqual(all);
    expect(await startup('scenarios_containing=SSH')).toEqual(all);
    expect(await startup('scenarios_containing=http,sqli')).toEqual([]);
    expect(await startup('scenarios_not_containing=ssh')).toEqual([]);
    expect(await startup('scenarios_not_containing=http')).toEqual(all);
    // What recent client libraries add is taken and ignored.
    expect(await startup('community_pull=false&additional_pull=false')).toEqual(all);
  });

  it('follows the operator\'s choice: a higher minimum deletes what falls below it on the next pull', async () => {
    const other = await bouncersOf(s).add('web', { confidence: 50, categories: [21] });
    const web = await pull('?startup=true', other.key);
    expect(web.body.new).toEqual([]);
    const scores = (await call(s.origin, '/api/v2/blacklist?confidence=0', { key: (await s.createKey('contributor')).key })).body.data;
    const lowest = Math.min(...scores.map((e: any) => e.abuseConfidencePercentage));
    const lowestIps = scores.filter((e: any) => e.abuseConfidencePercentage === lowest).map((e: any) => e.ip).sort();
    await pull('?startup=true');
    await bouncersOf(s).set('firewall', { confidence: lowest + 1 });
    const after = await pull();
    expect(values(after.body.deleted)).toEqual(lowestIps);
    expect(after.body.new).toEqual([]);
    await bouncersOf(s).set('firewall', { confidence: 50 });
    expect(values((await pull()).body.new)).toEqual(lowestIps);
  });

  it('sends the whole list again when the bouncer\'s base snapshot is no longer kept', async () => {
    const late = await bouncersOf(s).add('late', { confidence: 50 });
    await pull('?startup=true', late.key);
    for (const ip of ['185.220.101.40', '185.220.101.41', '185.220.101.42', '185.220.101.43']) {
      await reportFromAccounts(s, [ip], { reporters: 6 });
      await regenerate();
    }
    const res = await pull('', late.key);
    expect(values(res.body.new)).toEqual(values((await pull('?startup=true')).body.new));
    expect(res.body.deleted).toEqual([]);
  });

  it('answers under the LAPI\'s own base /v1 too', async () => {
    const res = await pull('?startup=true', key, '/v1');
    expect(res.status).toBe(200);
    expect(res.body.new.length).toBeGreaterThan(0);
  });

  it('gives a restarting bouncer (startup=true) the whole list, and as deleted what it held that left since its last pull', async () => {
    // A bouncer that restarts drops nothing it had put in the firewall (the stock bouncers keep
    // their sets): an address that left the list while it was down must come as a deletion.
    const restarting = await bouncersOf(s).add('restarting', { confidence: 50 });
    const first = await pull('?startup=true', restarting.key);
    const held = values(first.body.new);
    expect(held).toContain(LISTED[0]);
    await new Whitelist(s.orm.em).add(LISTED[0]!, 'left while the bouncer was down');
    try {
      s.clock.advance(10_000);
      await regenerate();
      const res = await pull('?startup=true', restarting.key);
      expect(res.status).toBe(200);
      expectSchema('DecisionsStreamResponse', res.body, 'crowdsec');
      expect(values(res.body.new)).toEqual(held.filter((ip) => ip !== LISTED[0]));
      expect(values(res.body.deleted)).toEqual([LISTED[0]]);
      expect(res.body.deleted[0]).toMatchObject({ origin: 'trs', type: 'ban', scope: 'Ip', value: LISTED[0], duration: '0s' });
      // Its id is the one the bouncer was given: that is the decision it removes.
      expect(res.body.deleted[0].id).toBe(first.body.new.find((d: any) => d.value === LISTED[0]).id);
    } finally {
      await new Whitelist(s.orm.em).remove(LISTED[0]!);
      s.clock.advance(10_000);
      await regenerate();
    }
  });
});

describe('GET /crowdsec/v1/decisions', () => {
  it('answers the decisions about an address, or null', async () => {
    const listed = await lookup(`?ip=${LISTED[0]}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual([expect.objectContaining({ value: LISTED[0], scope: 'Ip', type: 'ban', origin: 'trs' })]);
    expect((await lookup('?ip=8.8.8.8')).body).toBeNull();
    expect((await lookup(`?scope=ip&value=${LISTED[2]}`)).body).toEqual([expect.objectContaining({ value: LISTED[2] })]);
    expect((await lookup(`?ip=${encodeURIComponent(LISTED[2]!)}`)).body).toEqual([expect.objectContaining({ value: LISTED[2] })]);
    expect((await lookup(`?ip=${LISTED[0]}&type=captcha`)).body).toBeNull();
  });

  it('answers by range: decisions inside it with contains=false, none covering a whole range', async () => {
    const inside = await lookup('?range=45.155.205.0/24&contains=false');
    expect(values(inside.body)).toEqual([LISTED[0], LISTED[1]].sort());
    expect((await lookup('?range=45.155.205.0/24')).body).toBeNull();
    expect(values((await lookup(`?range=${LISTED[0]}/32`)).body)).toEqual([LISTED[0]]);
    // Decisions here are all of scope Ip: asking for Range ones, or others, finds none.
    expect((await lookup('?scope=range&value=45.155.205.0/25&contains=false')).body).toBeNull();
    expect((await lookup('?scope=country&value=NL')).body).toBeNull();
    expect((await lookup('?value=not-an-address')).body).toBeNull();
  });

  it('lists every decision without a target', async () => {
    const all = await lookup('');
    expect(all.status).toBe(200);
    expect(all.body.length).toBeGreaterThanOrEqual(4);
    expect((await lookup('?origins=crowdsec')).body).toBeNull();
  });

  it('refuses malformed values with 400 in the LAPI\'s shape', async () => {
    for (const q of ['?ip=1.2.3', '?range=1.2.3.0/33', '?ip=%20' + LISTED[0], '?contains=maybe', '?startup=1']) {
      const res = await lookup(q);
      expect(res.status, q).toBe(400);
      expect(res.body, q).toEqual({ message: expect.any(String) });
    }
  });
});

describe('bouncer keys', () => {
  it('refuses a missing, unknown or deleted key with 403 {"message": "access forbidden"}', async () => {
    for (const apiKey of ['', 'nope', `trsb_${'A'.repeat(43)}`, key.toUpperCase()]) {
      const res = await call(s.origin, '/crowdsec/v1/decisions/stream?startup=true', { headers: apiKey ? { 'X-Api-Key': apiKey } : {} });
      expect(res.status, apiKey).toBe(403);
      expect(res.body).toEqual({ message: 'access forbidden' });
    }
    const gone = await bouncersOf(s).add('gone');
    expect((await pull('?startup=true', gone.key)).status).toBe(200);
    expect(await bouncersOf(s).remove('gone')).toBe(true);
    expect((await pull('?startup=true', gone.key)).status).toBe(403);
    // An API key of /api/v2 is no bouncer key, nor the reverse.
    expect((await pull('?startup=true', (await s.createKey('enterprise')).key)).status).toBe(403);
    expect((await call(s.origin, '/api/v2/verify-key', { key })).status).toBe(401);
  });

  it('serves its document', async () => {
    const res = await call(s.origin, '/crowdsec/v1/openapi.json');
    expect(res.body.info.title).toMatch(/CrowdSec/);
    expect(Object.keys(res.body.paths).sort()).toEqual(['/decisions', '/decisions/stream']);
  });
});
