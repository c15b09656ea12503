import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { withDatabase } from '../support/global-setup.js';
import { startPrivatePostgres } from '../support/processes.js';
import { eventually } from '../support/relay-fakes.js';
import { replicaMissing, startReplica } from '../support/replica.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { startTestServerOn } from '../support/server.js';
import { requireTools } from '../support/tools.js';

/**
 * Issue 27, item 4, failover: the primary crashes under report load, its streaming replica is
 * promoted (`pg_ctl promote`) and the endpoint the server uses (a TCP proxy standing for the
 * DNS name, virtual IP or HAProxy a failover tool moves) is pointed at it. Replication is
 * synchronous (`synchronous_standby_names = '*'`), as docs/scaling.md says it must be for an
 * acknowledged report to survive the loss of the primary. Shown: every answer is 200 or 503
 * with Retry-After (no 500, nothing hangs), the server reconnects by itself and takes reports
 * on the new primary, and every report answered 200 is there exactly once.
 */
const missing = replicaMissing();
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

const DB = 'trs_failover';

async function sql<R extends pg.QueryResultRow>(url: string, text: string, values: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe('failover', () => {
  it('promotes the replica under report load: 200 or 503 with Retry-After, nothing acknowledged lost', async (ctx) => {
    requireTools(ctx, missing);
    const cluster = await startPrivatePostgres();
    if (!cluster) throw new Error('the private PostgreSQL could not be started');
    cleanups.push(() => cluster.stop());
    const primaryPort = Number(new URL(cluster.url).port);
    const primaryUrl = withDatabase(cluster.url, DB);
    const migrated = await connectDatabase({ databaseUrl: primaryUrl, dataDir: '.', dbPoolMax: 2 }, pino({ level: 'silent' }), { migrate: 'apply' });
    await migrated.close();
    const replica = await startReplica(primaryPort);
    cleanups.push(() => replica.remove());
    await eventually(async () => (await sql<{ n: number }>(cluster.url, "select count(*)::int as n from pg_stat_replication where state = 'streaming'"))[0]!.n === 1, 20_000);
    await sql(cluster.url, "alter system set synchronous_standby_names = '*'");
    await sql(cluster.url, 'select pg_reload_conf()');
    await eventually(async () => (await sql<{ n: number }>(cluster.url, "select count(*)::int as n from pg_stat_replication where sync_state = 'sync'"))[0]!.n === 1, 20_000);

    const proxy = await startTcpProxy('127.0.0.1', primaryPort);
    cleanups.push(() => proxy.close());
    const endpoint = `postgres://postgres@127.0.0.1:${proxy.port}/${DB}`;
    const s = await startTestServerOn({ url: endpoint, embedded: false, drop: async () => undefined });
    cleanups.push(() => s.close());
    s.clock.set(new Date());
    const { key } = await s.createKey('enterprise');

    let stopped = false;
    const outcomes: { ip: string; status: number; retryAfter: string | null; at: number }[] = [];
    const worker = async (w: number) => {
      for (let i = 0; !stopped; i++) {
        const address = `45.${90 + w}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`;
        const res = await fetch(`${s.base}/report`, {
          method: 'POST',
          headers: { 'X-Key': key, 'content-type': 'application/json' },
          body: JSON.stringify({ ip: address, categories: [18] }),
          signal: AbortSignal.timeout(30_000),
        }).catch(() => undefined);
        await res?.arrayBuffer();
        outcomes.push({ ip: address, status: res?.status ?? 0, retryAfter: res?.headers.get('retry-after') ?? null, at: Date.now() });
        if (res?.status === 503) await new Promise((r) => setTimeout(r, 100));
      }
    };
    const running = Promise.all(Array.from({ length: 6 }, (_, w) => worker(w)));
    await new Promise((r) => setTimeout(r, 1_500));
    // The primary crashes; the failover tool promotes the replica and moves the endpoint.
    const crashAt = Date.now();
    await proxy.cut();
    cluster.stop();
    replica.promote();
    proxy.retarget(replica.port);
    await proxy.restore();
    const movedAt = Date.now();
    // Until the server takes reports again on the new primary, then a while more.
    await eventually(() => outcomes.some((o) => o.at > movedAt && o.status === 200), 30_000);
    await new Promise((r) => setTimeout(r, 1_500));
    stopped = true;
    await running;

    const tally = outcomes.reduce<Record<number, number>>((t, o) => ({ ...t, [o.status]: (t[o.status] ?? 0) + 1 }), {});
    console.log(`failover: ${outcomes.length} reports; ${JSON.stringify(tally)}; endpoint moved ${movedAt - crashAt} ms after the crash`);
    expect(Object.keys(tally).map(Number).sort()).toEqual(expect.arrayContaining([200]));
    for (const o of outcomes) {
      expect([200, 503]).toContain(o.status);
      if (o.status === 503) expect(o.retryAfter).toBe('5');
    }
    expect(outcomes.filter((o) => o.at < crashAt && o.status === 200).length).toBeGreaterThan(10);
    expect(outcomes.filter((o) => o.at > movedAt && o.status === 200).length).toBeGreaterThan(0);

    // Every acknowledged report is on the promoted server, exactly once.
    const acknowledged = outcomes.filter((o) => o.status === 200).map((o) => o.ip);
    const stored = await sql<{ ip: string; n: number }>(replica.url(DB), 'select ip, count(*)::int as n from reports where ip = any($1::text[]) group by ip', [acknowledged]);
    const counts = new Map(stored.map((r) => [r.ip, r.n]));
    const lost = acknowledged.filter((ip) => !counts.has(ip));
    expect(lost).toEqual([]);
    expect(new Set(acknowledged).size).toBe(acknowledged.length);
    expect(stored.every((r) => r.n === 1)).toBe(true);
  }, 180_000);
});
