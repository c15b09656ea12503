import type { Router } from 'express';
import type { Logger } from 'pino';
import { sharedSecret } from '../account/secrets.repository.js';
import type { Clock } from '../clock.js';
import type { WebConfig } from '../account/settings.js';
import type { Orm } from '../db/orm.js';
import type { Services } from '../services.js';
import { Assets, Pages } from './render.js';
import { webRouter } from './router.js';

export interface WebParts {
  orm: Orm;
  clock: Clock;
  logger: Logger;
  web: WebConfig;
  /** The object graph (services.ts): the pages use the same services as the API. */
  services: Services;
  /** The accounts that review delisting requests on the dashboard (DELIST_OPERATOR_EMAILS). */
  delistReviewers: readonly string[];
}

/** The pages, built from the app's own services. */
export function buildWeb(parts: WebParts): Router {
  const { clock, logger, web, services } = parts;
  let csrfKey: Promise<Buffer> | undefined;
  return webRouter({
    config: web,
    clock,
    logger,
    pages: new Pages(new Assets(), services.stripe ? ['https://checkout.stripe.com'] : []),
    accounts: services.accounts,
    sessions: services.sessions,
    throttle: services.throttle,
    audit: services.audit,
    dashboard: services.dashboard,
    keys: services.keys,
    meter: services.meter,
    stats: services.stats,
    categories: services.categories,
    reputation: services.reputation,
    stripe: services.stripe,
    webhooks: services.webhooks,
    delisting: services.delisting,
    reviewers: parts.delistReviewers,
    csrfKey: () => {
      csrfKey ??= sharedSecret(parts.orm.em, 'csrf');
      csrfKey.catch(() => (csrfKey = undefined));
      return csrfKey;
    },
  });
}
