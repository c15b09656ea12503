import type { Logger } from 'pino';
import { AuditTrail } from '../audit/repository.js';
import type { Clock } from '../clock.js';
import type { Pool } from '../db/pool.js';
import type { Meter } from '../keys/usage.repository.js';
import type { RelayService } from '../relay/service.js';
import type { RelayConfig } from '../relay/settings.js';
import { AccountService, accountSettings } from './accounts.js';
import { Dashboard } from './dashboard.js';
import { PurgeJob, type PurgeSettings } from './job.js';
import { AccountMailer, accountTransport } from './mailer.js';
import { HashGate } from './passwords.js';
import { Sessions } from './sessions.repository.js';
import type { WebConfig } from './settings.js';
import { AUTH_LIMITS, AuthThrottle } from './throttle.repository.js';

/**
 * The accounts: sign-up and sign-in with their sessions, throttle and audit trail, the process's
 * one bound on password hashing (PASSWORD_HASH_CONCURRENCY, PASSWORD_HASH_QUEUE), the
 * dashboard's reads, the hourly purge of what has outlived its use, and the one mailer of the
 * process (the accounts' mails, delisting's, disabled webhooks'), settled on stop.
 */
export function accountModule(deps: {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  settings: WebConfig;
  /** The mail transport (RELAY_SMTP_URL or the outbox), shared with the relay's settings. */
  mail: RelayConfig['mail'];
  /** The IPv6 prefix the sign-in throttle counts a network by (PUBLIC_V6_AGGREGATE_PREFIX). */
  v6AggregatePrefix: number;
  /** What the hourly purge keeps, and for how long. */
  purge: PurgeSettings;
  meter: Meter;
  relay: RelayService;
}) {
  const { pool, clock, logger } = deps;
  const web = deps.settings;
  const mailer = new AccountMailer(accountTransport(deps.mail, web.mailFrom), logger);
  const sessions = new Sessions(pool, clock, { absoluteMs: web.sessionAbsoluteMs, idleMs: web.sessionIdleMs });
  const audit = new AuditTrail(pool, clock, web.auditRetentionMs);
  const throttle = new AuthThrottle(pool, clock, AUTH_LIMITS, deps.v6AggregatePrefix);
  const gate = new HashGate(web.hashConcurrency, web.hashQueue);
  return {
    mailer,
    sessions,
    audit,
    throttle,
    accounts: new AccountService(pool, clock, mailer, sessions, accountSettings(web), { gate, throttle }),
    dashboard: new Dashboard(pool, clock, deps.meter, deps.relay, audit),
    jobs: [new PurgeJob(pool, clock, deps.purge, logger)],
  };
}
