import type { NextFunction, Request, Response } from 'express';
import type { Clock } from '../clock.js';
import type { CounterState, Meter, Subject } from '../keys/usage.js';
import type { Counter } from '../keys/roles.js';
import type { AccessRule } from './access.js';
import { rateLimited } from './errors.js';
import type { Metrics } from './metrics.js';
import type { Queryable } from '../db/pool.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /**
     * Charges the operation's counter `units` times, or throws 429 leaving it unchanged. With
     * `db` (a transaction), the charge commits or rolls back with the work it pays for.
     */
    charge?: (units: number, db?: Queryable) => Promise<void>;
  }
}

const DAY_SECONDS = 86_400;

/** The caller's address: the socket's peer, or X-Forwarded-For as far as TRUST_PROXY trusts it. */
export function sourceIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '';
}

function subjectOf(req: Request, res: Response): Subject {
  return res.locals.caller ? { caller: res.locals.caller } : { sourceIp: sourceIp(req) };
}

function secondsUntil(resetAt: Date, clock: Clock): number {
  return Math.max(1, Math.ceil((resetAt.getTime() - clock.now().getTime()) / 1000));
}

/**
 * `X-RateLimit-*` for the counter, and the IETF draft's `RateLimit-Policy` and `RateLimit`
 * fields beside them (left out for an unlimited counter, which they cannot express).
 */
export function setRateLimitHeaders(res: Response, state: CounterState, clock: Clock): void {
  const unlimited = state.limit < 0;
  const remaining = unlimited ? -1 : Math.max(0, state.limit - state.used);
  const reset = secondsUntil(state.resetAt, clock);
  res.setHeader('X-RateLimit-Limit', String(state.limit));
  res.setHeader('X-RateLimit-Remaining', String(remaining));
  res.setHeader('X-RateLimit-Reset', String(Math.floor(state.resetAt.getTime() / 1000)));
  if (!unlimited) {
    res.setHeader('RateLimit-Policy', `"daily";q=${state.limit};w=${DAY_SECONDS}`);
    res.setHeader('RateLimit', `"daily";r=${remaining};t=${reset}`);
  }
}

export class Metering {
  constructor(
    private readonly meter: Meter,
    private readonly clock: Clock,
    private readonly metrics?: Metrics,
  ) {}

  private refuse(counter: string, resetAt: Date) {
    this.metrics?.quotaRefusals.inc({ counter });
    return rateLimited(secondsUntil(resetAt, this.clock));
  }

  /** The caller's main daily counter: the check quota with a key, the per-IP allowance without. */
  private mainCounter(res: Response) {
    return res.locals.caller ? ('check' as const) : ('public' as const);
  }

  /**
   * Charges the counter, or throws 429 leaving it unchanged. A request the server then fails
   * to answer (5xx) may get the charge back: the fault budget decides (http/fault-budget.ts).
   */
  private async charge(req: Request, res: Response, counter: Counter, units: number, db?: Queryable) {
    const result = await this.meter.charge(subjectOf(req, res), counter, units, db);
    setRateLimitHeaders(res, result, this.clock);
    if (!result.allowed) throw this.refuse(counter, result.resetAt);
    if (db) return; // the transaction's rollback takes it back
    res.locals.refund = () => this.meter.refund(result, units);
  }

  /** Charges or reports the counter of one operation, as its `x-charge` says (http/access.ts). */
  middleware(rule: AccessRule) {
    return async (req: Request, res: Response, next: NextFunction) => {
      const counter = res.locals.caller ? rule.chargeWithKey : rule.chargeWithoutKey;
      if (counter && rule.chargedByHandler) {
        setRateLimitHeaders(res, await this.meter.peek(subjectOf(req, res), counter), this.clock);
        res.locals.charge = (units, db) => this.charge(req, res, counter, units, db);
      } else if (counter) {
        await this.charge(req, res, counter, 1);
      } else {
        const state = await this.meter.peek(subjectOf(req, res), this.mainCounter(res));
        setRateLimitHeaders(res, state, this.clock);
        if (rule.gatedByPublicLimit && !res.locals.caller && state.used >= state.limit) {
          throw this.refuse('public', state.resetAt);
        }
      }
      next();
    };
  }

  /** For responses that were refused before their operation's metering ran (400, 401, 404). */
  async ensureHeaders(req: Request, res: Response): Promise<void> {
    if (res.headersSent || res.hasHeader('X-RateLimit-Limit')) return;
    try {
      setRateLimitHeaders(res, await this.meter.peek(subjectOf(req, res), this.mainCounter(res)), this.clock);
    } catch {
      // The database is down: the error response goes out without the headers.
    }
  }
}
