import type { Response } from 'express';
import { sentence } from '../errors.js';
import type { LocatedFieldError } from './errors.js';

/**
 * The other protocols answer errors in their own shapes: CrowdSec's LAPI `{"message": …}`,
 * AbuseIPDB `{"errors": [{"detail", "status", "source": {"parameter"}}]}`. Which shape a request
 * gets is its document's `x-access.answers` (http/access.ts), whatever went wrong.
 */
export type Protocol = 'crowdsec' | 'abuseipdb';

/** What AbuseIPDB answers for a missing, unknown or revoked key. */
export const ABUSEIPDB_AUTHENTICATION_FAILED =
  'Authentication failed. Your API key is either missing, incorrect, or revoked. Note: The APIv2 key differs from the APIv1 key.';

export interface ErrorAnswer {
  status: number;
  message: string;
  errors?: LocatedFieldError[];
}

/** The status and body of an error in a protocol's shape. */
export function protocolError(protocol: Protocol, error: ErrorAnswer, res: Response): { status: number; body: unknown } {
  if (protocol === 'crowdsec') {
    const body: { message: string; errors?: string } = { message: error.message };
    if ((error.errors?.length ?? 0) > 1) body.errors = error.errors!.map((e) => `${e.name}: ${e.message}`).join('; ');
    return { status: error.status, body };
  }
  // AbuseIPDB refuses a bad parameter with 422; a body it cannot read stays 400.
  const status = error.status === 400 && error.errors?.length ? 422 : error.status;
  let detail = error.message;
  if (status === 401) detail = ABUSEIPDB_AUTHENTICATION_FAILED;
  if (status === 429 && res.getHeader('X-RateLimit-Limit') !== undefined) {
    detail = `Daily rate limit of ${String(res.getHeader('X-RateLimit-Limit'))} requests exceeded for this endpoint. See the Retry-After header for the seconds until it resets.`;
  }
  const errors = error.errors?.length
    ? error.errors.map((e) => ({ detail: sentence(`The ${e.name} parameter ${e.message}`), status, source: { parameter: e.name } }))
    : [{ detail, status }];
  return { status, body: { errors } };
}
