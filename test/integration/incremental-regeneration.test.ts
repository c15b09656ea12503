import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots, DEFAULT_FULL_EVERY_MS, type RegenerationResult } from '../../src/blacklist/repository.js';
import { CATALOGUE_TTL_MS, CategoryService } from '../../src/categories/service.js';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { runCli } from '../support/cli.js';
import { expectSchema } from '../support/contract.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The incremental regeneration (issue 27 item 3) against the full one. Random operations go
 * through the API and the operator's tools on one server; after each, that server regenerates
 * incrementally, its regeneration inputs (ip_stats and the whitelist) are copied into a second
 * database, which regenerates in full, and the two snapshots must be the same: addresses,
 * scores, order, content hash and score positions.
 */
let s: TestServer;
let twin: TestServer;
const DAY = 86_400_000;
const CUSTOM = 100;
const IPS = Array.from({ length: 36 }, (_, i) => `45.155.${200 + (i % 4)}.${10 + i}`);
const reporters: { key: string; accountId: number }[] = [];
let feedbackKeys: string[] = [];

const api = (path: string, o: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${path}`, o);

/** A small seeded generator (mulberry32): a failing sequence can be replayed from its seed. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]! };
}

beforeAll(async () => {
  s = await startTestServer();
  twin = await startTestServer({ clock: s.clock });
  s.clock.set('2026-06-15T12:00:00Z');
  await new CategoryService(s.orm.em, s.clock).upsertCustom({ id: CUSTOM, name: 'Lab probe', description: 'the test category', severity: 3 });
  s.clock.advance(CATALOGUE_TTL_MS + 1_000); // the servers' catalogues see it
  for (let i = 0; i < 8; i++) reporters.push(await s.createKey('enterprise'));
  feedbackKeys = await Promise.all([0, 1, 2].map(async () => (await s.createKey('contributor')).key));
});
afterAll(async () => {
  await twin?.close();
  await s?.close();
});

/** The inputs of a regeneration copied from the server to its twin, as they are (floats exact). */
async function copyInputs(): Promise<void> {
  const { rows: [data] } = await s.pool.query<{ stats: string | null; whitelist: string | null }>(
    'select (select json_agg(t)::text from ip_stats t) as stats, (select json_agg(w)::text from whitelist w) as whitelist',
  );
  await twin.pool.query('delete from ip_stats');
  await twin.pool.query('delete from whitelist');
  if (data!.stats) await twin.pool.query('insert into ip_stats select * from json_populate_recordset(null::ip_stats, $1::json)', [data!.stats]);
  if (data!.whitelist) await twin.pool.query('insert into whitelist select * from json_populate_recordset(null::whitelist, $1::json)', [data!.whitelist]);
}

/** A snapshot of a server (by default its current one), whole. */
async function snapshotOf(server: TestServer, id?: number) {
  const { rows: [head] } = await server.pool.query<{ id: number; content_hash: string; score_positions: number[]; entry_count: number; stats: unknown }>(
    'select id, content_hash, score_positions, entry_count, stats from blacklist_snapshots where id = coalesce($1, (select max(id) from blacklist_snapshots))',
    [id ?? null],
  );
  const { rows: entries } = await server.pool.query(
    `select ip, score, last_reported_at, total_reports, categories, country_code, refresh_phase
       from blacklist_entries e
      where e.from_snapshot <= $1 and (e.until_snapshot is null or e.until_snapshot > $1)
      order by score desc, last_reported_at desc, ip`,
    [head!.id],
  );
  const { id: _id, ...rest } = head!;
  return { ...rest, entries };
}

describe('the incremental regeneration', () => {
  it('makes, after every random change, the snapshot a full regeneration makes', { timeout: 300_000 }, async () => {
    const seed = Number(process.env.TRS_EQUIVALENCE_SEED ?? Date.now() % 1_000_000);
    const r = random(seed);
    const incremental = blacklistSnapshots(s.pool, s.clock);
    const full = blacklistSnapshots(twin.pool, s.clock);
    const first = await incremental.regenerate();
    expect(first.full).toBe(true); // nothing scored yet
    const done: Record<string, number> = {};
    let rescored = 0;
    let listed = 0;
    let byDecay = 0;
    let previous = { id: first.snapshotId, content: await snapshotOf(s) };
    // After the first reports, every kind once in a random order (left to chance, one of them
    // was missing from 54 picks in ~2% of the runs, failing the check below), then random picks.
    const once = ['report', 'bulk', 'feedback', 'whitelist', 'unwhitelist', 'severity', 'clear', 'clock'];
    for (let step = 0; step < 60; step++) {
      const kind =
        step < 6
          ? 'report'
          : once.length
            ? once.splice(r.int(once.length), 1)[0]!
            : r.pick(['report', 'report', 'bulk', 'feedback', 'whitelist', 'unwhitelist', 'severity', 'clear', 'clock', 'clock']);
      done[kind] = (done[kind] ?? 0) + 1;
      const ip = r.pick(IPS);
      if (kind === 'report') {
        for (let n = 1 + r.int(4); n > 0; n--) {
          const reporter = r.pick(reporters);
          const res = await api('/report', { key: reporter.key, json: { ip: r.pick(IPS), categories: [r.pick([14, 18, 22, CUSTOM])] } });
          expect(res.status).toBe(200);
        }
      } else if (kind === 'bulk') {
        const lines = Array.from({ length: 2 + r.int(6) }, () => `${r.pick(IPS)},${r.pick([15, 21, CUSTOM])},bulk`);
        const res = await api('/bulk-report', { key: r.pick(reporters).key, json: { csv: lines.join('\n') } });
        expect(res.status).toBe(200);
      } else if (kind === 'feedback') {
        const res = await api('/whitelist', { key: r.pick(feedbackKeys), json: { ipAddress: ip, reason: 'our customer' } });
        expect([200, 201]).toContain(res.status);
      } else if (kind === 'whitelist') {
        await new Whitelist(s.orm.em).add(r.next() < 0.5 ? ip : `${ip.split('.').slice(0, 3).join('.')}.0/28`, 'test');
      } else if (kind === 'unwhitelist') {
        const ranges = await new Whitelist(s.orm.em).list();
        if (ranges.length) await new Whitelist(s.orm.em).remove(r.pick(ranges).range);
      } else if (kind === 'severity') {
        await new CategoryService(s.orm.em, s.clock).upsertCustom({ id: CUSTOM, name: 'Lab probe', description: 'the test category', severity: 1 + r.int(10) });
      } else if (kind === 'clear') {
        const reporter = r.pick(reporters);
        const res = await call(s.origin, `/abuseipdb/api/v2/clear-address?ipAddress=${ip}`, { method: 'DELETE', headers: { Key: reporter.key, Accept: 'application/json' } });
        expect(res.status).toBe(200);
      } else {
        // From minutes to weeks: across the thresholds of the decay and of the recency weight.
        s.clock.advance(r.pick([5 * 60_000, 3 * 3_600_000, DAY, 4 * DAY, 15 * DAY]) + r.int(3_600_000));
      }
      s.clock.advance(1_000 + r.int(60_000));

      const { rows: [noted] } = await s.pool.query<{ n: number }>('select count(distinct ip)::int as n from blacklist_dirty');
      const result: RegenerationResult = await incremental.regenerate();
      expect(result.full, `step ${step} (seed ${seed})`).toBe(false);
      await copyInputs();
      const reference = await full.regenerate(undefined, { full: true });
      expect(reference.full).toBe(true);
      expect(await snapshotOf(s), `step ${step}: ${kind} (seed ${seed})`).toEqual(await snapshotOf(twin));
      // The snapshot before stays as it was (entries are versions shared between snapshots).
      expect(await snapshotOf(s, previous.id), `step ${step}: the snapshot before`).toEqual(previous.content);
      previous = { id: result.snapshotId, content: await snapshotOf(s) };
      rescored += result.rescored;
      listed += reference.rescored;
      if (result.rescored > noted!.n) byDecay++;
    }
    // Every kind of change was made, the work followed the change, and decay alone rescored some.
    expect(Object.keys(done).sort()).toEqual(['bulk', 'clear', 'clock', 'feedback', 'report', 'severity', 'unwhitelist', 'whitelist']);
    expect(rescored).toBeLessThan(listed / 2);
    expect(byDecay).toBeGreaterThan(0);
    // The list as served is the incremental one, valid against the contract.
    const list = await api('/blacklist?confidenceMinimum=0&limit=1000', { key: reporters[0]!.key });
    expect(list.status).toBe(200);
    expectSchema('BlacklistList', list.body);
  });

  it('keeps the snapshot, unread, when nothing changed, and rescores nothing', async () => {
    const snapshots = blacklistSnapshots(s.pool, s.clock);
    const before = await snapshots.regenerate();
    const again = await snapshots.regenerate();
    expect(again).toMatchObject({ full: false, changed: false, rescored: 0, snapshotId: before.snapshotId, entries: before.entries });
  });

  it('runs a full pass on schedule once the last one is a day old, and when the clock went back', async () => {
    const snapshots = blacklistSnapshots(s.pool, s.clock);
    await snapshots.regenerate(undefined, { full: true });
    s.clock.advance(60 * 60_000);
    expect((await snapshots.regenerateIfDue(15 * 60_000))!.full).toBe(false);
    s.clock.advance(DEFAULT_FULL_EVERY_MS);
    expect((await snapshots.regenerateIfDue(15 * 60_000))!.full).toBe(true);
    s.clock.advance(-60 * 60_000);
    expect((await snapshots.regenerate()).full).toBe(true);
  });

  it('trs blacklist regenerate: incremental, or --full', { timeout: 120_000 }, async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI is a second process on the database
    const env = { ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn' };
    const forced = await runCli(env, 'blacklist', 'regenerate', '--full', '--json');
    expect(forced.code).toBe(0);
    expect(JSON.parse(forced.out)).toMatchObject({ full: true, rescored: expect.any(Number) });
    const plain = await runCli(env, 'blacklist', 'regenerate');
    expect(plain.code).toBe(0);
    expect(plain.out).toMatch(/\(snapshot \d+, \d+ addresses; incremental, \d+ scored\)|incremental, \d+ scored\)/);
  });
});
