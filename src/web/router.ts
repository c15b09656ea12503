import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import { authPages } from './auth-pages.js';
import { FormError, requireAccount, requireCsrf, webContext, type WebDeps } from './context.js';
import { dashboardPages } from './dashboard-pages.js';
import { delistPages, type DelistPageDeps } from './delist-pages.js';
import { publicPages } from './public-pages.js';
import { isDatabaseUnavailable } from '../db/errors.js';
import { DomainError } from '../errors.js';
import { incidentLogger } from '../logging.js';

/**
 * The web pages: `/` (statistics, map, trends, lookup), `/lookup`, and the account pages under
 * `/account`. They sit outside `/api/v2` and its validator, so each form is bounded here: a
 * urlencoded body of at most 16 KiB and 20 fields, every field a single string of a bounded
 * length (context.ts `field`), a CSRF token on every POST.
 */
export function webRouter(deps: WebDeps & DelistPageDeps): Router {
  const router = express.Router({ strict: true, caseSensitive: true });
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20, type: 'application/x-www-form-urlencoded' });
  const page = webContext(deps);
  const csrf = requireCsrf(deps);
  const pub = publicPages(deps);
  const auth = authPages(deps);
  const dash = dashboardPages(deps);
  const delist = delistPages(deps);

  router.get('/assets/:file', (req, res, next) => {
    if (!deps.pages.assets.serve(req, res)) next();
  });
  router.get('/', page, pub.home);
  router.get('/lookup', page, pub.lookup);

  router.get('/account/register', page, auth.registerPage);
  router.post('/account/register', form, page, csrf, auth.register);
  router.get('/account/verify', page, auth.verifyPage);
  router.post('/account/verify', form, page, csrf, auth.verify);
  router.get('/account/sign-in', page, auth.signInPage);
  router.post('/account/sign-in', form, page, csrf, auth.signIn);
  router.post('/account/sign-out', form, page, csrf, auth.signOut);
  router.get('/account/reset', page, auth.resetPage);
  router.post('/account/reset', form, page, csrf, auth.reset);
  router.get('/account/reset/confirm', page, auth.resetConfirmPage);
  router.post('/account/reset/confirm', form, page, csrf, auth.resetConfirm);

  router.get('/account', page, requireAccount, dash.dashboard);
  router.post('/account/keys', form, page, csrf, requireAccount, dash.createKey);
  router.get('/account/keys/new', page, requireAccount, dash.newKey);
  router.post('/account/keys/:keyId/revoke', form, page, csrf, requireAccount, dash.revokeKey);
  router.post('/account/sender-name', form, page, csrf, requireAccount, dash.senderName);
  router.post('/account/bundles/:bundleId/buy', form, page, csrf, requireAccount, dash.buy);
  router.get('/account/audit', page, requireAccount, dash.audit);
  router.get('/account/audit.csv', page, requireAccount, dash.auditCsv);
  router.get('/account/webhooks', page, requireAccount, dash.webhookLog);

  router.get('/delist', page, delist.form);
  router.post('/delist', form, page, csrf, delist.submit);
  router.get('/delist/:id', page, delist.status);
  router.get('/account/delisting', page, requireAccount, delist.review);
  router.post('/account/delisting/:id/approve', form, page, csrf, requireAccount, delist.approve);
  router.post('/account/delisting/:id/reject', form, page, csrf, requireAccount, delist.reject);

  router.use(pageErrors(deps));
  return router;
}

interface BodyError {
  type?: string;
  status?: number;
}

/**
 * Errors of the pages answer as pages: a bad form 400 (413 too large), the database unavailable
 * 503 with Retry-After (the same page works again shortly; logged once per incident, as the
 * API does), the service busy (DomainError `unavailable`: password hashing at its bound) 503
 * with its Retry-After, anything else 500.
 */
function pageErrors(deps: WebDeps) {
  const incident = incidentLogger(deps.logger);
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const body = err as BodyError;
    let status = 500;
    let text = 'Something went wrong on our side. Try again in a minute.';
    if (err instanceof FormError) [status, text] = [400, err.message];
    else if (body?.type === 'entity.too.large' || body?.type === 'parameters.too.many') [status, text] = [413, 'The form is larger than this page ever sends.'];
    else if (isDatabaseUnavailable(err)) {
      [status, text] = [503, 'The service cannot reach its database just now. Try again in a few seconds.'];
      // A stopped database fails in several ways at once (refused, reset, timed out): one incident.
      incident('error', 'web', err, 'database unavailable: answering 503', 'database-unavailable');
      if (!res.headersSent) res.setHeader('Retry-After', '5');
    }
    else if (err instanceof DomainError && err.kind === 'unavailable') {
      [status, text] = [503, err.message];
      if (!res.headersSent) res.setHeader('Retry-After', String(err.details.retryAfter ?? 5));
    }
    else if (typeof body?.status === 'number' && body.status >= 400 && body.status < 500) [status, text] = [400, 'The form could not be read.'];
    else req.log?.error({ err }, 'page failed');
    if (res.headersSent) return;
    deps.pages.send(res, 'message', { serviceName: deps.config.serviceName, csrf: res.locals.web?.csrf ?? '', signedInAs: res.locals.web?.account?.email, title: 'Not done', text }, status);
  };
}
