import type { NextFunction, Request, Response } from 'express';
import { API_BASE } from '../openapi.js';
import { ApiError } from './errors.js';

/**
 * One spelling per path. Express routes case-sensitively and strictly here, and before any
 * route or the validator sees a request, its path is brought to its one canonical form or
 * refused:
 *
 * - a percent-encoded character is decoded and re-encoded the one way `encodeURIComponent`
 *   does (colons of IPv6 addresses stay plain), so `/reports/2001%3Adb8%3A%3A1` is served
 *   exactly as `/reports/2001:db8::1`, the validator included;
 * - an empty segment (`//`, a trailing `/`), a dot segment, an encoded `/`, `\`, NUL or a byte
 *   sequence that is not UTF-8 has no canonical form: 404;
 * - a path under an alias base (for clients that cannot change their path) is rewritten to the
 *   same path under `/api/v2`, so every spelling passes the one validator.
 *
 * Upper-case spellings are not rewritten: they match no route and get 404.
 */
export interface PathAlias {
  /** e.g. `/wp-json/reportedip/v2` */
  base: string;
  /** The base it stands for, e.g. `/api/v2`. */
  target: string;
}

const NO_CANONICAL_FORM = /[/\\\u0000]/;

/** The canonical spelling of one path segment, or undefined when it has none. */
export function canonicalSegment(raw: string): string | undefined {
  if (raw === '' || raw === '.' || raw === '..') return undefined;
  if (!raw.includes('%')) return raw;
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return undefined;
  }
  if (NO_CANONICAL_FORM.test(decoded) || decoded === '.' || decoded === '..') return undefined;
  return encodeURIComponent(decoded).replace(/%3A/g, ':');
}

/** The canonical spelling of a path, or undefined when it has none. `/` is its own. */
export function canonicalPath(path: string): string | undefined {
  if (path === '/') return path;
  if (!path.startsWith('/')) return undefined;
  const segments = path.slice(1).split('/').map(canonicalSegment);
  if (segments.some((s) => s === undefined)) return undefined;
  return '/' + segments.join('/');
}

/** The first middleware: every later one sees the canonical path (req.url rewritten). */
export function canonicalPaths(aliases: readonly PathAlias[] = []) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const url = req.url;
    const q = url.indexOf('?');
    const rawPath = q < 0 ? url : url.slice(0, q);
    let path = canonicalPath(rawPath);
    if (path === undefined) {
      throw new ApiError(404, `No endpoint at ${req.method} ${truncate(rawPath)}. See ${API_BASE}/docs.`);
    }
    for (const alias of aliases) {
      if (path === alias.base || path.startsWith(alias.base + '/')) {
        path = alias.target + path.slice(alias.base.length);
        break;
      }
    }
    if (path !== rawPath) req.url = path + (q < 0 ? '' : url.slice(q));
    next();
  };
}

function truncate(text: string): string {
  return text.length > 100 ? `${text.slice(0, 100)}…` : text;
}
