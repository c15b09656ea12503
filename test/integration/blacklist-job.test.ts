import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { BlacklistJob } from '../../src/blacklist/job.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** The scheduled regeneration: once per interval, once across processes, its lock inside its transaction. */
const INTERVAL = 15 * 60_000;
let s: TestServer;
let sibling: TestServer;
const jobOf = (server: TestServer) =>
  new BlacklistJob(blacklistSnapshots(server.pool, server.clock), INTERVAL, pino({ level: 'silent' }));
const snapshotCount = async () =>
  (await s.pool.query<{ n: number }>('select count(*)::int as n from blacklist_snapshots')).rows[0]!.n;

beforeAll(async () => {
  s = await startTestServer();
  sibling = await s.sibling();
});
afterAll(async () => {
  await sibling?.close();
  await s?.close();
});

describe('the blacklist job', () => {
  it('regenerates when due, on one process of two, then waits an interval', async () => {
    const results = await Promise.all([jobOf(s).runIfDue(), jobOf(sibling).runIfDue()]);
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await jobOf(s).runIfDue()).toBe(false); // checked just now
    s.clock.advance(INTERVAL - 1_000);
    expect(await jobOf(sibling).runIfDue()).toBe(false);
    s.clock.advance(1_000);
    expect(await jobOf(sibling).runIfDue()).toBe(true);
  });

  it('skips, without waiting, while another session holds the lock', async (ctx) => {
    if (s.db.embedded) return ctx.skip('the embedded database runs one transaction at a time: no second session can hold the lock');
    s.clock.advance(INTERVAL);
    const other = new pg.Client({ connectionString: s.db.url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select pg_advisory_xact_lock(7260112005)');
      const before = await snapshotCount();
      expect(await jobOf(s).runIfDue()).toBe(false);
      expect(await snapshotCount()).toBe(before);
      await other.query('commit');
      expect(await jobOf(s).runIfDue()).toBe(true);
    } finally {
      await other.end();
    }
  });

  it('makes a new snapshot once the list changes, served with the same ETag by every process', async () => {
    const { key } = await s.createKey('enterprise');
    s.clock.advance(INTERVAL);
    await jobOf(s).runIfDue();
    const before = await snapshotCount();
    await call(s.base, '/report', { key, json: { ip: '8.8.1.3', categories: [18] } });
    s.clock.advance(INTERVAL);
    expect((await Promise.all([jobOf(s).runIfDue(), jobOf(sibling).runIfDue()])).filter(Boolean)).toHaveLength(1);
    expect(await snapshotCount()).toBe(before + 1);
    const lists = await Promise.all([s, sibling].map((server) => call(server.base, '/blacklist?confidence=0', { key })));
    expect(lists[0]!.headers.get('etag')).toBe(lists[1]!.headers.get('etag'));
  });

  it('recovers by itself after a failed run: the next run tries again', async () => {
    const unreachable = new pg.Pool({ connectionString: 'postgres://nobody@127.0.0.1:1/none', max: 1, connectionTimeoutMillis: 2_000 });
    try {
      const broken = new BlacklistJob(blacklistSnapshots(unreachable, s.clock), INTERVAL, pino({ level: 'silent' }));
      await expect(broken.runIfDue()).rejects.toThrow();
    } finally {
      await unreachable.end();
    }
    s.clock.advance(INTERVAL);
    expect(await jobOf(s).runIfDue()).toBe(true);
  });
});
