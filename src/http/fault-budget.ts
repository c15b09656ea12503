import type { NextFunction, Request, Response } from 'express';
import type { Clock } from '../clock.js';
import { nextUtcMidnight } from '../clock.js';
import { publicSubjectOf, type Meter } from '../keys/usage.repository.js';
import { whenAnswered } from './answered.js';
import { ApiError } from './errors.js';
import { sourceIp } from './metering.js';

/**
 * A server error must not be a free probe. Each 5xx a caller meets (but 503, a database
 * outage, which is nobody's probe) counts against a daily budget of its account and of its
 * source address. Within the budget a failed request gets its charge back; past it the charge
 * stands and the caller is refused with 429 until the next UTC day. (A charge made in the
 * statement that failed, as a check's with its lookup, or in a rolled-back transaction, was
 * never made: there is nothing to give back or to keep.)
 *
 * The refusal is remembered per process (it costs the hot path nothing): with several
 * processes a caller past its budget meets at most one more server error on each.
 */
export class FaultBudget {
  private readonly blocked = new Map<string, number>();

  constructor(
    private readonly meter: Meter,
    private readonly clock: Clock,
    private readonly budget: number,
  ) {}

  private subjectsOf(req: Request, res: Response): string[] {
    const ip = publicSubjectOf(sourceIp(req));
    return res.locals.caller ? [`a:${res.locals.caller.accountId}`, ip] : [ip];
  }

  /** After authentication: refuses a caller past its budget, and watches the answer. */
  middleware() {
    return (req: Request, res: Response, next: NextFunction) => {
      const subjects = this.subjectsOf(req, res);
      const now = this.clock.now().getTime();
      for (const subject of subjects) {
        const until = this.blocked.get(subject);
        if (until === undefined) continue;
        if (until > now) {
          const retryAfter = Math.max(1, Math.ceil((until - now) / 1000));
          throw new ApiError(429, 'Too many of your requests met a server error today; try again tomorrow (UTC) and report the problem to the operator.', {
            code: 'fault_budget_exceeded',
            data: { retryAfter },
            headers: { 'Retry-After': String(retryAfter) },
          });
        }
        this.blocked.delete(subject);
      }
      whenAnswered(res, () => {
        if (res.statusCode < 500) return;
        void this.settle(req, res, subjects);
      });
      next();
    };
  }

  private async settle(req: Request, res: Response, subjects: string[]): Promise<void> {
    try {
      if (res.statusCode !== 503) {
        const faults = await this.meter.recordFault(subjects);
        if (faults > this.budget) {
          const until = nextUtcMidnight(this.clock.now()).getTime();
          for (const subject of subjects) this.blocked.set(subject, until);
          req.log?.warn({ subjects: subjects.length, faults }, 'caller is past its server-error budget: no refund, refused until tomorrow');
          return;
        }
      }
      // The standalone charges made for the request (its payer's tab) go back.
      for (const receipt of res.locals.payer?.tab ?? []) await this.meter.refund(receipt);
    } catch (err) {
      req.log?.error({ err }, 'settling a failed request failed');
    }
  }
}
