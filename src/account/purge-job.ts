import type { Logger } from 'pino';
import { before, type Clock } from '../clock.js';
import { loadConfig, type RelayConfig, type WebConfig } from '../config.js';
import { transaction, tryTransactionLock, type Pool } from '../db/pool.js';
import { KeySites } from '../keys/sites.repository.js';
import { RelayRepository } from '../relay/repository.js';
import { AccountRepository } from './repository.js';
import { AuditTrail } from '../audit/repository.js';
import { Sessions } from './sessions.repository.js';
import { AuthThrottle } from './throttle.repository.js';

/** Any stable number: the advisory lock that lets one process purge at a time. */
const PURGE_LOCK = 7_260_112_019;
const EVERY_MS = 60 * 60_000;

export interface Purged {
  sessions: number;
  links: number;
  throttle: number;
  audit: number;
  /** key_sites rows of days the dashboard no longer shows (keys/sites.ts KEY_SITES_DAYS). */
  keySites: number;
  /** Relay messages whose content was deleted (RELAY_PAYLOAD_RETENTION_HOURS after a final state). */
  relayPayloads: number;
}

/**
 * The retention times the purge applies. `relayPayloadRetentionMs` is RELAY_PAYLOAD_RETENTION_HOURS
 * (the relay's `payloadRetentionMs`); left out, its default (24 hours).
 */
export type PurgeSettings = Pick<WebConfig, 'sessionAbsoluteMs' | 'sessionIdleMs' | 'auditRetentionMs'> & {
  relayPayloadRetentionMs?: RelayConfig['payloadRetentionMs'];
};

/**
 * Deletes what has outlived its use: ended sessions, used or expired links and invites, ended
 * throttle windows, audit events older than AUDIT_RETENTION_DAYS, the sites keys were used
 * from on days the dashboard no longer shows (30), and the content of relay messages that were
 * final for longer than RELAY_PAYLOAD_RETENTION_HOURS. Hourly, by whichever process takes the
 * lock; the CLI runs the same purge at once (`accounts purge`).
 */
export async function purgeAccounts(pool: Pool, clock: Clock, config: PurgeSettings): Promise<Purged | undefined> {
  // One transaction: its lock and its lifted statement timeout hold behind a transaction-mode
  // pooler too, and deleting a year of audit events may take longer than a request's statement.
  return transaction(
    pool,
    async (client) => {
      if (!(await tryTransactionLock(client, PURGE_LOCK))) return undefined;
      const sessions = new Sessions(client, clock, { absoluteMs: config.sessionAbsoluteMs, idleMs: config.sessionIdleMs });
      return {
        sessions: await sessions.purge(),
        links: await new AccountRepository(pool).purgeLinks(clock.now(), client),
        throttle: await new AuthThrottle(client, clock).purge(),
        audit: await new AuditTrail(client, clock, config.auditRetentionMs).purge(),
        keySites: await new KeySites(pool, clock).purge(client),
        relayPayloads: await new RelayRepository(pool).purgePayloads(
          before(clock.now(), config.relayPayloadRetentionMs ?? loadConfig({}).relay.payloadRetentionMs),
          client,
        ),
      };
    },
    { long: true },
  );
}

export class PurgeJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly config: PurgeSettings,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const tick = () => {
      this.running ??= purgeAccounts(this.pool, this.clock, this.config)
        .then((purged) => purged && this.logger.info({ purged }, 'account data purged'))
        .catch((err: unknown) => this.logger.error({ err }, 'account purge failed'))
        .finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, EVERY_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
