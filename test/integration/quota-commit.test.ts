import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readTogether, transaction, type Pool } from '../../src/db/pool.js';
import { sql } from '../../src/db/sql.js';
import { Meter } from '../../src/keys/usage.repository.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * A charge that stands alone commits without waiting for the disk (keys/usage.repository.ts ASYNC_COMMIT),
 * so one account's checks are not held to the disk's flush rate; a charge inside the caller's
 * transaction (a report's) commits with it, and QUOTA_SYNCHRONOUS_COMMIT makes every charge
 * wait. What PostgreSQL is asked is read here through a pool that records it; the counts stay
 * exact either way.
 */
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

/** The pool, recording the text of every statement sent through it. */
function recorded(pool: Pool): { pool: Pool; texts: string[] } {
  const texts: string[] = [];
  const query = ((config: unknown, values?: unknown) => {
    texts.push(typeof config === 'string' ? config : (config as { text: string }).text);
    return (pool.query as (c: unknown, v?: unknown) => unknown)(config, values);
  }) as Pool['query'];
  return { pool: Object.assign(Object.create(pool) as Pool, { query }), texts };
}

const read = { name: 'commit-test-read', query: sql`select 1 as one` };

describe('the commit of a charge', () => {
  it('is asynchronous for a standalone charge, synchronous inside a transaction or with QUOTA_SYNCHRONOUS_COMMIT', async () => {
    const { accountId } = await s.createKey('professional');
    const caller = { keyId: 'k', keyName: 'k', accountId, role: 'professional' as const, licences: 1 };
    const payer = { subject: { caller }, counter: 'check' as const };

    const asynchronous = recorded(s.pool);
    const meter = new Meter(asynchronous.pool, s.clock);
    const first = await meter.chargeWith(payer, 1, read);
    expect(first.rows).toMatchObject([{ one: 1 }]);
    expect(asynchronous.texts.at(-1)).toContain("set_config('synchronous_commit', 'off', true)");

    // Inside a transaction the charge commits with the work it pays for.
    const inTransaction = await transaction(s.pool, async (client) => {
      const texts: string[] = [];
      const spy = Object.assign(Object.create(client), {
        query: (config: { text: string }, values?: unknown) => (texts.push(config.text), client.query(config as never, values as never)),
      });
      await new Meter(s.pool, s.clock).charge(payer, 1, spy);
      return texts;
    });
    expect(inTransaction.join('\n')).not.toContain('synchronous_commit');

    const synchronous = recorded(s.pool);
    await new Meter(synchronous.pool, s.clock, undefined, true).chargeWith(payer, 1, read);
    expect(synchronous.texts.join('\n')).not.toContain('synchronous_commit');

    // Exact whatever the commit: three charges, three counted.
    const { rows } = await s.pool.query<{ used: number }>("select used from usage_counters where subject = $1 and counter = 'check'", [`a:${accountId}`]);
    expect(rows[0]!.used).toBe(3);
  });
});

describe('the reads of a charged group (readTogether)', () => {
  it('answers each read with its own rows, however the reads of two names interleave on one connection', async () => {
    // A group of concurrent checks of one account can hold /check's read and /bulk-check's in any
    // order. The reads of one name go as one named statement; its text once embedded each read's
    // index among all the group's, so [a, b, a] and then [a, a, b] on one connection prepared two
    // texts under one name, and PostgreSQL's driver failed the second group: every request in it
    // answered 500 (seen as the benchmark smoke's bulk-check failing in CI).
    const a = (v: number) => ({ name: 'together-test-a', query: sql`select ${v}::int as v` });
    const b = (text: string) => ({ name: 'together-test-b', query: sql`select ${text}::text as t` });
    const answers = await transaction(s.pool, async (client) => [
      await readTogether(client, [a(1), b('x'), a(2)]),
      await readTogether(client, [a(3), a(4), b('y')]),
      await readTogether(client, [b('z'), a(5), a(6), b('w')]),
      await readTogether(client, [a(7), b('v'), b('u'), a(8)]),
    ]);
    expect(answers).toEqual([
      [[{ v: 1 }], [{ t: 'x' }], [{ v: 2 }]],
      [[{ v: 3 }], [{ v: 4 }], [{ t: 'y' }]],
      [[{ t: 'z' }], [{ v: 5 }], [{ v: 6 }], [{ t: 'w' }]],
      [[{ v: 7 }], [{ t: 'v' }], [{ t: 'u' }], [{ v: 8 }]],
    ]);
  });
});
