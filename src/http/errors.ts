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
      /** The relay error code (relay operations only). */
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

export const unauthorized = () => new ApiError(401, MESSAGES[401]);
export const forbidden = () => new ApiError(403, MESSAGES[403]);
export const rateLimited = (retryAfter: number) =>
  new ApiError(429, MESSAGES[429], {
    data: { retryAfter },
    headers: { 'Retry-After': String(retryAfter) },
  });
export const unprocessable = (message: string, errors?: FieldError[]) =>
  new ApiError(422, message, { errors });
