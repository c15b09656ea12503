/**
 * A request the domain refuses, for a reason it can name. Services throw it knowing nothing of
 * HTTP; http/error-handler.ts maps each kind to a status, and each protocol shapes the body.
 *
 * - `invalid`: the input is malformed (400 in /api/v2; AbuseIPDB says 422)
 * - `refused`: well formed but not acceptable (422)
 * - `gone`: what the request names is no longer kept (410)
 * - `too_large`: more than the operation takes (413)
 */
export type DomainErrorKind = 'invalid' | 'refused' | 'gone' | 'too_large';

export interface DomainErrorField {
  /** The parameter or body field at fault. */
  name: string;
  location: 'query' | 'body' | 'path';
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly kind: DomainErrorKind,
    /** Machine-readable: `network_too_large`, `snapshot_expired`, … */
    readonly code: string,
    message: string,
    readonly field?: DomainErrorField,
  ) {
    super(message);
  }
}

/**
 * Defence in depth: an integer input within the bounds the document states for it (so that no
 * route around the validator hands a service more), or `invalid`.
 */
export function inRange(location: DomainErrorField['location'], name: string, value: number, min: number, max: number): number {
  if (Number.isInteger(value) && value >= min && value <= max) return value;
  const message = `must be an integer from ${min} to ${max}`;
  const place = location === 'body' ? 'body field' : `${location} parameter`;
  throw new DomainError('invalid', 'invalid_request', `Invalid request: ${place} '${name}' ${message}.`, { location, name, message });
}
