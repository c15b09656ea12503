import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { Answers } from './access.js';
import { errorBody } from './envelope.js';
import { DomainError, sentence, type ErrorKind } from '../errors.js';
import { ApiError, errorCode, MESSAGES, type ErrorLocation, type LocatedFieldError } from './errors.js';
import type { Locate } from './field-locations.js';
import type { Metering } from './metering.js';
import { QuotaExceeded } from '../keys/quota.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { incidentLogger } from '../logging.js';
import { API_BASE } from '../openapi.js';
import { protocolError } from './protocols.js';

interface ValidatorError extends Error {
  status: number;
  path?: string;
  errors?: { path: string; message: string; errorCode?: string }[];
  headers?: Record<string, string>;
}

interface BodyParserError extends Error {
  status: number;
  type: string;
  limit?: number;
}

const LOCATIONS: Record<string, ErrorLocation> = {
  query: 'query',
  params: 'path',
  path: 'path',
  body: 'body',
  headers: 'header',
  header: 'header',
};

/** `.query.limit` or `/body/ips/3` -> {location: 'query', name: 'limit'}. */
function fieldOf(rawPath: string): { location: ErrorLocation; name: string } {
  const parts = rawPath.split(/[./[\]]+/).filter(Boolean);
  if (parts[0] === 'request' || parts[0] === 'response') parts.shift();
  const location = LOCATIONS[parts[0] ?? ''];
  if (!location) return { location: 'body', name: parts.join('.') || '(body)' };
  return { location, name: parts.slice(1).join('.') || '(whole)' };
}

const PLACE: Record<ErrorLocation, string> = {
  query: 'query parameter',
  path: 'path parameter',
  header: 'header',
  body: 'body field',
};

