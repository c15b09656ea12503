/**
 * The errors the domain throws when it refuses something. They say what went wrong in the
 * domain's terms (invalid input, not found, a quota used up, a tier without the feature …) and
 * know nothing of HTTP: one table in src/http/error-handler.ts turns each kind into a status,
 * a body (the envelope, or the relay's `{ok, code, message}`) and headers.
 */

/**
 * One bad input, by the name the contract gives it (a parameter or a body field, `ips` or
 * `ips.3`). Where it was sent (query, path, header, body) is HTTP's business: the edge finds it
 * in the operation's parameter list (src/http/field-locations.ts) and says it.
 */
export interface FieldError {
  name: string;
  message: string;
}

export type ErrorKind =
  /** The input breaks the operation's own bounds (what the contract states, checked again). */
  | 'invalid_input'
  /** Well formed, but refused: an address that cannot be reported, an unknown category … */
  | 'unprocessable'
  | 'not_found'
  /** What the request names is no longer kept (an old blacklist to take a delta from). */
  | 'gone'
  /** The caller's tier lacks what it asked for. */
  | 'forbidden'
  /** A monthly allowance and its prepaid balance are used up. */
  | 'payment_required'
  /** A limit in time: a quota or a throttle; `retryAfter` says when to come back. */
  | 'rate_limited'
  /** More than one request may carry. */
  | 'too_large'
  /** Something the service needs is not there (not configured, a dependency down). */
  | 'unavailable';

export interface ErrorDetails {
  /** The machine-readable code (`unknown_category`, `cap_reached_buy_bundle` …). */
  code?: string;
  fields?: FieldError[];
  /** Seconds until the caller may try again. */
  retryAfter?: number;
  /**
   * The message only restates `fields[0]` (invalidField): the edge words it with the field's
   * location, as it words the validator's refusals.
   */
  restatesField?: boolean;
}

export class DomainError extends Error {
  override readonly name = 'DomainError';

  constructor(
    readonly kind: ErrorKind,
    message: string,
    readonly details: ErrorDetails = {},
  ) {
    super(message);
  }
}

/**
 * A message as one sentence: the text with exactly one final period. Every message built by
 * ending a text with a period goes through it, so that a text that already ends with one (a
 * reason given as a sentence) does not end with two.
 */
export function sentence(text: string): string {
  const trimmed = text.trimEnd();
  if (/[!?]$/.test(trimmed)) return trimmed;
  return `${trimmed.replace(/\.+$/, '')}.`;
}

/**
 * One field's bad value: `Invalid request: 'ips' must be …` with the field listed; the edge
 * answers it as `Invalid request: body field 'ips' must be …`.
 */
export function invalidField(name: string, message: string, code?: string): DomainError {
  return new DomainError('invalid_input', sentence(`Invalid request: '${name}' ${message}`), {
    code,
    fields: [{ name, message }],
    restatesField: true,
  });
}

export const unprocessable = (message: string, fields?: FieldError[], code?: string) => new DomainError('unprocessable', message, { fields, code });

/**
 * Defence in depth: a service checks the bounds the document states for what it is given, so
 * that no route around the validator can hand it more.
 */
export function within(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) throw invalidField(name, `must be an integer from ${min} to ${max}`);
  return value;
}
