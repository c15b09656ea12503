import type { Logger } from 'pino';
import { KeyLastUsed } from './account/last-used.repository.js';
import { AccountService, accountSettings } from './account/accounts.js';
import { Dashboard } from './account/dashboard.js';
import { AccountMailer, accountTransport } from './account/mailer.js';
import { HashGate } from './account/passwords.js';
import { Sessions } from './account/sessions.repository.js';
import { AUTH_LIMITS, AuthThrottle } from './account/throttle.repository.js';
import { AuditTrail } from './audit/repository.js';
import { CheckoutSessions } from './payments/checkouts.repository.js';
import { StripePayments } from './payments/stripe.js';
import { DelistRepository } from './delisting/repository.js';
import { DelistService } from './delisting/service.js';
import { AbuseIpdbService } from './abuseipdb/service.js';
import { blacklistSnapshots, type BlacklistSnapshots } from './blacklist/repository.js';
import { BlacklistService } from './blacklist/service.js';
import { CategoryService } from './categories/service.js';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import { Bouncers } from './crowdsec/bouncers.js';
import { DecisionService } from './crowdsec/decisions.js';
import { BouncerRepository } from './crowdsec/repository.js';
import type { Orm } from './db/orm.js';
import type { Pool } from './db/pool.js';
import type { GeoIp } from './geo/geoip.js';
import { KeyAuthenticator, KeyService } from './keys/service.js';
import { KeySites } from './keys/sites.repository.js';
import { Meter } from './keys/usage.repository.js';
import { NotificationConfigRepository } from './notifications/repository.js';
import { NotificationConfigs } from './notifications/service.js';
import { SmsTemplates } from './relay/delivery/templates.js';
import { SmsTemplateRepository } from './relay/delivery/templates.repository.js';
import { BundleLedger } from './relay/ledger.repository.js';
import type { RelayQueue } from './relay/queue.js';
import { RelayRepository } from './relay/repository.js';
import { RelayService, relayLimits } from './relay/service.js';
import { ReputationRepository } from './reputation/repository.js';
import { ReputationService } from './reputation/service.js';
import { Whitelist } from './reputation/whitelist.repository.js';
import { Rulesets } from './rules/rulesets.js';
import { StatsRepository } from './stats/repository.js';
import { StatsService } from './stats/service.js';
import { WebhookRepository } from './webhooks/repository.js';
import { WebhookService } from './webhooks/service.js';

/** What the object graph is built from: the process's database, clock, configuration and GeoIP. */
export interface ServiceDeps {
  orm: Orm;
  pool: Pool;
  /** The reads that tolerate replication lag (DATABASE_REPLICA_URL, db/replicas.ts); `pool` when there are none. */
  replicas?: Pool;
  clock: Clock;
  logger: Logger;
  config: Config;
  /** The country and ASN lookups; opened by the caller (the server at start, the CLI when a command needs them). */
  geo: GeoIp;
  /** The relay's queue; undefined where no transport is configured (sends answer 503) and in the CLI. */
  relayQueue?: RelayQueue;
}

/**
 * The object graph of the areas: every service and the repositories more than one of them
 * shares, each built once, with the settings the configuration gives it. The server's
 * composition root (start.ts) builds it for the app and the scheduled jobs, the CLI for its
 * commands; nothing else constructs a service. Constructors do no I/O, so building the whole
 * graph for one command costs nothing.
 */
export function buildServices(deps: ServiceDeps) {
  const { orm, pool, clock, logger, config, geo, relayQueue } = deps;
  const replicas = deps.replicas ?? pool;
  const em = orm.em;
  const meter = new Meter(pool, clock, config.publicLimits, config.quotaSynchronousCommit);
  const categories = new CategoryService(em, clock);
  const snapshots: BlacklistSnapshots = blacklistSnapshots(pool, clock, config.blacklistHistory, replicas);
  const sites = new KeySites(pool, clock);
  const lastUsed = new KeyLastUsed(em, clock);
  const publicUrl = () => config.web.publicUrl;
  // The mail of the accounts (sign-up, sign-in links, resets) and of delisting requests and
  // their decisions: one transport (account/mailer.ts), settled on stop.
  const mailer = new AccountMailer(accountTransport(config.relay.mail, config.web.mailFrom), logger);
  const reputationRepository = new ReputationRepository(pool, replicas);
  // A request under review shows the evidence of the reports about its address.
  const delisting = new DelistService(new DelistRepository(pool), clock, mailer, config.delisting, publicUrl, (ip, limit) =>
    reputationRepository.evidence(ip, undefined, limit, 0),
  );
  // The accounts: sessions, the sign-in throttle, the audit trail, the process's one bound on
  // password hashing (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE).
  const web = config.web;
  const sessions = new Sessions(pool, clock, { absoluteMs: web.sessionAbsoluteMs, idleMs: web.sessionIdleMs });
  const audit = new AuditTrail(pool, clock, web.auditRetentionMs);
  const throttle = new AuthThrottle(pool, clock, AUTH_LIMITS, config.publicLimits.v6AggregatePrefix);
  const gate = new HashGate(web.hashConcurrency, web.hashQueue);
  const accounts = new AccountService(pool, clock, mailer, sessions, accountSettings(web), { gate, throttle });
  // Disabled endpoints are mailed to their owners like the account mails; reports stored feed `report.received`.
  const webhooks = new WebhookService(new WebhookRepository(pool), clock, mailer, config.webhooks, logger);
  const reputation = new ReputationService(reputationRepository, categories, geo, clock, {
    batching: config.reportBatching,
    quota: meter,
    delistings: delisting,
    listed: snapshots,
    listener: webhooks,
  });
  const relayMessages = new RelayRepository(pool);
  const smsTemplates = new SmsTemplates(new SmsTemplateRepository(em), clock);
  const relay = new RelayService(relayMessages, relayQueue, relayLimits(config.relay), clock, sites, smsTemplates);
  const bouncerRepository = new BouncerRepository(em);
  const blacklist = new BlacklistService(snapshots, categories, clock, config.blacklistCacheBytes, meter, config.web.publicUrl);
  const ledger = new BundleLedger(pool, clock);
  return {
    mailer,
    sessions,
    audit,
    throttle,
    accounts,
    dashboard: new Dashboard(pool, clock, meter, relay, audit),
    // Stripe's client, where STRIPE_* is configured: the checkout pages' and its webhook's.
    stripe: config.stripe && new StripePayments(config.stripe, publicUrl, new CheckoutSessions(pool), clock),
    meter,
    categories,
    snapshots,
    sites,
    reputation,
    blacklist,
    relay,
    delisting,
    relayMessages,
    smsTemplates,
    ledger,
    keys: new KeyService(em, clock),
    authenticator: new KeyAuthenticator(pool, config.keyCacheMs, clock, (keyId) => lastUsed.touch(keyId)),
    whitelist: new Whitelist(em),
    stats: new StatsService(new StatsRepository(replicas), categories, snapshots, clock),
    notifications: new NotificationConfigs(new NotificationConfigRepository(em), sites, clock),
    rulesets: new Rulesets(config.rules.dir, config.rules.signingKeyFile, logger),
    bouncers: new Bouncers(bouncerRepository, categories, clock),
    decisions: new DecisionService(snapshots, bouncerRepository, categories, clock),
    abuseipdb: new AbuseIpdbService(reputation, blacklist, clock),
    webhooks,
  };
}

export type Services = ReturnType<typeof buildServices>;
