import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { connectDatabase } from '../../src/db/connect.js';
import type { ReplicaPool } from '../../src/db/replicas.js';
import { bouncersOf } from '../support/crowdsec.js';
import { withDatabase } from '../support/global-setup.js';
import { call } from '../support/http.js';
import { startPrivatePostgres } from '../support/processes.js';
import { eventually } from '../support/relay-fakes.js';
import { replicaMissing, startReplica, type Replica } from '../support/replica.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServerOn, type TestServer } from '../support/server.js';
import { requireTools } from '../support/tools.js';

/**
 * Issue 27, item 4: read replicas (DATABASE_REPLICA_URL). A real streaming replica
 * (`pg_basebackup -R`) of a PostgreSQL server of the test's own (the machine's PostgreSQL 15
 * binaries, initdb in a temporary folder, so the shared server's pg_hba.conf is left alone):
 * the lag-tolerant reads go there, writes and charges stay on the primary, a snapshot the
 * replica has not replayed yet is read on the primary, and when the replica dies every read
 * still answers 200 from the primary, going back to the replica once it is up again.
 */
const missing = replicaMissing();
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const DB = 'trs_replica';
let primaryUrl: string;
let replica: Replica;
let s: TestServer;

async function sql<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

/** Waits until the replica has replayed everything the primary has written so far. */
async function caughtUp(): Promise<void> {
  const lsn = (await sql<{ lsn: string }>(primaryUrl, 'select pg_current_wal_lsn()::text as lsn'))[0]!.lsn;
  await eventually(async () => (await sql<{ ok: boolean }>(replica.url(DB), 'select pg_last_wal_replay_lsn() >= $1::pg_lsn as ok', [lsn]))[0]!.ok, 20_000);
}

/** The statements the server's replica connections ran last (pg_stat_activity on the replica). */
async function replicaQueries(): Promise<string[]> {
  const rows = await sql<{ query: string }>(replica.url(DB), "select query from pg_stat_activity where application_name = 'trs-replica' and datname = $1", [DB]);
  return rows.map((r) => r.query);
}

beforeAll(async () => {
  if (missing) return;
  const cluster = await startPrivatePostgres();
  if (!cluster) throw new Error('the private PostgreSQL could not be started');
  cleanups.push(() => cluster.stop());
  primaryUrl = withDatabase(cluster.url, DB);
  // Created and migrated on the primary, then copied by pg_basebackup.
  const migrated = await connectDatabase({ databaseUrl: primaryUrl, dataDir: '.', dbPoolMax: 2 }, pino({ level: 'silent' }), { migrate: 'apply' });
  await migrated.close();
  replica = await startReplica(Number(new URL(cluster.url).port));
  cleanups.push(() => replica.remove());
  s = await startTestServerOn({ url: primaryUrl, embedded: false, drop: async () => undefined }, { replicaUrls: [replica.url(DB)] });
  cleanups.push(() => s.close());
  s.clock.set(new Date());
}, 120_000);

const api = (path: string, key?: string) => call(s.base, path, { key });
const counts = () => ({ ...(s.replicas as ReplicaPool).counts });

