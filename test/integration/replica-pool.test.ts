import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pool } from '../../src/db/pool.js';
import { replicaPool } from '../../src/db/replicas.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/processes.js';

/**
 * The replicas' pool (src/db/replicas.ts) on its own: which failures send a read to the primary,
 * which are the statement's own, and when a failed replica is asked again. The database of the
 * file stands for a replica; a port nothing listens on for one that is down.
 */
let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

/** A primary that answers every read with one row saying so. */
function fakePrimary() {
  const calls: unknown[] = [];
  const primary = {
    query: async (config: unknown) => (calls.push(config), { rows: [{ from: 'primary' }] }),
    connect: async () => {
      calls.push('connect');
      return { query: async () => ({ rows: [{ from: 'primary' }] }), on() {}, off() {}, release() {} };
    },
    totalCount: 0,
    idleCount: 0,
    waitingCount: 0,
  } as unknown as Pool;
  return { primary, calls };
}

describe('the replicas pool', () => {
  it('reads on a replica that answers, in turn, and lets a statement error through without asking the primary', async (ctx) => {
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const { primary, calls } = fakePrimary();
    const pool = replicaPool({ urls: [db.url, db.url], poolMax: 2, prepared: true, primary, logger: pino({ level: 'silent' }) });
    try {
      const { rows } = await pool.query<{ from: string }>({ name: 'replica-probe', text: "select 'replica' as from" });
      expect(rows).toEqual([{ from: 'replica' }]);
      await expect(pool.query('select * from no_such_table')).rejects.toMatchObject({ code: '42P01' });
      const client = await pool.connect();
      expect((await client.query<{ n: number }>('select 1 as n')).rows).toEqual([{ n: 1 }]);
      client.release();
      expect(calls).toEqual([]);
      expect(pool.counts).toEqual({ replica: 2, fallback: 0, behind: 0 }); // the failed statement is not a read served
    } finally {
      await pool.close();
    }
  });

  it('lends a replica connection only where the check holds there, else the primary', async (ctx) => {
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const { primary, calls } = fakePrimary();
    const pool = replicaPool({ urls: [db.url], poolMax: 2, prepared: true, primary, logger: pino({ level: 'silent' }) });
    try {
      const held = await pool.connectWhere({ text: 'select $1::int = 1 as ok', values: [1] });
      expect((await held.query<{ n: number }>('select 2 as n')).rows).toEqual([{ n: 2 }]);
      held.release();
      const behind = await pool.connectWhere({ text: 'select $1::int = 1 as ok', values: [0] });
      expect((await behind.query<{ from: string }>('select 1')).rows).toEqual([{ from: 'primary' }]);
      expect(calls).toEqual(['connect']);
      expect(pool.counts).toEqual({ replica: 1, fallback: 0, behind: 1 });
      // A check that is wrong SQL is the caller's error, not a replica's failure.
      await expect(pool.connectWhere({ text: 'select nothing_here', values: [] })).rejects.toMatchObject({ code: '42703' });
      expect(pool.counts).toEqual({ replica: 1, fallback: 0, behind: 1 });
    } finally {
      await pool.close();
    }
  });

  it('sends reads to the primary while a replica is down, and asks it again after the retry time', async () => {
    const { primary, calls } = fakePrimary();
    const down = `postgres://postgres@127.0.0.1:${await freePort()}/nothing`;
    const pool = replicaPool({ urls: [down], poolMax: 2, prepared: false, primary, logger: pino({ level: 'silent' }), retryMs: 300 });
    try {
      expect((await pool.query<{ from: string }>({ name: 'x', text: 'select 1' })).rows).toEqual([{ from: 'primary' }]);
      // Set aside: the next reads go straight to the primary, the replica is not dialled.
      const started = performance.now();
      for (let i = 0; i < 5; i++) await pool.query('select 1');
      await pool.connect();
      expect(performance.now() - started).toBeLessThan(100);
      expect(pool.counts).toEqual({ replica: 0, fallback: 7, behind: 0 });
      // The primary's pool gets the statement as it was (it drops names itself behind a pooler).
      expect(calls[0]).toEqual({ name: 'x', text: 'select 1' });
      await new Promise((r) => setTimeout(r, 350));
      const before = calls.length;
      await pool.query('select 1');
      expect(calls.length).toBe(before + 1); // tried the replica again, failed, fell back once more
      expect(pool.counts.fallback).toBe(8);
    } finally {
      await pool.close();
    }
  });
});
