import type { Request, Response } from 'express';

/**
 * The two cookies of the web pages: the session (signed in) and the pre-session binding that
 * CSRF tokens of anonymous forms (sign-in, sign-up, reset) are tied to. Both HttpOnly and
 * SameSite=Lax (the return from Stripe Checkout is a top-level GET and must still be signed in).
 * With COOKIE_SECURE (the default in production) they are Secure and carry the `__Host-` prefix,
 * which a browser only accepts from a secure origin, for Path=/ and without Domain: no sub-domain
 * or plain-http page can set or overwrite them. On plain http (local development, the tests)
 * they cannot be Secure, so they go without the prefix.
 */
export interface CookieNames {
  session: string;
  pre: string;
}

export function cookieNames(secure: boolean): CookieNames {
  return secure ? { session: '__Host-trs_session', pre: '__Host-trs_pre' } : { session: 'trs_session', pre: 'trs_pre' };
}

/** The cookies of a request; a name sent twice keeps its first value. Values are not decoded. */
export function readCookies(req: Request): Map<string, string> {
  const cookies = new Map<string, string>();
  const header = req.headers.cookie;
  if (typeof header !== 'string' || header.length > 8_192) return cookies;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    const name = part.slice(0, eq).trim();
    if (name && !cookies.has(name)) cookies.set(name, part.slice(eq + 1).trim());
  }
  return cookies;
}

export function setCookie(res: Response, name: string, value: string, options: { secure: boolean; maxAgeSeconds?: number }): void {
  const parts = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (options.secure) parts.push('Secure');
  if (options.maxAgeSeconds !== undefined) parts.push(`Max-Age=${Math.max(0, Math.floor(options.maxAgeSeconds))}`);
  res.append('Set-Cookie', parts.join('; '));
}

export function clearCookie(res: Response, name: string, secure: boolean): void {
  setCookie(res, name, '', { secure, maxAgeSeconds: 0 });
}
