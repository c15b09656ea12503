import type { NextFunction, Request, Response } from 'express';
import type { Clock } from '../clock.js';
import type { CounterState, Meter } from '../keys/usage.repository.js';
import { QuotaExceeded, type Payer, type Subject, type Usage } from '../keys/quota.js';
import type { AccessRule } from './access.js';
import { rateLimited } from './errors.js';
import type { Metrics } from './metrics.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /**
     * Who pays for the request and on which counter, for an operation whose use case charges
     * (`x-charge.units: handler`, or `withRead`: with its read, in one statement). A value the
     * handler hands to the service, which returns the counter's Usage with its answer.
     */
    payer?: Payer;
  }
}

const DAY_SECONDS = 86_400;

/** The caller's address: the socket's peer, or X-Forwarded-For as far as TRUST_PROXY trusts it. */
export function sourceIp(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? '';
}

export function subjectOf(req: Request, res: Response): Subject {
  return res.locals.caller ? { caller: res.locals.caller } : { sourceIp: sourceIp(req) };
}

function secondsUntil(resetAt: Date, clock: Clock): number {
  return Math.max(1, Math.ceil((resetAt.getTime() - clock.now().getTime()) / 1000));
}

/**
 * `X-RateLimit-*` for the counter, and the IETF draft's `RateLimit-Policy` and `RateLimit`
 * fields beside them (left out for an unlimited counter, which they cannot express).
 */
export function setRateLimitHeaders(res: Response, state: CounterState | Usage, clock: Clock): void {
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

/**
 * The edge of the quota: who pays (a Payer, decided here from `x-charge`), the rate-limit
 * headers from the Usage a use case returns (`answered`) or a refusal carries (the error
 * handler), the refund of a request the server then fails (fault-budget.ts, from the payer's
 * tab) and the public-limit gate. The charges themselves are the use cases', through the
 * Quota port (keys/quota.ts).
 */
export class Metering {
  constructor(
    private readonly meter: Meter,
    private readonly clock: Clock,
    private readonly metrics?: Metrics,
  ) {}

  /** The caller's main daily counter: the check quota with a key, the per-IP allowance without. */
  private mainCounter(res: Response) {
    return res.locals.caller ? ('check' as const) : ('public' as const);
  }

  /**
   * Meters one operation as its `x-charge` says (http/access.ts): a use case that charges gets
   * its Payer; a plain charged operation is charged here; an uncharged one reads its counter
   * for its headers (and, gated by the public limit, is refused past it).
   */
  middleware(rule: AccessRule) {
    return async (req: Request, res: Response, next: NextFunction) => {
      const subject = subjectOf(req, res);
      const counter = res.locals.caller ? rule.chargeWithKey : rule.chargeWithoutKey;
      if (counter && (rule.chargedByHandler || rule.meteredWithRead)) {
        res.locals.payer = { subject, counter, tab: [] };
      } else if (rule.meteredWithRead) {
        res.locals.payer = { subject, counter: this.mainCounter(res), peek: true };
      } else if (counter) {
        const payer: Payer = { subject, counter, tab: [] };
        res.locals.payer = payer;
        const outcome = await this.meter.charge(payer, 1);
        if (outcome.refused) throw new QuotaExceeded(outcome.usage);
        setRateLimitHeaders(res, outcome, this.clock);
      } else {
        const state = await this.meter.peek(subject, this.mainCounter(res));
        setRateLimitHeaders(res, state, this.clock);
        if (rule.gatedByPublicLimit && !res.locals.caller && state.used >= state.limit) {
          throw new QuotaExceeded({ counter: 'public', limit: state.limit, used: state.used, resetAt: state.resetAt });
        }
      }
      next();
    };
  }

  /** The rate-limit headers of an answer, from the Usage its use case returned. */
  answered(res: Response, usage: Usage): void {
    setRateLimitHeaders(res, usage, this.clock);
  }

  /** A refused charge: its headers, and the 429 it answers. */
  refused(res: Response, refusal: QuotaExceeded) {
    this.metrics?.quotaRefusals.inc({ counter: refusal.usage.counter });
    setRateLimitHeaders(res, refusal.usage, this.clock);
    return rateLimited(secondsUntil(refusal.usage.resetAt, this.clock));
  }

  /** Gives back the standalone charges of a request the server failed to answer (5xx). */
  async refund(res: Response): Promise<void> {
    for (const receipt of res.locals.payer?.tab ?? []) await this.meter.refund(receipt);
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
