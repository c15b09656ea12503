import { randomBytes } from 'node:crypto';
import type { Queryable } from '../db/pool.js';

/**
 * A secret the server makes once and every process shares through the database (the CSRF key):
 * the first process to ask creates it, the others read the same row.
 */
export async function sharedSecret(db: Queryable, name: string): Promise<Buffer> {
  await db.query('insert into web_secrets (name, value) values ($1, $2) on conflict (name) do nothing', [name, randomBytes(32)]);
  const { rows } = await db.query<{ value: Buffer }>('select value from web_secrets where name = $1', [name]);
  return rows[0]!.value;
}
