import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { DomainError } from '../errors.js';

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

/**
 * What scrypt has done in this process, counted where it runs (not where it is admitted): hashes
 * running now, the most that ever ran at once, all of them, and those the gate refused. Read by
 * /metrics (http/metrics.ts).
 */
export const hashActivity = { running: 0, peak: 0, total: 0, refused: 0 };

function derive(password: string, salt: Buffer, cost: number, r: number, p: number): Promise<Buffer> {
  const options: ScryptOptions = { N: 2 ** cost, r, p, maxmem: 256 * 2 ** cost * r };
  hashActivity.running++;
  hashActivity.total++;
  hashActivity.peak = Math.max(hashActivity.peak, hashActivity.running);
  return new Promise<Buffer>((resolve, reject) =>
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, options, (err, key) => (err ? reject(err) : resolve(key))),
  ).finally(() => hashActivity.running--);
}

/** Seconds a page refused for busy hashing asks the browser to wait (Retry-After). */
export const HASHING_RETRY_SECONDS = 2;

/**
 * The one bound on password hashing in a process: at most `concurrency` hashes at once (each
 * takes a thread of libuv's pool and 2^cost KiB of memory), at most `queue` more waiting for a
 * turn, in order. Beyond that the work is refused at once (DomainError `unavailable`, a 503 with
 * Retry-After on the pages) instead of piling up behind the pool: no source, however many
 * addresses it has, makes the process hash more than this, nor starves its DNS and file writes.
 * Every hash of the account service goes through it, the dummy of unknown addresses included.
 */
export class HashGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queue: number,
  ) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running < this.concurrency) this.running++;
    else if (this.waiting.length < this.queue) await new Promise<void>((resolve) => this.waiting.push(resolve)); // the slot is handed over
    else {
      hashActivity.refused++;
      throw new DomainError('unavailable', 'The service is busy just now. Try again in a few seconds.', { code: 'hashing_busy', retryAfter: HASHING_RETRY_SECONDS });
    }
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/** No bound (the operator's CLI, which hashes nothing a stranger asks for). */
export const UNBOUNDED_HASHING = new HashGate(Number.POSITIVE_INFINITY, 0);

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
