import { randomBytes } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { WebSecretEntity } from '../db/entities/accounts.js';

/**
 * A secret the server makes once and every process shares through the database (the CSRF key):
 * the first process to ask creates it, the others read the same row.
 */
export async function sharedSecret(em: EntityManager, name: string): Promise<Buffer> {
  const fork = em.fork();
  await fork.createQueryBuilder(WebSecretEntity).insert({ name, value: randomBytes(32) }).onConflict('name').ignore().execute('run');
  return (await fork.findOneOrFail(WebSecretEntity, name)).value;
}
