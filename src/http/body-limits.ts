import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { hasValidKey } from './auth.js';
import { ApiError } from './errors.js';
import { formParser } from './form-bodies.js';

/**
 * The body a request without a valid key may send (no key, an unknown, revoked or malformed
 * one). No operation of the three documents takes a body without a key, so such a body only
 * has to be small enough to be refused well (400, 401, 415): a stranger never makes the server
 * read, hold or parse more than this. The documents state it with their 413.
 */
export const KEYLESS_BODY_LIMIT = 64 * 1024;

const keylessTooLarge = () =>
  new ApiError(413, `The request body is larger than the limit of ${KEYLESS_BODY_LIMIT} bytes for a request without a valid API key.`);

/** The parser's own 413 (a body without a declared length that runs past the limit), said as above. */
const asKeyless = (parser: RequestHandler): RequestHandler => (req, res, next) =>
  parser(req, res, (err?: unknown) => next((err as { type?: string } | undefined)?.type === 'entity.too.large' ? keylessTooLarge() : err));

/**
 * The JSON and form parsers of the APIs: bodies up to `limit` from a request whose key was
 * found valid before its body is read (http/auth.ts authenticateBeforeBody), up to
 * KEYLESS_BODY_LIMIT from any other. A larger declared length is refused before anything of
 * the body is read; a body without one is cut off by the parser at the limit.
 */
export function boundedBodyParsers(limit: number): RequestHandler[] {
  const json = { full: express.json({ limit, type: 'application/json' }), keyless: asKeyless(express.json({ limit: KEYLESS_BODY_LIMIT, type: 'application/json' })) };
  const form = { full: formParser(limit), keyless: asKeyless(formParser(KEYLESS_BODY_LIMIT)) };
  const either = (parsers: { full: RequestHandler; keyless: RequestHandler }) => (req: Request, res: Response, next: NextFunction) =>
    (hasValidKey(res) ? parsers.full : parsers.keyless)(req, res, next);
  const declared = (req: Request, res: Response, next: NextFunction) => {
    if (!hasValidKey(res) && Number(req.headers['content-length']) > KEYLESS_BODY_LIMIT) return next(keylessTooLarge());
    next();
  };
  return [declared, either(json), either(form)];
}

/** Multer's limits (busboy's), per request. */
export interface MultipartLimits {
  fileSize: number;
  files: number;
  fields: number;
  parts: number;
  fieldSize?: number;
}

/**
 * The limits of a multipart body (the AbuseIPDB bulk report's CSV file): `limits` with a valid
 * key, at most KEYLESS_BODY_LIMIT of file and 1 KiB per field without one. Multer reads them per
 * request (`limits` as a function, multer 2.5).
 */
export function multipartLimits(limits: MultipartLimits): (req: Request) => MultipartLimits {
  const keyless: MultipartLimits = { ...limits, fileSize: Math.min(limits.fileSize, KEYLESS_BODY_LIMIT), fieldSize: 1024 };
  return (req) => (req.res && hasValidKey(req.res) ? limits : keyless);
}
