import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Queryable } from '../db/pool.js';

/** A new random token (session id, link token, invite code): 32 bytes, base64url. */
export function newToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** What is stored of a token: its SHA-256. A token is looked up by it, never stored itself. */
export function tokenHash(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Tokens we hand out are 43 base64url characters; anything else is not looked up at all. */
export function looksLikeToken(token: unknown): token is string {
  return typeof token === 'string' && /^[A-Za-z0-9_-]{43}$/.test(token);
}

/** Constant-time equality of two strings (different lengths differ, in constant time too). */
export function sameText(a: string, b: string): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y) && a.length === b.length;
}

export function hmac(key: Buffer, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url');
}

/**
 * A secret the server makes once and every process shares through the database (the CSRF key):
 * the first process to ask creates it, the others read the same row.
 */
export async function sharedSecret(db: Queryable, name: string): Promise<Buffer> {
  await db.query('insert into web_secrets (name, value) values ($1, $2) on conflict (name) do nothing', [name, randomBytes(32)]);
  const { rows } = await db.query<{ value: Buffer }>('select value from web_secrets where name = $1', [name]);
  return rows[0]!.value;
}
