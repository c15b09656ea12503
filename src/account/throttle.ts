import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import { publicSubjectOf } from '../keys/usage.js';

export type AuthAction = 'sign-in' | 'sign-up' | 'reset' | 'reset-confirm';

export interface ThrottleLimit {
  /** Attempts per source IP (IPv6: per /64) in one window; every attempt counts, refused ones too. */
  perIp: number;
  /** Attempts per address in one window (with `forgiveSuccess`, failures only), from all sources together. */
  perAddress: number;
  /**
   * Attempts per address from one source in one window. Set, it is what locks a guesser out of
   * an address, while `perAddress` is a higher ceiling against guessing from many sources.
   */
  perAddressAndIp?: number;
  /**
   * Whether an attempt that succeeds is taken back from the address's counts, so that they count
   * failures (sign-in: the owner who signs in is never the one who locked the address).
   */
  forgiveSuccess?: boolean;
  windowMs: number;
}

/**
 * Defaults: enough for a person who mistypes, far too few for guessing. A sign-in guesser from
 * one source gets 10 failures per address per 15 minutes, and 30 attempts whatever the
 * addresses; the address then stays open to everyone else, so a stranger cannot lock its owner
 * out. From many sources together an address takes 50 failures per 15 minutes (about 4,800 a
 * day): a stranger would need five or more sources of its own to close it to its owner for a
 * window, and a distributed guesser gets no further.
 */
export const AUTH_LIMITS: Record<AuthAction, ThrottleLimit> = {
  'sign-in': { perAddressAndIp: 10, perAddress: 50, perIp: 30, forgiveSuccess: true, windowMs: 15 * 60_000 },
  'sign-up': { perAddress: 3, perIp: 10, windowMs: 60 * 60_000 },
  reset: { perAddress: 3, perIp: 10, windowMs: 60 * 60_000 },
  // Setting a new password from a link: the form has no address, so per source only. A person
  // needs one or two tries; a stranger with made-up links gets no more than this.
  'reset-confirm': { perAddress: 10, perIp: 10, windowMs: 15 * 60_000 },
};

export interface ThrottleVerdict {
  allowed: boolean;
  /** Seconds until the window ends (for Retry-After). */
  retryAfter: number;
  /** The counts an allowed attempt took that `forgive` gives back if it succeeds. */
  forgivable: { subjects: string[]; windowStart: Date };
}

/** The throttle never stores an address, only a digest of it (it is kept after an account goes). */
const addressSubject = (action: AuthAction, email: string) =>
  `${action}:a:${createHash('sha256').update(email.trim().toLowerCase()).digest('base64url')}`;

interface Subject {
  name: string;
  max: number;
}

/**
 * Sign-in, sign-up and reset attempts per address and per source IP, in fixed windows in
 * PostgreSQL (shared by every process). Every attempt counts per source, refused ones too, so
 * a guesser who keeps trying stays refused until the window ends. An address's counts take
 * only attempts that were let through (a refused one cannot push an address towards its
 * ceiling); with `forgiveSuccess` a successful one is given back, so they count failures.
 */
export class AuthThrottle {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly limits: Record<AuthAction, ThrottleLimit> = AUTH_LIMITS,
  ) {}

  async take(action: AuthAction, email: string | undefined, sourceIp: string): Promise<ThrottleVerdict> {
    const limit = this.limits[action];
    const now = this.clock.now().getTime();
    const windowStart = new Date(Math.floor(now / limit.windowMs) * limit.windowMs);
    const retryAfter = Math.max(1, Math.ceil((windowStart.getTime() + limit.windowMs - now) / 1000));
    const source = publicSubjectOf(sourceIp);
    const addressSubjects: Subject[] = [];
    if (email) {
      const address = addressSubject(action, email);
      addressSubjects.push({ name: address, max: limit.perAddress });
      if (limit.perAddressAndIp !== undefined) addressSubjects.push({ name: `${address}:${source}`, max: limit.perAddressAndIp });
    }
    const refused = { allowed: false, retryAfter, forgivable: { subjects: [], windowStart } };
    // The source's count takes every attempt.
    const [bySource] = await this.count([{ name: `${action}:${source}`, max: limit.perIp }], windowStart);
    if (bySource!.attempts > bySource!.max) return refused;
    if (addressSubjects.length === 0) return { allowed: true, retryAfter, forgivable: { subjects: [], windowStart } };
    // The address's counts take only attempts that are let through.
    const { rows: current } = await this.db.query<{ subject: string; attempts: number }>(
      'select subject, attempts from auth_throttle where subject = any($1::text[]) and window_start = $2',
      [addressSubjects.map((s) => s.name), windowStart],
    );
    if (current.some((r) => r.attempts >= addressSubjects.find((s) => s.name === r.subject)!.max)) return refused;
    const counted = await this.count(addressSubjects, windowStart);
    // Attempts at the same moment may pass the look above together; the counts decide.
    const allowed = !counted.some((c) => c.attempts > c.max);
    return { allowed, retryAfter, forgivable: { subjects: limit.forgiveSuccess && allowed ? addressSubjects.map((s) => s.name) : [], windowStart } };
  }

  /** Gives back what a successful attempt took from its address's counts (sign-in). */
  async forgive(verdict: ThrottleVerdict): Promise<void> {
    if (verdict.forgivable.subjects.length === 0) return;
    await this.db.query('update auth_throttle set attempts = attempts - 1 where subject = any($1::text[]) and window_start = $2 and attempts > 0', [
      verdict.forgivable.subjects,
      verdict.forgivable.windowStart,
    ]);
  }

  private async count(subjects: Subject[], windowStart: Date): Promise<(Subject & { attempts: number })[]> {
    const { rows } = await this.db.query<{ subject: string; attempts: number }>(
      `insert into auth_throttle (subject, window_start, attempts)
       select unnest($1::text[]), $2, 1
       on conflict (subject, window_start) do update set attempts = auth_throttle.attempts + 1
       returning subject, attempts`,
      [subjects.map((s) => s.name), windowStart],
    );
    return subjects.map((s) => ({ ...s, attempts: rows.find((r) => r.subject === s.name)!.attempts }));
  }

  /** Drops windows that have ended (the scheduled purge). */
  async purge(db: Queryable = this.db): Promise<number> {
    const longest = Math.max(...Object.values(this.limits).map((l) => l.windowMs));
    const { rowCount } = await db.query('delete from auth_throttle where window_start < $1', [new Date(this.clock.now().getTime() - longest)]);
    return rowCount ?? 0;
  }
}
