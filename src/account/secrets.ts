import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

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
