import type { WebhookService } from '../webhooks/service.js';
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from 'pino';
import type { AccountService } from '../account/accounts.js';
import type { AuditTrail } from '../audit/repository.js';
import type { AccountRow, Dashboard } from '../account/dashboard.js';
import { looksLikeToken, newToken } from '../account/secrets.js';
import type { Session, Sessions } from '../account/sessions.repository.js';
import type { AuthThrottle } from '../account/throttle.repository.js';
import type { Clock } from '../clock.js';
import type { WebConfig } from '../account/settings.js';
import type { KeyService } from '../keys/service.js';
import type { Meter } from '../keys/usage.repository.js';
import type { StripePayments } from '../payments/stripe.js';
import type { ReputationService } from '../reputation/service.js';
import type { StatsService } from '../stats/service.js';
import type { CategoryService } from '../categories/service.js';
import { clearCookie, cookieNames, readCookies, setCookie } from './cookies.js';
import { checkCsrf, csrfToken } from './csrf.js';
import type { Pages, PageContext } from './render.js';

export interface WebDeps {
  config: WebConfig;
  clock: Clock;
  logger: Logger;
  pages: Pages;
  accounts: AccountService;
  sessions: Sessions;
  throttle: AuthThrottle;
  audit: AuditTrail;
  dashboard: Dashboard;
  keys: KeyService;
  meter: Meter;
  stats: StatsService;
  categories: CategoryService;
  reputation: ReputationService;
  stripe: StripePayments | undefined;
  /** The account's outbound webhooks, for their delivery log. */
  webhooks: WebhookService;
  /** The shared CSRF key (account/secrets.ts sharedSecret), read once. */
  csrfKey: () => Promise<Buffer>;
}

export interface WebLocals {
  session?: Session;
  account?: AccountRow;
  /** What this browser's CSRF tokens are bound to: the session id, else the pre-session cookie. */
  binding: string;
  csrf: string;
}

declare module 'express-serve-static-core' {
  interface Locals {
    web?: WebLocals;
  }
}

/** A form that cannot be taken (a repeated, over-long or non-text field): 400. */
export class FormError extends Error {}

/** One text field of a urlencoded form, at most `max` characters; a field sent twice is refused. */
export function field(req: Request, name: string, max: number): string {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  if (value === undefined) return '';
  if (typeof value !== 'string') throw new FormError(`The field ${name} was sent more than once.`);
  if (value.length > max) throw new FormError(`The field ${name} is longer than ${max} characters.`);
  return value;
}

/**
 * The path of a `next` page: /account or a page under it, in plain segments (letters, digits,
 * `-`, `_`, dots inside a name), none of them `.` or `..`, with no empty segment (`//`), no
 * backslash and no percent-encoding: nothing that a browser, a proxy or the router would resolve
 * into another path (`/account/..//evil.example` is `//evil.example`, another origin's).
 */
const NEXT_PATH = /^\/account(?:\/[A-Za-z0-9_-][A-Za-z0-9._-]*)*$/;
/** Its query, if any: parameters as the pages' own links write them (a filter of the audit trail). */
const NEXT_QUERY = /^[A-Za-z0-9\-._~=&%+]*$/;

/** A `next` page after sign-in: a page under /account, spelled plainly; else `fallback` (no open redirect, no way out of /account). */
export function localPath(value: unknown, fallback = '/account'): string {
  if (typeof value !== 'string' || value.length > 200) return fallback;
  const query = value.indexOf('?');
  const path = query === -1 ? value : value.slice(0, query);
  if (!NEXT_PATH.test(path)) return fallback;
  if (query !== -1 && !NEXT_QUERY.test(value.slice(query + 1))) return fallback;
  return value;
}

export function pageContext(deps: WebDeps, res: Response): PageContext {
  const web = res.locals.web!;
  return { serviceName: deps.config.serviceName, signedInAs: web.account?.email, csrf: web.csrf };
}

/**
 * Reads the session (and the account) of every page request, and makes sure an anonymous
 * browser has the pre-session cookie its forms' CSRF tokens are bound to.
 */
export function webContext(deps: WebDeps) {
  const names = cookieNames(deps.config.cookieSecure);
  return async (req: Request, res: Response, next: NextFunction) => {
    const cookies = readCookies(req);
    const session = await deps.sessions.find(cookies.get(names.session));
    const account = session ? await deps.dashboard.account(session.accountId) : undefined;
    if (cookies.has(names.session) && !account) clearCookie(res, names.session, deps.config.cookieSecure);
    let binding = account ? session!.token : cookies.get(names.pre);
    if (!looksLikeToken(binding)) {
      binding = newToken();
      setCookie(res, names.pre, binding, { secure: deps.config.cookieSecure });
    }
    res.locals.web = { session: account ? session : undefined, account, binding, csrf: csrfToken(await deps.csrfKey(), binding) };
    next();
  };
}

/** Every state-changing form: a urlencoded body with this browser's CSRF token, from this site. */
export function requireCsrf(deps: WebDeps) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (!req.is('application/x-www-form-urlencoded')) {
      deps.pages.send(res, 'message', { ...pageContext(deps, res), title: 'Unsupported form', text: 'Send this form from its page.' }, 415);
      return;
    }
    const verdict = checkCsrf(req, await deps.csrfKey(), res.locals.web!.binding, deps.config.publicUrl);
    if (verdict !== 'ok') {
      req.log?.warn({ csrf: verdict, path: req.path }, 'form refused: CSRF check failed');
      deps.pages.send(
        res,
        'message',
        { ...pageContext(deps, res), title: 'This form has expired', text: 'The form was not sent from this site, or it is too old. Open the page again and send it once more.' },
        403,
      );
      return;
    }
    next();
  };
}

/** Pages of a signed-in account; others are sent to sign in, and come back here after. */
export function requireAccount(req: Request, res: Response, next: NextFunction) {
  if (res.locals.web?.account) return next();
  if (req.method === 'GET') {
    res.redirect(303, `/account/sign-in?next=${encodeURIComponent(localPath(req.originalUrl))}`);
    return;
  }
  res.redirect(303, '/account/sign-in');
}

/** Starts a session for an account: a new id whatever the browser sent before (no fixation). */
export async function startSession(deps: WebDeps, req: Request, res: Response, accountId: number, ip: string): Promise<void> {
  const names = cookieNames(deps.config.cookieSecure);
  await deps.sessions.destroy(readCookies(req).get(names.session));
  const session = await deps.sessions.create(accountId, ip, String(req.headers['user-agent'] ?? ''));
  setCookie(res, names.session, session.token, { secure: deps.config.cookieSecure, maxAgeSeconds: deps.config.sessionAbsoluteMs / 1000 });
}

export async function endSession(deps: WebDeps, req: Request, res: Response): Promise<void> {
  const names = cookieNames(deps.config.cookieSecure);
  await deps.sessions.destroy(readCookies(req).get(names.session));
  clearCookie(res, names.session, deps.config.cookieSecure);
}
