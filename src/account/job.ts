import type { Logger } from 'pino';
import { before, DAY_MS, type Clock } from '../clock.js';
import { loadConfig, type Config, type RelayConfig, type WebConfig } from '../config.js';
import { transaction, tryTransactionLock, type Pool } from '../db/pool.js';
import { KeySites } from '../keys/sites.repository.js';
import { Meter } from '../keys/usage.repository.js';
import { StatsRepository } from '../stats/repository.js';
import { ReportPartitions, type Expired } from '../reputation/partitions.repository.js';
import { EPOCH_MS, HALF_LIFE_MS } from '../reputation/score.js';
import { RelayRepository } from '../relay/repository.js';
import { AccountRepository, UNVERIFIED_ACCOUNT_DAYS } from './repository.js';
import { AuditTrail } from '../audit/repository.js';
import { Sessions } from './sessions.repository.js';
import { AuthThrottle } from './throttle.repository.js';
import type { Scheduler } from '../jobs/scheduler.js';
import { purgeExpiredWhitelist } from '../reputation/whitelist.repository.js';
import { WebhookRepository } from '../webhooks/repository.js';
import { DELIVERY_RETENTION_MS } from '../webhooks/rules.js';
import { DelistRepository } from '../delisting/repository.js';
import { CONFIRM_WINDOW_MS, DELIST_RETENTION_MS } from '../delisting/rules.js';

/** Any stable number: the advisory lock that lets one process purge at a time. */
const PURGE_LOCK = 7_260_112_019;

export interface Purged {
  sessions: number;
  links: number;
  throttle: number;
  audit: number;
  /** key_sites rows of days the dashboard no longer shows (keys/sites.ts KEY_SITES_DAYS). */
  keySites: number;
  /** Relay messages whose content was deleted (RELAY_PAYLOAD_RETENTION_HOURS after a final state). */
  relayPayloads: number;
  /** Relay messages deleted whole (RELAY_MESSAGE_RETENTION_DAYS after a final state). */
  relayMessages: number;
  /** Daily usage counters of days before yesterday (keys/usage.repository.ts Meter.purge). */
  usageCounters: number;
  /** Hourly statistics rollups older than any window reads (stats/repository.ts). */
  hourlyRollups: number;
  /** Web sign-ups never confirmed within UNVERIFIED_ACCOUNT_DAYS (30). */
  unverifiedAccounts: number;
  /** Whitelist entries whose time is over (approved delistings); the next regeneration lists them again if still reported. */
  whitelistExpired: number;
  /** Delisting requests: unconfirmed ones past their 24 hours marked expired, and those decided or expired a year ago deleted. */
  delistRequests: { expired: number; deleted: number };
  /** Webhook deliveries older than 7 days (webhooks/rules.ts DELIVERY_RETENTION_MS). */
  webhookDeliveries: number;
}

/**
 * The retention times the purge applies. `relayPayloadRetentionMs` is RELAY_PAYLOAD_RETENTION_HOURS
 * (the relay's `payloadRetentionMs`); left out, its default (24 hours).
 */
export type PurgeSettings = Pick<WebConfig, 'sessionAbsoluteMs' | 'sessionIdleMs' | 'auditRetentionMs'> & {
  relayPayloadRetentionMs?: RelayConfig['payloadRetentionMs'];
  relayMessageRetentionMs?: RelayConfig['messageRetentionMs'];
  /** REPORT_RETENTION_DAYS; left out, its default (365 days). */
  reportRetentionMs?: Config['reportRetentionMs'];
};

/** The purge's settings from the whole configuration. */
export const purgeSettingsOf = (config: Pick<Config, 'web' | 'relay' | 'reportRetentionMs'>): PurgeSettings => ({
  ...config.web,
  relayPayloadRetentionMs: config.relay.payloadRetentionMs,
  relayMessageRetentionMs: config.relay.messageRetentionMs,
  reportRetentionMs: config.reportRetentionMs,
});

/**
 * Deletes what has outlived its use: ended sessions, used or expired links and invites, ended
 * throttle windows, audit events older than AUDIT_RETENTION_DAYS, the sites keys were used
 * from on days the dashboard no longer shows (30), the content of relay messages that were
 * final for longer than RELAY_PAYLOAD_RETENTION_HOURS and the messages themselves past
 * RELAY_MESSAGE_RETENTION_DAYS, usage counters of days before yesterday, hourly statistics
 * no window reads any more, and web sign-ups left unconfirmed for UNVERIFIED_ACCOUNT_DAYS (30). Hourly, by whichever process takes the lock; the CLI runs the same
 * purge at once (`accounts purge`). docs/operations.md lists every table and what bounds it.
 */
