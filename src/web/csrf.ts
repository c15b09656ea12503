import type { Request } from 'express';
import { hmac, sameText } from '../account/secrets.js';

/**
 * CSRF tokens bound to the browser: HMAC-SHA256 of the session id (signed in) or of the
 * pre-session cookie (anonymous forms), under a server key every process shares. Each form
 * carries it as `_csrf`; a POST without the matching token is refused, compared in constant
 * time. A browser that says the request comes from another site (`Sec-Fetch-Site`) or from
 * another origin (`Origin`) is refused before the token is even read.
 */
export const CSRF_FIELD = '_csrf';

export function csrfToken(key: Buffer, binding: string): string {
  return hmac(key, `csrf:${binding}`);
}

export type CsrfVerdict = 'ok' | 'cross_site' | 'missing' | 'wrong';

export function checkCsrf(req: Request, key: Buffer, binding: string | undefined, ownOrigin: string | undefined): CsrfVerdict {
  const site = req.headers['sec-fetch-site'];
  if (site === 'cross-site' || site === 'same-site') return 'cross_site';
  const origin = req.headers.origin;
  // `null` is what a browser sends under Referrer-Policy: no-referrer (and from sandboxes): the
  // token decides then.
  if (typeof origin === 'string' && origin !== 'null' && origin !== ownOrigin && origin !== requestOrigin(req)) return 'cross_site';
  const given = (req.body as Record<string, unknown> | undefined)?.[CSRF_FIELD];
  if (typeof given !== 'string' || given === '' || !binding) return 'missing';
  return sameText(given, csrfToken(key, binding)) ? 'ok' : 'wrong';
}

/** The origin the request was made to, as the browser sees it (behind a trusted proxy too). */
function requestOrigin(req: Request): string {
  return `${req.protocol}://${req.get('host') ?? ''}`;
}
