import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { startEmbedded } from '../../src/db/embedded.js';
import { withDatabase, workerTemplate } from './global-setup.js';
import { startPgBouncer } from './pgbouncer.js';

export interface TestDatabase {
  /** What the server is given as DATABASE_URL: PgBouncer's, with TEST_PGBOUNCER=1. */
  url: string;
  /** DATABASE_DIRECT_URL: the database itself, where `url` is PgBouncer's; else undefined. */
  directUrl?: string;
  embedded: boolean;
  drop(): Promise<void>;
}

/**
 * TEST_PGBOUNCER=1: every test database is reached through a PgBouncer of its own in transaction
 * mode (test/support/pgbouncer.ts), the server given its direct URL as DATABASE_DIRECT_URL, so
 * that the whole suite runs as a deployment behind a transaction pooler would.
 */
async function behindPgBouncer(db: TestDatabase): Promise<TestDatabase> {
  if (process.env.TEST_PGBOUNCER !== '1' || db.embedded) return db;
  // Tolerant: the command line and server processes some tests start are given DATABASE_URL alone.
  const bouncer = await startPgBouncer(db.url, { tolerant: true });
  return {
    url: bouncer.through(db.url),
    directUrl: db.url,
    embedded: false,
    async drop() {
      await bouncer.stop();
      await db.drop();
    },
  };
}

/** A fresh database for one test file: a clone of the run's migrated template, or an embedded one. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const provided = inject('database');
  if (!provided) {
    const embedded = await startEmbedded(undefined);
    return { url: embedded.url, embedded: true, drop: embedded.stop };
  }
  const name = `trs_t_${randomBytes(6).toString('hex')}`;
  // The worker's own template: no other file clones it while this one does (global-setup.ts).
  const worker = Number(process.env.VITEST_POOL_ID);
  const template = Number.isInteger(worker) && worker >= 1 && worker <= provided.workers ? workerTemplate(provided.template, worker) : undefined;
  const admin = new pg.Client({ connectionString: provided.adminUrl });
  await admin.connect();
  try {
    // Outside a worker of the project (another maxWorkers given on the command line), the run's
    // template, which another file may be cloning at the same moment: then, and only then (or
    // when one file starts two servers at once), a clone waits for another and is retried.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`create database ${name} template ${template ?? provided.template}`);
        break;
      } catch (err) {
        if (attempt >= 50 || (err as { code?: string }).code !== '55006') throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
      }
    }
    // A test database need not survive a crash: commits do not wait for the WAL to reach disk.
    // (fsync and full_page_writes are the server's, not settable per database.)
    await admin.query(`alter database ${name} set synchronous_commit = off`);
  } finally {
    await admin.end();
  }
  return behindPgBouncer({
    url: withDatabase(provided.adminUrl, name),
    embedded: false,
    async drop() {
      const client = new pg.Client({ connectionString: provided.adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  });
}