describe('read replicas', () => {
  let key: string;
  const ips = ['45.80.1.1', '45.80.1.2', '45.80.1.3'];

  it("sends blacklist downloads, a bouncer's pull, statistics, trends, search and the attack map to the replica; writes to the primary", async (ctx) => {
    requireTools(ctx, missing);
    key = (await s.createKey('enterprise')).key;
    await reportFromAccounts(s, ips, { reporters: 3 });
    await blacklistSnapshots(s.pool, s.clock).regenerate();
    const bouncer = (await bouncersOf(s).add('firewall', { confidence: 1 })).key;
    await caughtUp();

    const before = counts();
    const pulled = await call(s.origin, '/crowdsec/v1/decisions/stream?startup=true', { headers: { 'X-Api-Key': bouncer, 'User-Agent': 'crowdsec-firewall-bouncer/v0.0.25' } });
    expect(pulled.status).toBe(200);
    expect((pulled.body.new ?? []).map((d: { value: string }) => d.value).sort()).toEqual(ips);
    const answers = await Promise.all([
      api('/blacklist?format=txt&confidence=0&confidenceMinimum=1', key),
      api('/blacklist-detailed?confidenceMinimum=1', key),
      api('/statistics', key),
      api('/trends?period=24h', key),
      api('/attack-map-data', key),
      api('/search-public?q=45.80.'),
      api('/blacklist-stats', key),
    ]);
    for (const answer of answers) expect(answer.status, JSON.stringify(answer.body).slice(0, 300)).toBe(200);
    expect(String(answers[0]!.body).trim().split('\n').sort()).toEqual(ips);
    const after = counts();
    expect(after.replica - before.replica).toBeGreaterThanOrEqual(8);
    expect(after.fallback).toBe(before.fallback);
    // The replica's own view: the server's connections there ran the reads.
    const queries = (await replicaQueries()).join('\n');
    expect(queries).toMatch(/blacklist_entries|category|ip_stats|snapshot|connections/);

    // A write goes to the primary (the replica is read-only: it would refuse it).
    const report = await call(s.base, '/report', { key, json: { ip: '45.80.1.4', categories: [18] } });
    expect(report.status).toBe(200);
  }, 60_000);

  it('reads a snapshot the replica has not replayed yet on the primary (a read that must see its own write)', async (ctx) => {
    requireTools(ctx, missing);
    await sql(replica.url(DB), 'select pg_wal_replay_pause()');
    try {
      await reportFromAccounts(s, ['45.80.2.1'], { reporters: 3 });
      await blacklistSnapshots(s.pool, s.clock).regenerate();
      const before = counts();
      const list = await api('/blacklist?format=txt&confidence=0&confidenceMinimum=1', key);
      expect(list.status).toBe(200);
      // The head (charged on the primary) names the new snapshot; its entries come from the primary.
      expect(String(list.body).trim().split('\n')).toContain('45.80.2.1');
      // The replica was asked whether it has the snapshot, and the entries read on the primary.
      expect(counts()).toEqual({ ...before, behind: before.behind + 1 });
    } finally {
      await sql(replica.url(DB), 'select pg_wal_replay_resume()');
    }
    await caughtUp();
    // Once replayed, the replica serves that snapshot (another filter: the rendered list above is cached).
    const before = counts();
    const replayed = await api('/blacklist?format=txt&confidence=0&confidenceMinimum=2', key);
    expect(replayed.status).toBe(200);
    expect(String(replayed.body).trim().split('\n')).toContain('45.80.2.1');
    expect(counts()).toEqual({ ...before, replica: before.replica + 1 });
  }, 60_000);

  it('answers 200 from the primary when the replica dies, and goes back to it once it is up', async (ctx) => {
    requireTools(ctx, missing);
    replica.kill();
    const before = counts();
    for (let round = 0; round < 3; round++) {
      const answers = await Promise.all([
        api('/blacklist?format=txt&confidence=0&confidenceMinimum=1', key),
        api('/statistics', key),
        api('/trends?period=24h', key),
        api('/attack-map-data', key),
        api('/search-public?q=45.80.'),
      ]);
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      expect(String(answers[0]!.body).trim().split('\n')).toContain('45.80.2.1');
    }
    expect(counts().fallback - before.fallback).toBeGreaterThanOrEqual(15);
    // Once set aside, the dead replica is not asked again until its retry time: no waits per request.
    expect(counts().replica).toBe(before.replica);
    // The operator sees it in /metrics.
    const metrics = await (await fetch(`${s.origin}/metrics`)).text();
    const served = (by: string) => Number(new RegExp(`^trs_db_replica_reads_total\\{answered_by="${by}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
    expect(served('primary')).toBe(counts().fallback);
    expect(served('replica')).toBe(counts().replica);
    expect(served('primary_behind')).toBe(counts().behind);

    replica.start();
    await eventually(async () => {
      const again = counts().replica;
      expect((await api('/statistics', key)).status).toBe(200);
      return counts().replica > again;
    }, 20_000);
  }, 60_000);
});
