import type { Request, Response } from 'express';
import type { DelistPageDeps } from './delist-pages.js';
import { AccountError } from '../account/accounts.js';
import { AUDIT_KINDS, auditCsv, type AuditFilter, type AuditKind } from '../audit/trail.js';
import { ACTIVE_KEYS_MAX, hasAuditTrail } from '../account/dashboard.js';
import { utcDay } from '../clock.js';
import { sourceIp } from '../http/metering.js';
import { KEY_NAME_MAX, KeyError, KeyLimitError } from '../keys/service.js';
import { CheckoutPending } from '../payments/stripe.js';
import { BundleError } from '../relay/ledger.repository.js';
import { field, pageContext, type WebDeps } from './context.js';
import { hasFeature } from '../roles.js';

const KEY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;
const SITE = /^[a-z0-9.-]{1,253}$/;

/** The audit filter of a query string; anything that is not a known value is left out. */
function auditFilter(query: Request['query']): AuditFilter & { fromText: string; toText: string; kindText: string; siteText: string } {
  const text = (name: string) => (typeof query[name] === 'string' ? (query[name] as string).slice(0, 300) : '');
  const kindText = text('kind');
  const fromText = DAY.test(text('from')) ? text('from') : '';
  const toText = DAY.test(text('to')) ? text('to') : '';
  const siteText = SITE.test(text('site').toLowerCase()) ? text('site').toLowerCase() : '';
  const date = (day: string, plus = 0) => {
    const d = new Date(`${day}T00:00:00Z`);
    return Number.isNaN(d.getTime()) ? undefined : new Date(d.getTime() + plus);
  };
  return {
    kind: (AUDIT_KINDS as readonly string[]).includes(kindText) ? (kindText as AuditKind) : undefined,
    from: fromText ? date(fromText) : undefined,
    to: toText ? date(toText, 86_400_000) : undefined,
    site: siteText || undefined,
    kindText: (AUDIT_KINDS as readonly string[]).includes(kindText) ? kindText : '',
    fromText,
    toText,
    siteText,
  };
}

