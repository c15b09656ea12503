import type { NextFunction, Request, Response } from 'express';
import { looksLikeKey, type Caller, type KeyAuthenticator } from '../keys/service.js';
import { hasFeature } from '../roles.js';
import type { AccessRule } from './access.js';
import { siteHost, siteRefused } from '../keys/sites.js';
import { type KeySites } from '../keys/sites.repository.js';
import { ApiError, forbidden, unauthorized } from './errors.js';
import type { AnyOperationId } from './types.js';

declare module 'express-serve-static-core' {
  interface Locals {
    /** The authenticated caller; undefined for a public call without a key. */
    caller?: Caller;
    operationId?: AnyOperationId;
    /**
     * The key a request with a body presented, looked up before its body is read
     * (authenticateBeforeBody); `caller` undefined for an unknown, revoked or malformed key.
     */
    presented?: { key: string; caller: Caller | undefined };
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

/** Whether the request carries a body (as body-parser and type-is tell). */
function carriesBody(req: Request): boolean {
  return req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
}

/**
 * Looks up the key of a request that carries a body before the body is read, so that only a
 * valid key's request may send a large one (http/body-limits.ts): the cached lookup `guard`
 * then takes over instead of making it again. It refuses nothing itself: what a missing or bad
 * key gets is `guard`'s to say, after the validator, as for a request without a body.
 * `keyHeader`: the header the request's document takes its key in, if any.
 */
export function authenticateBeforeBody(keys: KeyAuthenticator, keyHeader: (path: string) => 'x-key' | 'key' | undefined) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = keyHeader(req.path);
    const key = header !== undefined && carriesBody(req) ? presentedKey(req, header) : undefined;
    if (key !== undefined) res.locals.presented = { key, caller: await keys.authenticate(key) };
    next();
  };
}

/** Whether the request presented a valid key before its body was read (authenticateBeforeBody). */
export const hasValidKey = (res: Response): boolean => res.locals.presented?.caller !== undefined;

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
      if (rule.feature) throw unauthorized('missing_api_key');
      return next();
    }
    // The relay names a malformed key as missing; other operations say 401 either way.
    if (rule.relay && !looksLikeKey(key)) throw unauthorized('missing_api_key');
    const early = res.locals.presented;
    const caller = early?.key === key ? early.caller : await keys.authenticate(key);
    if (!caller) throw unauthorized();
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
 * `domain_limit_exceeded`. A header that is not an http(s) URL, or whose host name is longer
 * than DNS allows (253 characters), names no site.
 */
export function siteLimit(rule: AccessRule, sites: KeySites) {
  const counts = rule.countsSite;
  return async (req: Request, res: Response, next: NextFunction) => {
    const caller = res.locals.caller;
    const header = req.headers['x-rip-site'];
    const site = counts && caller && typeof header === 'string' && header.length <= 2048 ? siteHost(header) : undefined;
    if (site === undefined) return next();
    const use = await sites.use(caller!, site);
    if (!use.allowed) throw siteRefused(caller!, site, use);
    next();
  };
}
