/** Where a bad input was found, as `meta.errors[].location` names it. */
export type ErrorLocation = 'path' | 'query' | 'header' | 'body';

export interface FieldError {
  location: ErrorLocation;
  name: string;
  message: string;
}

/**
 * An error meant for the caller. The central error handler turns it into the envelope (or the
 * relay error body); anything else that is thrown becomes a 500 with no detail.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly options: {
      errors?: FieldError[];
      data?: Record<string, unknown>;
      headers?: Record<string, string>;
      /** The machine-readable error code; without one, the status's default (ERROR_CODES). */
      code?: string;
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

export const unauthorized = (code: 'missing_api_key' | 'invalid_api_key' = 'invalid_api_key') => new ApiError(401, MESSAGES[401], { code });
export const forbidden = () => new ApiError(403, MESSAGES[403], { code: 'tier_forbidden' });
export const rateLimited = (retryAfter: number) =>
  new ApiError(429, MESSAGES[429], {
    data: { retryAfter },
    headers: { 'Retry-After': String(retryAfter) },
  });
export const unprocessable = (message: string, errors?: FieldError[], code?: string) =>
  new ApiError(422, message, { errors, code });

/**
 * Defence in depth: a service checks the bounds the document states for what it is given,
 * so that no route around the validator can hand it more (400, as the validator would say).
 */
export function within(location: ErrorLocation, name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    const message = `must be an integer from ${min} to ${max}`;
    throw new ApiError(400, `Invalid request: ${location === 'body' ? 'body field' : `${location} parameter`} '${name}' ${message}.`, {
      errors: [{ location, name, message }],
    });
  }
  return value;
}
