import type { NextFunction, Request, Response } from 'express';
import type { Clock } from '../clock.js';
import type { Charge, ChargeResult, CounterState, Meter, Subject } from '../keys/usage.js';
import type { Counter } from '../keys/roles.js';
import type { AccessRule } from './access.js';
import { rateLimited } from './errors.js';
import type { Metrics } from './metrics.js';
import type { NamedQuery, Queryable, Read } from '../db/pool.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /**
     * Charges the operation's counter `units` times, or throws 429 leaving it unchanged. With
     * `db` (a transaction), the charge commits or rolls back with the work it pays for.
     */
    charge?: Charge;
    /**
     * For an operation metered with its read (`x-charge.withRead`): runs the handler's read in
     * the statement that charges the call, or throws 429 leaving the counter unchanged; for an
     * uncharged operation, in the statement that reads the counter its headers show.
     */
    meteredRead?: Read;
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
   * Charges the counter (with `read`, in the same statement), or throws 429 leaving it
   * unchanged. A request the server then fails to answer (5xx) may get the charge back: the
   * fault budget decides (http/fault-budget.ts).
   */
  private async charge<R extends object>(req: Request, res: Response, counter: Counter, units: number, db?: Queryable, read?: NamedQuery) {
    const { result, rows } = await this.meter.chargeWith<R>(subjectOf(req, res), counter, units, read, db);
    this.settle(res, result, units, !db);
    return rows;
  }

  private settle(res: Response, result: ChargeResult, units: number, refundable: boolean) {
    setRateLimitHeaders(res, result, this.clock);
    if (!result.allowed) throw this.refuse(result.counter, result.resetAt);
    if (refundable && units > 0) res.locals.refund = () => this.meter.refund(result, units);
  }

  /**
   * Charges or reports the counter of one operation, as its `x-charge` says (http/access.ts).
   * An operation its handler charges sets its headers when it charges: the handler charges
   * exactly once (0 units when the request holds none), and a request refused before it does
   * gets them from the error handler (`ensureHeaders`).
   */
  middleware(rule: AccessRule) {
    return async (req: Request, res: Response, next: NextFunction) => {
      const counter = res.locals.caller ? rule.chargeWithKey : rule.chargeWithoutKey;
      if (counter && rule.chargedByHandler) {
        res.locals.charge = Object.assign(async (units: number, db?: Queryable) => void (await this.charge(req, res, counter, units, db)), {
          // For a charge made with others' in one statement (Meter.chargeMany), in a transaction: never refunded.
          claim: { subject: subjectOf(req, res), counter, settle: (result: ChargeResult) => this.settle(res, result, 1, false) },
        });
      } else if (counter && rule.meteredWithRead) {
        res.locals.meteredRead = (read) => this.charge(req, res, counter, 1, undefined, read);
      } else if (rule.meteredWithRead) {
        res.locals.meteredRead = async <R extends object>(read: NamedQuery) => {
          const { state, rows } = await this.meter.peekWith<R>(subjectOf(req, res), this.mainCounter(res), read);
          setRateLimitHeaders(res, state, this.clock);
          return rows;
        };
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
