import type { Router } from 'express';
import type { Logger } from 'pino';
import { sharedSecret } from '../account/secrets.repository.js';
import type { Clock } from '../clock.js';
import type { WebConfig } from '../account/settings.js';
import type { Orm } from '../db/orm.js';
import type { Modules } from '../modules.js';
import { Assets, Pages } from './render.js';
import { webRouter } from './router.js';

export interface WebParts {
  orm: Orm;
  clock: Clock;
  logger: Logger;
  web: WebConfig;
  /** The areas' modules (modules.ts): the pages use the same services as the API. */
  modules: Modules;
  /** The accounts that review delisting requests on the dashboard (DELIST_OPERATOR_EMAILS). */
  delistReviewers: readonly string[];
}

/** The pages, built from the app's own services. */
export function buildWeb(parts: WebParts): Router {
  const { clock, logger, web, modules: m } = parts;
  let csrfKey: Promise<Buffer> | undefined;
  return webRouter({
    config: web,
    clock,
    logger,
    pages: new Pages(new Assets(), m.payments.stripe ? ['https://checkout.stripe.com'] : []),
    accounts: m.account.accounts,
    sessions: m.account.sessions,
    throttle: m.account.throttle,
    audit: m.account.audit,
    dashboard: m.account.dashboard,
    keys: m.keys.keys,
    meter: m.keys.meter,
    stats: m.stats.service,
    categories: m.categories.service,
    reputation: m.reputation.service,
    stripe: m.payments.stripe,
    webhooks: m.webhooks.service,
    delisting: m.delisting.service,
    reviewers: parts.delistReviewers,
    csrfKey: () => {
      csrfKey ??= sharedSecret(parts.orm.em, 'csrf');
      csrfKey.catch(() => (csrfKey = undefined));
      return csrfKey;
    },
  });
}
