import type { FieldError } from '../errors.js';

/** Where a bad input was sent, as `meta.errors[].location` names it: the edge's to say. */
export type ErrorLocation = 'path' | 'query' | 'header' | 'body';

/** A bad input as answered: the domain's field error and where it was sent. */
export interface LocatedFieldError extends FieldError {
  location: ErrorLocation;
}

/**
 * An error of the HTTP edge meant for the caller (authentication, paths, the validator's): the
 * central error handler turns it into the envelope (or the relay error body). The domain throws
 * DomainError (src/errors.ts) instead, which the handler maps by its kind; anything else that is
 * thrown becomes a 500 with no detail.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly options: {
      errors?: LocatedFieldError[];
      data?: Record<string, unknown>;
      headers?: Record<string, string>;
      /** The machine-readable error code; without one, the status's default (ERROR_CODES). */
      code?: string;
      /**
       * The top-level `message` (the relay's `message`), where it says more than `meta.message`,
       * whose text the specification fixes: what the caller should do.
       */
      topLevelMessage?: string;
    } = {},
  ) {
    super(message);
  }
}

/** The texts of the specification's error table. */
export const MESSAGES = {
  401: 'Invalid or missing API key.',
  403: 'Your role does not have access to this endpoint.',
  429: 'Rate limit exceeded. Try again later.',
} as const;

/**
 * The top-level `message` of a 401: the specification's text with what to do. `meta.message`
 * keeps the specification's text, which clients may compare.
 */
export const UNAUTHORIZED_HINT = 'Invalid or missing API key: send it in the X-Key header.';

/** The code of an error answer by status, unless the error names its own. */
export const ERROR_CODES: Readonly<Record<number, string>> = {
  400: 'invalid_request',
  401: 'invalid_api_key',
  403: 'tier_forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  422: 'unprocessable',
  429: 'rate_limited',
  501: 'not_implemented',
  503: 'service_unavailable',
};

export function errorCode(status: number, code?: string): string {
  return code ?? (Object.hasOwn(ERROR_CODES, status) ? ERROR_CODES[status]! : 'internal_error');
}

export const unauthorized = (code: 'missing_api_key' | 'invalid_api_key' = 'invalid_api_key') =>
  new ApiError(401, MESSAGES[401], { code, topLevelMessage: UNAUTHORIZED_HINT });
export const forbidden = () => new ApiError(403, MESSAGES[403], { code: 'tier_forbidden' });
export const rateLimited = (retryAfter: number) =>
  new ApiError(429, MESSAGES[429], {
    data: { retryAfter },
    headers: { 'Retry-After': String(retryAfter) },
  });
