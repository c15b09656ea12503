import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import { DEFAULT_PUBLIC_LIMITS, publicNetworkOf, publicSubjectOf } from '../keys/usage.repository.js';

export type AuthAction = 'sign-in' | 'sign-up' | 'reset' | 'reset-confirm';

export interface ThrottleLimit {
  /** Attempts per source IP (IPv6: per /64) in one window; every attempt counts, refused ones too. */
  perIp: number;
  /**
   * Attempts per IPv6 network (PUBLIC_V6_AGGREGATE_PREFIX, a /48 by default) in one window, from
   * all its /64s together: one allocation holds 65,536 /64s, so per /64 alone bounds nothing.
   */
  perNetwork: number;
  /** Attempts per address in one window (with `forgiveSuccess`, failures only), from all sources together. */
  perAddress: number;
  /**
   * Attempts per address from one source in one window (IPv6: from one network, as `perNetwork`).
   * Set, it is what locks a guesser out of an address, while `perAddress` is a higher ceiling
   * against guessing from many sources.
   */
  perAddressAndIp?: number;
  /**
   * Whether an attempt that succeeds is taken back from the address's counts, so that they count
   * failures (sign-in: the owner who signs in is never the one who locked the address).
   */
  forgiveSuccess?: boolean;
  /**
   * With `perAddressAndIp`: once the address is at its ceiling, a source with no attempt counted
   * for the address in the window still gets one, on probation (`ThrottleVerdict.onProbation`):
   * the right password passes, anything else is answered as a refusal and spends the source's
   * clean record. So strangers who fail from many sources cannot lock the owner out, and their
   * guessing gets one more try per source and window, within every per-source bound.
   */
  cleanSourcePasses?: boolean;
  windowMs: number;
}

/**
 * Defaults: enough for a person who mistypes, far too few for guessing. A sign-in guesser from
 * one source gets 10 failures per address per 15 minutes, and 30 attempts whatever the
 * addresses (60 from all the /64s of one IPv6 /48). From many sources together an address takes
 * 50 failures per 15 minutes (about 4,800 a day); past that only a source that has not tried the
 * address in the window is let through, once, and only the right password signs in: strangers
 * cannot close an address to its owner, and a distributed guesser gets one try per source more.
 */
export const AUTH_LIMITS: Record<AuthAction, ThrottleLimit> = {
  'sign-in': { perAddressAndIp: 10, perAddress: 50, perIp: 30, perNetwork: 60, forgiveSuccess: true, cleanSourcePasses: true, windowMs: 15 * 60_000 },
  'sign-up': { perAddress: 3, perIp: 10, perNetwork: 20, windowMs: 60 * 60_000 },
  reset: { perAddress: 3, perIp: 10, perNetwork: 20, windowMs: 60 * 60_000 },
  // Setting a new password from a link: the form has no address, so per source only. A person
  // needs one or two tries; a stranger with made-up links gets no more than this.
  'reset-confirm': { perAddress: 10, perIp: 10, perNetwork: 20, windowMs: 15 * 60_000 },
};

export interface ThrottleVerdict {
  allowed: boolean;
  /** Seconds until the window ends (for Retry-After). */
  retryAfter: number;
  /**
   * Let through past the address's ceiling on the source's clean record (`cleanSourcePasses`):
   * only the right password may pass; the caller answers anything else as a refusal (429).
   */
  onProbation: boolean;
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
 * PostgreSQL (shared by every process). Every attempt counts per source (and per IPv6 network),
 * refused ones too, so a guesser who keeps trying stays refused until the window ends. An
 * address's counts take only attempts that were let through (a refused one cannot push an
 * address towards its ceiling); with `forgiveSuccess` a successful one is given back, so they
 * count failures.
 */
