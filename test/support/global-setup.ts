import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import type { TestProject } from 'vitest/node';
import { migrate, openOrm } from '../../src/db/orm.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /**
     * A migrated template database on a real server, or undefined: use the embedded one.
     * `template` is the run's; each vitest worker clones its own copy of it (`workerTemplate`).
     */
    database: { adminUrl: string; template: string; workers: number } | undefined;
  }
}

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = '/' + name;
  return u.toString();
}

async function reachable(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The template of one vitest worker (VITEST_POOL_ID, 1 to the project's maxWorkers). */
export function workerTemplate(template: string, worker: number | string): string {
  return `${template}_w${worker}`;
}

/**
 * Each run gets a fresh, migrated template database on the PostgreSQL server
 * (TEST_DATABASE_URL, DATABASE_URL, or the local default), and one copy of it per vitest worker;
 * each test file clones its worker's copy. PostgreSQL clones a database only while no other
 * session uses it (55006 otherwise), and a worker runs one file at a time, so files that start
 * together never wait on one another's clone. Where no server answers, every test file runs its
 * own embedded PostgreSQL instead.
 */
export default async function setup(project: TestProject) {
  const adminUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? DEFAULT_URL;
  if (process.env.TEST_EMBEDDED === '1' || !(await reachable(adminUrl))) {
    // CI proves the suite on a real server: there, a server that does not answer is a failure,
    // never a silent fall back to the embedded database.
    if (process.env.TEST_REQUIRE_POSTGRES === '1' && process.env.TEST_EMBEDDED !== '1') {
      throw new Error(`tests: TEST_REQUIRE_POSTGRES is set but no PostgreSQL server answers at ${new URL(adminUrl).host}`);
    }
    console.log('tests: no PostgreSQL server answers; each test file uses the embedded PostgreSQL');
    project.provide('database', undefined);
    return;
  }
  const template = `trs_tpl_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${template}`);
  const url = withDatabase(adminUrl, template);
  const orm = await openOrm({ url, poolMax: 2, logger: pino({ level: 'silent' }) });
  await migrate(orm, url);
  await orm.close();
  const workers = Math.max(1, Number(project.config.maxWorkers) || 1);
  for (let worker = 1; worker <= workers; worker++) {
    await admin.query(`create database ${workerTemplate(template, worker)} template ${template}`);
  }
  project.provide('database', { adminUrl, template, workers });
  console.log(`tests: PostgreSQL at ${new URL(adminUrl).host}, template database ${template}`);
  return async () => {
    for (let worker = 1; worker <= workers; worker++) {
      await admin.query(`drop database if exists ${workerTemplate(template, worker)} with (force)`);
    }
    await admin.query(`drop database if exists ${template} with (force)`);
    await admin.end();
  };
}
