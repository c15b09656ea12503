import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeAccounts } from '../../src/account/job.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { unboundedMigrations } from '../../src/db/orm.js';
import { UNBOUNDED } from '../../src/db/pool.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The pool's connections cut a statement off after 15 s, so that no request waits on a runaway
 * one; the work over whole tables lifts that for itself. At a million addresses the blacklist's
 * regeneration writes its snapshot in one statement that took longer (found by seeding the
 * benchmark's data set), and a migration may backfill ten million reports.
 */
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const timeoutOf = async (db: { query: TestServer['pool']['query'] }) =>
  (await db.query<{ statement_timeout: string }>('show statement_timeout')).rows[0]!.statement_timeout;

describe('the statement timeout', () => {
  it('bounds the request path, and is lifted by the regeneration for its own transaction only', async () => {
    expect(await timeoutOf(s.pool)).toBe('15s');
    let inside: string | undefined;
    await blacklistSnapshots(s.pool, s.clock).regenerateIf(async (client) => {
      inside = await timeoutOf(client);
      return true;
    });
    expect(inside).toBe('0');
    expect(await timeoutOf(s.pool)).toBe('15s');
  });

  it('is lifted by the purge, and given back to the connection after it', async () => {
    const client = await s.pool.connect();
    client.release();
    await purgeAccounts(s.pool, s.clock, { sessionAbsoluteMs: 1, sessionIdleMs: 1, auditRetentionMs: 1 });
    for (let i = 0; i < 3; i++) expect(await timeoutOf(s.pool)).toBe('15s');
  });

  it('is lifted first thing in every migration', async () => {
    const driver = s.orm.em.getDriver();
    for (const { name, class: Wrapped } of unboundedMigrations) {
      const migration = new Wrapped(driver, s.orm.config);
      await migration.up();
      expect(migration.getQueries()[0], name).toBe(UNBOUNDED);
    }
  });
});