export class AuthThrottle {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly limits: Record<AuthAction, ThrottleLimit> = AUTH_LIMITS,
    /** The IPv6 network counted beside each /64 (PUBLIC_V6_AGGREGATE_PREFIX). */
    private readonly v6NetworkPrefix: number = DEFAULT_PUBLIC_LIMITS.v6AggregatePrefix,
  ) {}

  private window(limit: ThrottleLimit): { windowStart: Date; retryAfter: number } {
    const now = this.clock.now().getTime();
    const windowStart = new Date(Math.floor(now / limit.windowMs) * limit.windowMs);
    return { windowStart, retryAfter: Math.max(1, Math.ceil((windowStart.getTime() + limit.windowMs - now) / 1000)) };
  }

  async take(action: AuthAction, email: string | undefined, sourceIp: string): Promise<ThrottleVerdict> {
    const limit = this.limits[action];
    const { windowStart, retryAfter } = this.window(limit);
    const source = publicSubjectOf(sourceIp);
    const network = publicNetworkOf(sourceIp, this.v6NetworkPrefix);
    const verdict = (allowed: boolean, forgivable: string[] = [], onProbation = false): ThrottleVerdict => ({
      allowed,
      retryAfter,
      onProbation,
      forgivable: { subjects: allowed && limit.forgiveSuccess ? forgivable : [], windowStart },
    });
    // The source's counts take every attempt: its /64 (or IPv4 address) and its IPv6 network.
    const bySource = await this.count(
      [{ name: `${action}:${source}`, max: limit.perIp }, ...(network ? [{ name: `${action}:${network}`, max: limit.perNetwork }] : [])],
      windowStart,
    );
    if (bySource.some((c) => c.attempts > c.max)) return verdict(false);
    if (!email) return verdict(true);
    // The address's counts take only attempts that are let through.
    const address = { name: addressSubject(action, email), max: limit.perAddress };
    const pair = limit.perAddressAndIp === undefined ? undefined : { name: `${address.name}:${network ?? source}`, max: limit.perAddressAndIp };
    const subjects = pair ? [address, pair] : [address];
    const { rows: current } = await this.db.query<{ subject: string; attempts: number }>(
      'select subject, attempts from auth_throttle where subject = any($1::text[]) and window_start = $2',
      [subjects.map((s) => s.name), windowStart],
    );
    const attempts = (s: Subject) => current.find((r) => r.subject === s.name)?.attempts ?? 0;
    if (pair && attempts(pair) >= pair.max) return verdict(false);
    if (attempts(address) >= address.max) {
      if (!limit.cleanSourcePasses || !pair || attempts(pair) > 0) return verdict(false);
      // On probation: the source's one attempt for the address (of those at the same moment, the
      // one that counts first); the address's count is at its ceiling and stays there.
      const [counted] = await this.count([pair], windowStart);
      return counted!.attempts === 1 ? verdict(true, [pair.name], true) : verdict(false);
    }
    const counted = await this.count(subjects, windowStart);
    // Attempts at the same moment may pass the look above together; the counts decide.
    const allowed = !counted.some((c) => c.attempts > c.max);
    return verdict(allowed, subjects.map((s) => s.name));
  }

  /** Gives back what a successful attempt took from its address's counts (sign-in). */
  async forgive(verdict: ThrottleVerdict): Promise<void> {
    if (verdict.forgivable.subjects.length === 0) return;
    await this.db.query('update auth_throttle set attempts = attempts - 1 where subject = any($1::text[]) and window_start = $2 and attempts > 0', [
      verdict.forgivable.subjects,
      verdict.forgivable.windowStart,
    ]);
  }

  /**
   * Forgets an address's counts for an action, from every source (a password reset reopens
   * sign-in: whoever holds the mailbox is the owner).
   */
  async clearAddress(action: AuthAction, email: string, db: Queryable = this.db): Promise<void> {
    const address = addressSubject(action, email);
    await db.query('delete from auth_throttle where subject = $1 or starts_with(subject, $2)', [address, `${address}:`]);
  }

  /**
   * Counts a mail to an address against sign-up's allowance per address (3 an hour), as a
   * sign-up does; false, and nothing counted, when it is used up. For mails that go out without
   * a sign-up (a new verification link at sign-in), so the address gets no more mails than
   * sign-ups would send it.
   */
  async takeMail(email: string, db: Queryable = this.db): Promise<boolean> {
    const limit = this.limits['sign-up'];
    const { rows } = await db.query(
      `insert into auth_throttle (subject, window_start, attempts) values ($1, $2, 1)
       on conflict (subject, window_start) do update set attempts = auth_throttle.attempts + 1 where auth_throttle.attempts < $3
       returning attempts`,
      [addressSubject('sign-up', email), this.window(limit).windowStart, limit.perAddress],
    );
    return rows.length === 1;
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
