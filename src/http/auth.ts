import type { NextFunction, Request, Response } from 'express';
import { looksLikeKey, type Caller, type KeyAuthenticator } from '../keys/keys.js';
import { hasFeature } from '../keys/roles.js';
import type { AccessRule } from './access.js';
import { siteHost, type KeySites } from '../keys/sites.js';
import { ApiError, forbidden, MESSAGES, UNAUTHORIZED_HINT, unauthorized } from './errors.js';
import type { AnyOperationId } from './types.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /** The authenticated caller; undefined for a public call without a key. */
    caller?: Caller;
    operationId?: AnyOperationId;
  }
}

/**
 * The key sent with the request: its header (`X-Key`; AbuseIPDB clients send `Key`), else the
 * `key` query parameter.
 */
export function presentedKey(req: Request, headerName: 'x-key' | 'key' = 'x-key'): string | undefined {
  const header = req.headers[headerName];
  if (typeof header === 'string' && header !== '') return header;
  const query = (req.query as Record<string, unknown>).key;
  return typeof query === 'string' && query !== '' ? query : undefined;
}

const relayUnauthorized = (code: 'missing_api_key' | 'invalid_api_key') =>
  code === 'missing_api_key'
    ? new ApiError(401, 'An API key is required in the X-Key header.', { code })
    : new ApiError(401, MESSAGES[401], { code, topLevelMessage: UNAUTHORIZED_HINT });

/**
 * Authentication and feature access for one operation, as its `x-access` says (http/access.ts):
 * a key that is sent must be valid (401 otherwise, even on public operations); a key operation
 * without a key is 401; a role without the operation's feature is 403.
 */
export function guard(operationId: AnyOperationId, rule: AccessRule, keys: KeyAuthenticator, keyHeader: 'x-key' | 'key' = 'x-key') {
  return async (req: Request, res: Response, next: NextFunction) => {
    res.locals.operationId = operationId;
    const key = presentedKey(req, keyHeader);
    if (key === undefined) {
      if (rule.feature) throw rule.relay ? relayUnauthorized('missing_api_key') : unauthorized('missing_api_key');
      return next();
    }
    // The relay names a malformed key as missing; other operations say 401 either way.
    if (rule.relay && !looksLikeKey(key)) throw relayUnauthorized('missing_api_key');
    const caller = await keys.authenticate(key);
    if (!caller) throw rule.relay ? relayUnauthorized('invalid_api_key') : unauthorized();
    res.locals.caller = caller;
    if (rule.feature && !hasFeature(caller.role, rule.feature)) {
      throw rule.relay
        ? new ApiError(403, `The ${caller.role} tier is not eligible for the relay.`, { code: 'tier_forbidden' })
        : forbidden();
    }
    next();
  };
}

/**
 * The site a keyed request names (`X-Rip-Site`, the ReportedIP plugins' header) is counted for
 * the key today, and a new site beyond the role's limit is refused with 403
 * `domain_limit_exceeded`. A header that is not an http(s) URL names no site.
 */
export function siteLimit(rule: AccessRule, sites: KeySites) {
  const counts = rule.countsSite;
  return async (req: Request, res: Response, next: NextFunction) => {
    const caller = res.locals.caller;
    const header = req.headers['x-rip-site'];
    const site = counts && caller && typeof header === 'string' && header.length <= 2048 ? siteHost(header) : undefined;
    if (site === undefined) return next();
    const use = await sites.use(caller!, site);
    if (!use.allowed) {
      throw new ApiError(
        403,
        `This key has been used from ${use.used} sites today, the most its ${caller!.role} role allows; ${site} was not taken. More sites can be used tomorrow (UTC).`,
        { code: 'domain_limit_exceeded' },
      );
    }
    next();
  };
}
