import type { Request, Response } from 'express';
import type { DelistService } from '../delisting/service.js';
import { DELIST_DAYS_MAX, DELIST_EMAIL_MAX, DELIST_NOTE_MAX, DELIST_REASON_MAX } from '../delisting/rules.js';
import { DomainError } from '../errors.js';
import { STATUS_OF } from '../http/error-handler.js';
import { sourceIp } from '../http/metering.js';
import { FormError, field, pageContext, type WebDeps } from './context.js';
import { charge } from './public-pages.js';

/** What the delisting pages need beyond the other pages: the service, and who reviews. */
export interface DelistPageDeps {
  delisting: DelistService;
  /** DELIST_OPERATOR_EMAILS: the accounts that review requests on the dashboard. */
  reviewers: readonly string[];
}

/**
 * `/delist`: the form and status pages for people who are not API users, through the same
 * service as POST /delist-requests and GET /delist-requests/{id}, charged the same (1 of the
 * visitor's public allowance a page). `/account/delisting`: the review for the operator's
 * accounts (DELIST_OPERATOR_EMAILS), as `trs delist` does it.
 */
export function delistPages(deps: WebDeps & DelistPageDeps) {
  const ctx = (res: Response) => pageContext(deps, res);
  const formPage = (res: Response, values: Record<string, unknown>, status = 200) =>
    deps.pages.send(res, 'delist', { ...ctx(res), title: 'Ask for an address to be delisted', reasonMax: DELIST_REASON_MAX, ...values }, status);
  const isReviewer = (res: Response) => {
    const email = res.locals.web?.account?.email?.toLowerCase();
    return !!email && deps.reviewers.includes(email);
  };
  const refusedReview = (res: Response) =>
    deps.pages.send(res, 'message', { ...ctx(res), title: 'Not for this account', text: 'Delisting requests are reviewed by the operator\'s accounts only.' }, 403);

  async function decide(req: Request, res: Response, work: () => Promise<unknown>) {
    try {
      await work();
    } catch (err) {
      if (!(err instanceof DomainError) || err.kind === 'unavailable') throw err;
      return deps.pages.send(res, 'message', { ...ctx(res), title: 'Not done', text: err.message, link: { href: '/account/delisting', text: 'Back to the requests' } }, STATUS_OF[err.kind]);
    }
    res.redirect(303, '/account/delisting');
  }

  return {
    form(_req: Request, res: Response) {
      formPage(res, { values: {} });
    },

    async submit(req: Request, res: Response) {
      const values = { ip: field(req, 'ip', 60), email: field(req, 'email', DELIST_EMAIL_MAX + 10), reason: field(req, 'reason', DELIST_REASON_MAX + 100) };
      if (!(await charge(deps, req, res, 1))) return;
      try {
        const made = await deps.delisting.request(values, sourceIp(req), { actor: 'web', ip: sourceIp(req) });
        deps.pages.send(res, 'message', {
          ...ctx(res),
          title: 'Request received',
          text: made.message,
          note: `Open the link in the mail to confirm it within 24 hours. Request ${made.id}.`,
        }, 202);
      } catch (err) {
        if (!(err instanceof DomainError) || err.kind === 'unavailable') throw err;
        if (err.details.retryAfter !== undefined) res.setHeader('Retry-After', String(err.details.retryAfter));
        formPage(res, { values, error: err.message }, STATUS_OF[err.kind]);
      }
    },

    /** The mailed link: the status, and the confirmation of an unconfirmed request. */
    async status(req: Request, res: Response) {
      const token = typeof req.query.token === 'string' ? req.query.token : '';
      if (!(await charge(deps, req, res, 1))) return;
      try {
        const view = await deps.delisting.status(String(req.params.id), token, { actor: 'web', ip: sourceIp(req) });
        deps.pages.send(res, 'delist-status', { ...ctx(res), title: `Delisting request for ${view.ip}`, request: view });
      } catch (err) {
        if (!(err instanceof DomainError) || err.kind !== 'not_found') throw err;
        deps.pages.send(res, 'message', { ...ctx(res), title: 'No such request', text: 'This link is not valid: no delisting request has this id and token.' }, 404);
      }
    },

    async review(req: Request, res: Response) {
      if (!isReviewer(res)) return refusedReview(res);
      const status = typeof req.query.status === 'string' && req.query.status !== '' ? req.query.status : undefined;
      let requests;
      try {
        // With each request to decide, the evidence of the 3 newest reports about its address.
        requests = await deps.delisting.list(status, 200, { evidence: 3 });
      } catch (err) {
        if (err instanceof DomainError && err.kind === 'invalid_input') throw new FormError(err.message);
        throw err;
      }
      deps.pages.send(res, 'delist-review', { ...ctx(res), title: 'Delisting requests', requests, status: status ?? '', daysMax: DELIST_DAYS_MAX, noteMax: DELIST_NOTE_MAX });
    },

    async approve(req: Request, res: Response) {
      if (!isReviewer(res)) return refusedReview(res);
      const daysText = field(req, 'days', 5);
      const note = field(req, 'note', DELIST_NOTE_MAX + 10);
      const days = daysText === '' ? undefined : Number(daysText);
      const account = res.locals.web!.account!;
      await decide(req, res, () => deps.delisting.approve(String(req.params.id), { days, note }, { actor: 'web', accountId: account.id, ip: sourceIp(req) }));
    },

    async reject(req: Request, res: Response) {
      if (!isReviewer(res)) return refusedReview(res);
      const note = field(req, 'note', DELIST_NOTE_MAX + 10);
      const account = res.locals.web!.account!;
      await decide(req, res, () => deps.delisting.reject(String(req.params.id), { note }, { actor: 'web', accountId: account.id, ip: sourceIp(req) }));
    },
  };
}
