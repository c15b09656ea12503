import type { Router } from 'express';
import type { Logger } from 'pino';
import { AccountService, accountSettings } from '../account/accounts.js';
import { AuditTrail } from '../audit/repository.js';
import { Dashboard } from '../account/dashboard.js';
import { AccountMailer, accountTransport } from '../account/mailer.js';
import { sharedSecret } from '../account/secrets.repository.js';
import { HashGate } from '../account/passwords.js';
import { Sessions } from '../account/sessions.repository.js';
import { AUTH_LIMITS, AuthThrottle } from '../account/throttle.repository.js';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { RelayConfig, StripeConfig, WebConfig } from '../config.js';
import type { Orm } from '../db/orm.js';
import type { Pool } from '../db/pool.js';
import { KeyService } from '../keys/service.js';
import type { Meter } from '../keys/usage.repository.js';
import { CheckoutSessions } from '../payments/checkouts.repository.js';
import { StripePayments } from '../payments/stripe.js';
import type { RelayService } from '../relay/service.js';
import type { ReputationService } from '../reputation/service.js';
import type { StatsService } from '../stats/service.js';
import type { DelistService } from '../delisting/service.js';
import { Assets, Pages } from './render.js';
import { webRouter } from './router.js';

export interface WebParts {
  orm: Orm;
  pool: Pool;
  clock: Clock;
  logger: Logger;
  web: WebConfig;
  /** The IPv6 network the sign-in throttle counts beside each /64 (PUBLIC_V6_AGGREGATE_PREFIX). */
  v6NetworkPrefix: number;
  stripe: StripeConfig | undefined;
  relayMail: RelayConfig['mail'];
  meter: Meter;
  stats: StatsService;
  categories: CategoryService;
  reputation: ReputationService;
  relay: RelayService;
  /** Delisting: the service the /delist pages share with the API, and the accounts that review on the dashboard. */
  delisting: DelistService;
  delistReviewers: readonly string[];
}

/** The pages, built from the app's own services, and Stripe's client where configured (its webhook is the app's). */
export function buildWeb(parts: WebParts): { pages: Router; stripe: StripePayments | undefined } {
  const { pool, clock, logger, web } = parts;
  const mailer = new AccountMailer(accountTransport(parts.relayMail, web.mailFrom), logger);
  const sessions = new Sessions(pool, clock, { absoluteMs: web.sessionAbsoluteMs, idleMs: web.sessionIdleMs });
  const audit = new AuditTrail(pool, clock, web.auditRetentionMs);
  const publicUrl = () => web.publicUrl;
  const throttle = new AuthThrottle(pool, clock, AUTH_LIMITS, parts.v6NetworkPrefix);
  // The process's one bound on password hashing (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE).
  const gate = new HashGate(web.hashConcurrency, web.hashQueue);
  const accounts = new AccountService(pool, clock, mailer, sessions, accountSettings(web), { gate, throttle });
  const stripe = parts.stripe && new StripePayments(parts.stripe, publicUrl, new CheckoutSessions(pool), clock);
  let csrfKey: Promise<Buffer> | undefined;
  const pages = webRouter({
    config: web,
    clock,
    logger,
    pages: new Pages(new Assets(), stripe ? ['https://checkout.stripe.com'] : []),
    accounts,
    sessions,
    throttle,
    audit,
    dashboard: new Dashboard(pool, clock, parts.meter, parts.relay, audit),
    keys: new KeyService(parts.orm.em, parts.clock),
    meter: parts.meter,
    stats: parts.stats,
    categories: parts.categories,
    reputation: parts.reputation,
    stripe,
    delisting: parts.delisting,
    reviewers: parts.delistReviewers,
    csrfKey: () => {
      csrfKey ??= sharedSecret(parts.orm.em, 'csrf');
      csrfKey.catch(() => (csrfKey = undefined));
      return csrfKey;
    },
  });
  return { pages, stripe };
}
