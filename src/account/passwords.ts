import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/**
 * Passwords are hashed with scrypt (node:crypto), memory-hard: N = 2^cost, r = 8, p = 1 uses
 * 128 · N · r bytes (32 MiB at the default cost 15), which makes guessing on GPUs expensive.
 * The stored form carries its parameters, `scrypt$<cost>$<r>$<p>$<salt>$<hash>` (base64url),
 * so the cost can be raised later without breaking existing passwords.
 */
export const PASSWORD_MIN = 10;
/** Longer passphrases are fine; beyond this a request is only a way to burn our CPU. */
export const PASSWORD_MAX = 256;
export const DEFAULT_SCRYPT_COST = 15;
const R = 8;
const P = 1;
const KEY_LENGTH = 32;

function derive(password: string, salt: Buffer, cost: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** cost, r, p, maxmem: 256 * 2 ** cost * r };
  return new Promise((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

export async function hashPassword(password: string, cost = DEFAULT_SCRYPT_COST): Promise<string> {
  const salt = randomBytes(16);
  const hash = await derive(password, salt, cost, R, P);
  return ['scrypt', cost, R, P, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Whether `password` matches `stored`; a malformed stored value never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, cost, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const [c, rr, pp] = [Number(cost), Number(r), Number(p)];
  if (![c, rr, pp].every(Number.isInteger) || c < 10 || c > 22 || rr < 1 || rr > 32 || pp < 1 || pp > 4) return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await derive(password, Buffer.from(salt, 'base64url'), c, rr, pp);
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/**
 * Whether a stored hash was made with other parameters than a new one would be (a lower cost
 * from before PASSWORD_SCRYPT_COST was raised): checking it takes less time than checking the
 * dummy of an unknown address, so it is made anew at the next successful sign-in.
 */
export function needsRehash(stored: string, cost: number): boolean {
  const [scheme, c, r, p] = stored.split('$');
  return scheme !== 'scrypt' || Number(c) !== cost || Number(r) !== R || Number(p) !== P;
}

/**
 * Work as long as a real check, for an address with no account (or no password): sign-in takes
 * the same time whether or not the address is registered.
 */
export class DummyPassword {
  private stored: Promise<string> | undefined;
  constructor(private readonly cost: number) {}
  async burn(password: string): Promise<void> {
    this.stored ??= hashPassword(randomBytes(16).toString('hex'), this.cost);
    await verifyPassword(password, await this.stored);
  }
}

/** Why a new password is refused, or undefined when it is fine. */
export function passwordProblem(password: string, email: string): string | undefined {
  if (password.length < PASSWORD_MIN) return `Use at least ${PASSWORD_MIN} characters.`;
  if (password.length > PASSWORD_MAX) return `Use at most ${PASSWORD_MAX} characters.`;
  if (password.toLowerCase() === email.toLowerCase()) return 'Do not use your e-mail address as your password.';
  if (new Set(password).size < 4) return 'Use more different characters.';
  return undefined;
}
