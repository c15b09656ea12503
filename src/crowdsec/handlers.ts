import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { NextFunction, Request, Response } from 'express';
import { ApiError } from '../http/errors.js';
import { sourceIp } from '../http/metering.js';
import type { Handlers, ResponseOf } from '../http/types.js';
import type { Bouncers } from './bouncers.js';
import type { DecisionService } from './decisions.js';
import type { Bouncer } from './repository.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /** The bouncer of the request's `X-Api-Key`. */
    bouncer?: Bouncer;
  }
}

/**
 * A bouncer's key in `X-Api-Key`, or 403 `{"message": "access forbidden"}` as CrowdSec's LAPI
 * answers a missing or unknown one.
 */
export function bouncerGuard(bouncers: Bouncers) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.headers['x-api-key'];
    const bouncer = await bouncers.authenticate(typeof header === 'string' ? header : undefined);
    if (!bouncer) throw new ApiError(403, 'access forbidden');
    res.locals.bouncer = bouncer;
    await bouncers.seen(bouncer, sourceIp(req), req.headers['user-agent']);
    next();
  };
}

/**
 * Passes the chunks on, running `record` once the body is read whole and before its last chunk
 * goes out: an answer cut short is never the base of the next pull, and the next pull (ten
 * seconds later) always finds this one recorded.
 */
async function* recordedBeforeEnd(body: AsyncGenerator<string>, record: () => Promise<void>): AsyncGenerator<string> {
  let previous: string | undefined;
  for await (const chunk of body) {
    if (previous !== undefined) yield previous;
    previous = chunk;
  }
  await record();
  if (previous !== undefined) yield previous;
}

export function crowdsecHandlers(decisions: DecisionService): Handlers {
  return {
    async getDecisionsStream(req, res) {
      const { body, pull } = await decisions.stream(res.locals.bouncer!, req.query);
      res.status(200).type('application/json');
      await pipeline(Readable.from(recordedBeforeEnd(body, () => decisions.recordPull(pull))), res);
    },

    async getDecisions(req, res) {
      const answer = await decisions.lookup(res.locals.bouncer!, req.query);
      if ('found' in answer) {
        const body: ResponseOf<'getDecisions'> = answer.found.length ? answer.found : null;
        // Sent as text: `res.json(null)` would become a 204 under response validation.
        res.status(200).type('application/json').send(JSON.stringify(body));
        return;
      }
      res.status(200).type('application/json');
      await pipeline(Readable.from(answer.all), res);
    },
  };
}
