import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { ApiError } from './errors.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /** A webhook's body as it came, before parsing: what its signature is checked on. */
    rawBody?: Buffer;
  }
}

/**
 * The body parsers of the inbound webhooks (openapi/internal/): JSON and forms, parsed for the
 * validator, each keeping the raw bytes in `res.locals.rawBody` for the signature. `limitOf`
 * gives each path's limit in bytes (its document states it with 413).
 */
export function webhookBodyParsers(limitOf: (path: string) => number): RequestHandler[] {
  const keep = (_req: Request, res: Response, buffer: Buffer) => {
    res.locals.rawBody = buffer;
  };
  const parsers = new Map<number, RequestHandler[]>();
  const parsersOf = (limit: number) => {
    let made = parsers.get(limit);
    if (!made) {
      made = [
        express.json({ limit, type: 'application/json', verify: keep as never }),
        express.urlencoded({ limit, extended: false, parameterLimit: 100, type: 'application/x-www-form-urlencoded', verify: keep as never }),
      ];
      parsers.set(limit, made);
    }
    return made;
  };
  return [
    (req: Request, res: Response, next: NextFunction) => {
      const limit = limitOf(req.path);
      if (Number(req.headers['content-length']) > limit) return next(new ApiError(413, `The request body is larger than the limit of ${limit} bytes.`));
      const [json, form] = parsersOf(limit) as [RequestHandler, RequestHandler];
      json(req, res, (err?: unknown) => (err ? next(err) : form(req, res, next)));
    },
  ];
}

/** The webhook's raw body as it came ('' without one). */
export const rawBodyOf = (res: Response): Buffer => res.locals.rawBody ?? Buffer.alloc(0);

/** A webhook's refusal, in its document's error shape. */
export const webhookRefusal = (refusal: { status: number; code: string; message: string; allow?: string }): ApiError =>
  new ApiError(refusal.status, refusal.message, { code: refusal.code, ...(refusal.allow && { headers: { Allow: refusal.allow } }) });