/** The dashboard: role, limits and usage, keys, sites, relay quota and bundles, reports, audit. */
export function dashboardPages(deps: WebDeps & Partial<Pick<DelistPageDeps, 'reviewers'>>) {
  const ctx = (res: Response) => pageContext(deps, res);

  async function show(res: Response, extra: Record<string, unknown> = {}, status = 200) {
    const account = res.locals.web!.account!;
    const overview = await deps.dashboard.overview(account);
    deps.pages.send(
      res,
      'dashboard',
      {
        ...ctx(res),
        title: 'Your account',
        account,
        ...overview,
        forSale: overview.bundleEligible ? (deps.stripe?.forSale() ?? []) : [],
        whiteLabel: hasAuditTrail(account.role),
        delistReviewer: !!deps.reviewers?.includes(account.email.toLowerCase()),
        webhooks: hasFeature(account.role, 'webhooks'),
        keysMax: ACTIVE_KEYS_MAX,
        keyCacheNote: true,
        ...extra,
      },
      status,
    );
  }

  return {
    /** The account's webhooks and their newest deliveries (Business and Enterprise). */
    async webhookLog(_req: Request, res: Response) {
      const account = res.locals.web!.account!;
      if (!hasFeature(account.role, 'webhooks')) {
        deps.pages.send(res, 'message', { ...ctx(res), title: 'Not available', text: 'Webhooks come with the Business and Enterprise roles.' }, 403);
        return;
      }
      const log = await deps.webhooks.deliveryLog(account.id, 100);
      deps.pages.send(res, 'webhooks', { ...ctx(res), title: 'Webhooks', ...log });
    },

    async dashboard(req: Request, res: Response) {
      const purchase = req.query.purchase === 'done' ? 'done' : req.query.purchase === 'cancelled' ? 'cancelled' : undefined;
      await show(res, { purchase });
    },

    async createKey(req: Request, res: Response) {
      const account = res.locals.web!.account!;
      const name = field(req, 'name', 100);
      let created;
      try {
        created = await deps.keys.create({
          role: account.role,
          accountId: account.id,
          name,
          audit: { actor: 'web', ip: sourceIp(req), at: deps.clock.now() },
          activeMax: ACTIVE_KEYS_MAX,
        });
      } catch (err) {
        if (err instanceof KeyLimitError) return show(res, { keyError: `An account holds at most ${ACTIVE_KEYS_MAX} active keys; revoke one first.` }, 409);
        if (!(err instanceof KeyError)) throw err;
        return show(res, { keyError: `A key name is one line of at most ${KEY_NAME_MAX} printable characters, without < or >.` }, 400);
      }
      // POST-redirect-GET: reloading the page that shows the key must not make another key. The
      // key waits for that page in the session, sealed under the session's id (never in a URL,
      // never readable in the database), and is gone once shown.
      await deps.sessions.setFlash(res.locals.web!.session!.token, { kind: 'key-created', key: created.key, prefix: created.prefix, name: created.name ?? null });
      res.redirect(303, '/account/keys/new');
    },

    /** The new key, shown once: a reload (or a second tab) finds nothing and goes to the dashboard. */
    async newKey(_req: Request, res: Response) {
      const flash = await deps.sessions.takeFlash(res.locals.web!.session!.token);
      if (flash?.kind !== 'key-created') return res.redirect(303, '/account#keys');
      deps.pages.send(res, 'key-created', { ...ctx(res), title: 'Your new key', key: flash.key, prefix: flash.prefix, name: flash.name });
    },

    async revokeKey(req: Request, res: Response) {
      const account = res.locals.web!.account!;
      const keyId = String(req.params.keyId);
      const revoked = KEY_ID.test(keyId) && (await deps.keys.revoke(keyId, deps.clock.now(), { accountId: account.id, actor: 'web', ip: sourceIp(req) }));
      if (!revoked) return show(res, { keyError: 'There is no such active key in this account.' }, 404);
      res.redirect(303, '/account?revoked=1#keys');
    },

    async senderName(req: Request, res: Response) {
      const account = res.locals.web!.account!;
      if (!hasAuditTrail(account.role)) return show(res, { senderError: 'A sender name of your own comes with the Business and Enterprise roles.' }, 403);
      try {
        await deps.accounts.setSenderName(account.id, field(req, 'sender_name', 200), sourceIp(req));
      } catch (err) {
        if (!(err instanceof AccountError)) throw err;
        return show(res, { senderError: err.message }, 400);
      }
      res.redirect(303, '/account#white-label');
    },

    async buy(req: Request, res: Response) {
      const account = res.locals.web!.account!;
      const bundleId = String(req.params.bundleId);
      if (!deps.stripe) return show(res, { buyError: 'Bundles are not sold on this server; ask its operator.' }, 404);
      const overview = await deps.dashboard.overview(account);
      if (!overview.bundleEligible) return show(res, { buyError: `The ${account.role} role cannot hold relay bundles.` }, 403);
      try {
        res.redirect(303, await deps.stripe.checkout({ id: account.id, email: account.email }, bundleId));
      } catch (err) {
        if (err instanceof BundleError) return show(res, { buyError: 'This bundle is not for sale here.' }, 404);
        if (err instanceof CheckoutPending) return show(res, { buyError: 'The payment page is being opened; try again in a few seconds.' }, 409);
        req.log?.error({ err: (err as Error).message }, 'Stripe Checkout session could not be created');
        return show(res, { buyError: 'The payment page could not be opened; try again in a minute.' }, 502);
      }
    },

    async audit(req: Request, res: Response) {
      const account = res.locals.web!.account!;
      if (!hasAuditTrail(account.role)) {
        return deps.pages.send(res, 'message', { ...ctx(res), title: 'Audit trail', text: 'The audit trail comes with the Business and Enterprise roles.' }, 403);
      }
      const filter = auditFilter(req.query);
      const rows = await deps.audit.list(account.id, { ...filter, limit: 500 });
      const query = new URLSearchParams(
        Object.entries({ kind: filter.kindText, from: filter.fromText, to: filter.toText, site: filter.siteText }).filter(([, v]) => v),
      ).toString();
      deps.pages.send(res, 'audit', {
        ...ctx(res),
        title: 'Audit trail',
        rows,
        kinds: AUDIT_KINDS,
        filter,
        csvHref: `/account/audit.csv${query ? `?${query}` : ''}`,
        retentionDays: Math.round(deps.config.auditRetentionMs / 86_400_000),
      });
    },

    async auditCsv(req: Request, res: Response) {
      const account = res.locals.web!.account!;
      if (!hasAuditTrail(account.role)) {
        return deps.pages.send(res, 'message', { ...ctx(res), title: 'Audit trail', text: 'The audit trail comes with the Business and Enterprise roles.' }, 403);
      }
      const rows = await deps.audit.list(account.id, { ...auditFilter(req.query), limit: 10_000 });
      res.setHeader('Cache-Control', 'no-store');
      res.setHeader('Content-Disposition', `attachment; filename="audit-${account.id}-${utcDay(deps.clock.now())}.csv"`);
      res.type('text/csv; charset=utf-8').send(auditCsv(rows));
    },
  };
}
