import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { transaction, type Pool } from '../../src/db/pool.js';
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
