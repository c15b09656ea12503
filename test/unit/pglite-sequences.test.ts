import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.js';

/**
 * The embedded PostgreSQL serves several connections from one PGlite session: one connection's
 * extended query (Parse, Bind, Execute, Sync) must not interleave with another's, or a Bind
 * meets the other connection's statement.
 */
let embedded: EmbeddedDatabase;
const clients: pg.Client[] = [];

beforeAll(async () => {
  // On disk, as the server runs it: writes reach the file system between messages, which is
  // where another connection's messages used to slip in.
  embedded = await startEmbedded(mkdtempSync(path.join(tmpdir(), 'trs-pglite-')));
  for (let i = 0; i < 4; i++) {
    const client = new pg.Client({ connectionString: embedded.url });
    await client.connect();
    clients.push(client);
  }
}, 60_000);
afterAll(async () => {
  for (const client of clients) await client.end().catch(() => undefined);
  await embedded?.stop();
});

describe('embedded PostgreSQL, several connections at once', () => {
  it("keeps each connection's extended queries whole", async () => {
    await clients[0]!.query('create table if not exists seq_probe (n int, m int, k int)');
    const queries = Array.from({ length: 400 }, (_, i) => {
      const client = clients[i % 3]!;
      // Writes of different shapes, so that a Bind against another's Parse fails.
      return i % 2
        ? client.query<{ v: number }>('insert into seq_probe values ($1, $2, $3) returning n + m + k as v', [i, 1, 1]).then((r) => r.rows[0]!.v === i + 2)
        : client.query<{ v: number }>('insert into seq_probe (n) values ($1) returning n as v', [i]).then((r) => r.rows[0]!.v === i);
    });
    // And transactions on another connection meanwhile: their messages are kept together, and
    // must not be slipped between another connection's Parse and Bind either.
    const transactions = (async () => {
      const client = clients[3]!;
      for (let i = 0; i < 40; i++) {
        await client.query('begin');
        await client.query('insert into seq_probe values ($1, $2, $3)', [i, 2, 3]);
        await client.query('commit');
      }
      return true;
    })();
    const results = await Promise.allSettled([...queries, transactions]);
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    expect(results.every((r) => r.status === 'fulfilled' && r.value)).toBe(true);
  }, 60_000);

  it('keeps a transaction to its connection while others query', async () => {
    const [a, b] = clients as [pg.Client, pg.Client];
    await a.query('create temporary table t (n int)');
    await a.query('begin');
    const others = Array.from({ length: 20 }, (_, i) => b.query('select $1::int as v', [i]));
    for (let i = 0; i < 20; i++) await a.query('insert into t values ($1)', [i]);
    const { rows } = await a.query<{ n: number }>('select count(*)::int as n from t');
    await a.query('commit');
    expect(rows[0]!.n).toBe(20);
    expect((await Promise.all(others)).length).toBe(20);
  }, 60_000);
});