function describe(errors: LocatedFieldError[]): string {
  const first = errors[0];
  if (!first) return 'The request does not match the API description.';
  const where = first.name === '(whole)' || first.name === '(body)' ? 'the request body' : `${PLACE[first.location]} '${first.name}'`;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''}, listed in meta.errors)` : '';
  return sentence(`Invalid request: ${where} ${first.message.replace(/\.+$/, '')}${more}`);
}

function validatorFieldErrors(err: ValidatorError): LocatedFieldError[] {
  return (err.errors ?? []).map((e) => {
    const { location, name } = fieldOf(e.path);
    const message = e.message.replace(/^must /, 'must ');
    return { location, name, message };
  });
}

interface Mapped {
  status: number;
  message: string;
  errors?: LocatedFieldError[];
  data?: Record<string, unknown>;
  headers?: Record<string, string>;
  code?: string;
  /** The top-level (relay: the only) message, where it says more than meta.message. */
  topLevelMessage?: string;
}

/** The status of each kind of domain error: the one place the domain meets HTTP. */
export const STATUS_OF: Record<ErrorKind, number> = {
  invalid_input: 400,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  gone: 410,
  too_large: 413,
  unprocessable: 422,
  rate_limited: 429,
  unavailable: 503,
};

/**
 * A domain error names its fields as the contract does; the edge says where each was sent (the
 * operation's parameter list), and words a refusal of one field as it words the validator's.
 */
function fromDomain(err: DomainError, located: (name: string) => ErrorLocation): Mapped {
  const { code, fields, retryAfter, restatesField } = err.details;
  const status = STATUS_OF[err.kind];
  const headers = retryAfter === undefined ? undefined : { 'Retry-After': String(retryAfter) };
  // A quota's 429 carries the specification's text and `data.retryAfter`; a throttle says its own.
  if (status === 429 && code === undefined) return { status, message: MESSAGES[429], data: { retryAfter }, headers };
  const errors = fields?.map((field) => ({ location: located(field.name), ...field }));
  const message = restatesField && errors?.length ? describe(errors) : err.message;
  return { status, message, code, errors, headers };
}

function map(err: unknown, req: Request, logger: Logger, incident: ReturnType<typeof incidentLogger>, located: (name: string) => ErrorLocation): Mapped {
  if (err instanceof DomainError) return fromDomain(err, located);
  if (err instanceof ApiError) {
    return { status: err.status, message: err.message, ...err.options };
  }
  const bodyError = err as BodyParserError;
  switch (bodyError?.type) {
    case 'entity.parse.failed':
      return { status: 400, message: sentence('The request body is not valid JSON: ' + bodyError.message.replace(/\s+in JSON at.*$/, '')) };
    case 'entity.too.large':
      return {
        status: 413,
        message: `The request body is larger than the limit of ${bodyError.limit} bytes.`,
      };
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return { status: 415, message: 'The request body must be UTF-8 encoded JSON or form data.' };
    case 'parameters.too.many':
      return { status: 413, message: 'The form has too many fields.' };
    case 'querystring.parse.rangeError':
      return { status: 400, message: 'The form nests fields too deeply.' };
    case 'request.aborted':
      return { status: 400, message: 'The request body was not received completely.' };
  }
  // Any other client error the body parser raises (a body that is not the gzip it claims).
  const httpError = err as { status?: number; expose?: boolean; errors?: unknown };
  if (httpError?.expose === true && !httpError.errors && typeof httpError.status === 'number' && httpError.status >= 400 && httpError.status < 500) {
    return { status: 400, message: 'The request body could not be read; send it as plain or correctly encoded JSON.' };
  }
  const validatorError = err as ValidatorError;
  if (typeof validatorError?.status === 'number' && Array.isArray(validatorError.errors)) {
    const status = validatorError.status;
    if (status === 404) return { status, message: `No endpoint at ${req.method} ${req.path}. See ${API_BASE}/docs.` };
    if (status === 405) {
      return {
        status,
        message: `${req.method} is not allowed on ${req.path}.`,
        headers: validatorError.headers,
      };
    }
    if (status === 415) {
      return {
        status,
        message: `The request body must be sent as application/json or application/x-www-form-urlencoded (got ${req.headers['content-type'] ?? 'none'}).`,
      };
    }
    if (status === 400) {
      const errors = validatorFieldErrors(validatorError);
      return { status, message: describe(errors), errors };
    }
    if (status >= 500) {
      // A response that breaks the contract: a bug of ours, logged with what was wrong.
      logger.error({ err: validatorError, problems: validatorError.errors }, 'response breaks the OpenAPI document');
      return { status: 500, message: 'The server failed to produce a valid response.' };
    }
    return { status, message: validatorError.message };
  }
  if (isDatabaseUnavailable(err)) {
    incident('error', 'http', err, 'database unavailable: answering 503');
    return { status: 503, message: 'The database is unavailable. Try again shortly.', headers: { 'Retry-After': '5' } };
  }
  logger.error({ err }, 'unexpected error');
  return { status: 500, message: 'An unexpected error occurred. It has been logged.' };
}

/** What the relay answers a request without a usable key (the envelope says MESSAGES[401]). */
const RELAY_MISSING_KEY = 'An API key is required in the X-Key header.';

/** The one place errors become responses: the envelope, the relay's and the webhooks' `{ok, code, message}`, or another protocol's. */
/**
 * `answersOf`: the shape the request's errors are answered in, as its operation's document says
 * (`x-access.answers`); for a request that matched no operation, its base's document's.
 */
export function errorHandler(logger: Logger, metering: Metering, answersOf: (req: Request, operationId: string | undefined) => Answers, locate: Locate) {
  // A database outage fails every request at once: one log line per incident, not per request.
  const incident = incidentLogger(logger);
  return async (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    // A refused charge: the counter's headers from its usage, and 429.
    if (err instanceof QuotaExceeded && !res.headersSent) err = metering.refused(res, err);
    // Errors raised before routing (a body too large, malformed JSON) have no operation yet.
    const operationId = res.locals.operationId ?? (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
    const mapped = map(err, req, req.log ?? logger, incident, (name) => locate(operationId, name));
    if (res.headersSent) {
      res.destroy();
      return;
    }
    const answers = answersOf(req, operationId);
    // Bouncers and webhooks have no daily counter: no rate-limit headers for them.
    if (mapped.status !== 503 && answers !== 'crowdsec' && answers !== 'webhook') await metering.ensureHeaders(req, res);
    for (const [name, value] of Object.entries(mapped.headers ?? {})) res.setHeader(name, value);
    if (answers === 'crowdsec' || answers === 'abuseipdb') {
      const { status, body } = protocolError(answers, mapped, res);
      res.status(status).json(body);
      return;
    }
    res.status(mapped.status);
    if (answers === 'relay' || answers === 'webhook') {
      const missingKey = answers === 'relay' && mapped.status === 401 && mapped.code === 'missing_api_key';
      const message = missingKey ? RELAY_MISSING_KEY : (mapped.topLevelMessage ?? mapped.message);
      const body: Record<string, unknown> = { ok: false, code: errorCode(mapped.status, mapped.code), message };
      if (mapped.errors?.length) body.errors = mapped.errors;
      res.json(body);
      return;
    }
    res.json(errorBody(mapped.status, mapped.message, errorCode(mapped.status, mapped.code), mapped.errors, mapped.data, mapped.topLevelMessage));
  };
}