export async function purgeAccounts(pool: Pool, clock: Clock, config: PurgeSettings): Promise<Purged | undefined> {
  // One transaction: its lock and its lifted statement timeout hold behind a transaction-mode
  // pooler too, and deleting a year of audit events may take longer than a request's statement.
  return transaction(
    pool,
    async (client) => {
      if (!(await tryTransactionLock(client, PURGE_LOCK))) return undefined;
      const sessions = new Sessions(client, clock, { absoluteMs: config.sessionAbsoluteMs, idleMs: config.sessionIdleMs });
      const relay = new RelayRepository(pool);
      const accounts = new AccountRepository(pool);
      const defaults = loadConfig({}).relay;
      const hourly = await new StatsRepository(client).purgeHourly(clock.now());
      return {
        sessions: await sessions.purge(),
        links: await accounts.purgeLinks(clock.now(), client),
        unverifiedAccounts: await accounts.purgeUnverified(before(clock.now(), UNVERIFIED_ACCOUNT_DAYS * DAY_MS), client),
        throttle: await new AuthThrottle(client, clock).purge(),
        audit: await new AuditTrail(client, clock, config.auditRetentionMs).purge(),
        keySites: await new KeySites(pool, clock).purge(client),
        relayPayloads: await relay.purgePayloads(before(clock.now(), config.relayPayloadRetentionMs ?? defaults.payloadRetentionMs), client),
        relayMessages: await relay.purgeMessages(before(clock.now(), config.relayMessageRetentionMs ?? defaults.messageRetentionMs), client),
        usageCounters: await new Meter(client, clock).purge(),
        hourlyRollups: hourly.activity + hourly.connections,
        whitelistExpired: await purgeExpiredWhitelist(client, clock.now()),
        delistRequests: await new DelistRepository(pool).purge(client, before(clock.now(), CONFIRM_WINDOW_MS), before(clock.now(), DELIST_RETENTION_MS)),
        webhookDeliveries: await new WebhookRepository(pool).purge(client, before(clock.now(), DELIVERY_RETENTION_MS)),
      };
    },
    { long: true },
  );
}

/**
 * The reports' partitions: this month's and the next three made where missing, and the reports
 * older than REPORT_RETENTION_DAYS taken out (whole months dropped), every address they
 * concerned recomputed without them. Hourly with the purge; `trs reports expire` at once.
 */
export async function maintainReports(pool: Pool, clock: Clock, config: Pick<PurgeSettings, 'reportRetentionMs'>): Promise<{ created: string[] } & Expired> {
  const partitions = new ReportPartitions(pool, { epochMs: EPOCH_MS, halfLifeMs: HALF_LIFE_MS });
  const created = await partitions.ensure(clock.now());
  const expired = await partitions.expire(before(clock.now(), config.reportRetentionMs ?? loadConfig({}).reportRetentionMs));
  return { created, ...expired };
}

/** The pg-boss queue (and schedule) of the hourly purge. */
export const PURGE_QUEUE = 'trs-hourly-purge';

/**
 * The purge and the reports' partitions, hourly at minute 0 and when a process starts (at most
 * once a clock hour however many start), by one process of all: a pg-boss schedule (src/jobs/scheduler.ts). The purge's advisory lock
 * stays, for `trs accounts purge` run beside the servers.
 */
export class PurgeJob {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly config: PurgeSettings,
    private readonly logger: Logger,
  ) {}

  async start(scheduler: Scheduler): Promise<void> {
    await scheduler.add({ name: PURGE_QUEUE, cron: '0 * * * *', expireInSeconds: 60 * 60, run: () => this.run() });
    await scheduler.runSoon(PURGE_QUEUE, { oncePerSeconds: 60 * 60 });
  }

  /** One run: what has outlived its use purged, the partitions maintained; failures logged. */
  async run(): Promise<void> {
    await purgeAccounts(this.pool, this.clock, this.config)
      .then((purged) => purged && this.logger.info({ purged }, 'account data purged'))
      .then(() => maintainReports(this.pool, this.clock, this.config))
      .then((reports) => (reports.created.length || reports.partitions.length || reports.reports) && this.logger.info({ reports }, 'report partitions maintained'))
      .catch((err: unknown) => this.logger.error({ err }, 'account purge failed'));
  }
}
