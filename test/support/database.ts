import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { startEmbedded } from '../../src/db/embedded.js';
import { withDatabase } from './global-setup.js';

export interface TestDatabase {
  url: string;
  embedded: boolean;
  drop(): Promise<void>;
}

/** A fresh database for one test file: a clone of the run's migrated template, or an embedded one. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const provided = inject('database');
  if (!provided) {
    const embedded = await startEmbedded(undefined);
    return { url: embedded.url, embedded: true, drop: embedded.stop };
  }
  const name = `trs_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: provided.adminUrl });
  await admin.connect();
  try {
    // Cloning needs the template to have no other session; retry briefly if another file clones too.
    for (let attempt = 0; ; attempt++) {
      try {
        await admin.query(`create database ${name} template ${provided.template}`);
        break;
      } catch (err) {
        if (attempt >= 50 || (err as { code?: string }).code !== '55006') throw err;
        await new Promise((r) => setTimeout(r, 100 + Math.random() * 100));
      }
    }
  } finally {
    await admin.end();
  }
  return {
    url: withDatabase(provided.adminUrl, name),
    embedded: false,
    async drop() {
      const client = new pg.Client({ connectionString: provided.adminUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}
