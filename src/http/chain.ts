import type { NextFunction, Request, RequestHandler, Response } from 'express';

/**
 * Runs middleware one after the other as Express runs a route's: each function gets `next`; a
 * throw, a rejected promise or `next(err)` leaves the chain for `done` with the error. An
 * operation's compiled chain (app.ts) and the validator's steps (validator.ts) run so, without
 * a layer of Express's router for each.
 */
export function runChain(chain: readonly RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let i = 0;
  const step = (err?: unknown): void => {
    if (err !== undefined && err !== null) return done(err);
    const fn = chain[i++];
    if (!fn) return done();
    try {
      const ret = fn(req, res, step) as unknown;
      if (ret instanceof Promise) ret.then(undefined, (e: unknown) => done(e ?? new Error('Rejected promise')));
    } catch (e) {
      done(e);
    }
  };
  step();
}

/** Middleware run one after the other as one (see runChain). */
export function inOrder(fns: readonly RequestHandler[]): RequestHandler {
  return (req, res, next) => runChain(fns, req, res, next);
}
