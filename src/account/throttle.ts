import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import { publicSubjectOf } from '../keys/usage.js';

export type AuthAction = 'sign-in' | 'sign-up' | 'reset' | 'reset-confirm';

export interface ThrottleLimit {
  /** Attempts per address and per source IP (IPv6: per /64) in one window. */
  perAddress: number;
  perIp: number;
  windowMs: number;
}

/**
 * Defaults: enough for a person who mistypes, far too few for guessing. A sign-in guesser gets
 * 10 tries per address per 15 minutes (about 1,000 a day), whatever number of addresses it uses
 * from one source, 30 per source.
 */
export const AUTH_LIMITS: Record<AuthAction, ThrottleLimit> = {
  'sign-in': { perAddress: 10, perIp: 30, windowMs: 15 * 60_000 },
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
}

/** The throttle never stores an address, only a digest of it (it is kept after an account goes). */
const addressSubject = (action: AuthAction, email: string) =>
  `${action}:a:${createHash('sha256').update(email.trim().toLowerCase()).digest('base64url')}`;

/**
 * Sign-in, sign-up and reset attempts per address and per source IP, in fixed windows in
 * PostgreSQL (shared by every process). Every attempt counts, refused ones too, so a guesser
 * who keeps trying stays refused until the window ends.
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
    const subjects = [{ name: `${action}:${publicSubjectOf(sourceIp)}`, max: limit.perIp }];
    if (email) subjects.push({ name: addressSubject(action, email), max: limit.perAddress });
    const { rows } = await this.db.query<{ subject: string; attempts: number }>(
      `insert into auth_throttle (subject, window_start, attempts)
       select unnest($1::text[]), $2, 1
       on conflict (subject, window_start) do update set attempts = auth_throttle.attempts + 1
       returning subject, attempts`,
      [subjects.map((s) => s.name), windowStart],
    );
    const over = rows.some((r) => r.attempts > subjects.find((s) => s.name === r.subject)!.max);
    return { allowed: !over, retryAfter: Math.max(1, Math.ceil((windowStart.getTime() + limit.windowMs - now) / 1000)) };
  }

  /** Drops windows that have ended (the scheduled purge). */
  async purge(db: Queryable = this.db): Promise<number> {
    const longest = Math.max(...Object.values(this.limits).map((l) => l.windowMs));
    const { rowCount } = await db.query('delete from auth_throttle where window_start < $1', [new Date(this.clock.now().getTime() - longest)]);
    return rowCount ?? 0;
  }
}
