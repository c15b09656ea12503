import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { WebConfig } from '../config.js';
import { transaction, type Pool } from '../db/pool.js';
import { KeySites } from '../keys/sites.js';
import { AccountRepository } from './repository.js';
import { AuditTrail } from './audit.js';
import { Sessions } from './sessions.js';
import { AuthThrottle } from './throttle.js';

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
}

/**
 * Deletes what has outlived its use: ended sessions, used or expired links and invites, ended
 * throttle windows, audit events older than AUDIT_RETENTION_DAYS, and the sites keys were used
 * from on days the dashboard no longer shows (30). Hourly, by whichever
 * process takes the lock; the CLI runs the same purge at once (`accounts purge`).
 */
export async function purgeAccounts(pool: Pool, clock: Clock, config: Pick<WebConfig, 'sessionAbsoluteMs' | 'sessionIdleMs' | 'auditRetentionMs'>): Promise<Purged | undefined> {
  // One transaction: its lock and its lifted statement timeout hold behind a transaction-mode
  // pooler too, and deleting a year of audit events may take longer than a request's statement.
  return transaction(
    pool,
    async (client) => {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [PURGE_LOCK]);
      if (!rows[0]!.locked) return undefined;
      const sessions = new Sessions(client, clock, { absoluteMs: config.sessionAbsoluteMs, idleMs: config.sessionIdleMs });
      return {
        sessions: await sessions.purge(),
        links: await new AccountRepository(pool).purgeLinks(clock.now(), client),
        throttle: await new AuthThrottle(client, clock).purge(),
        audit: await new AuditTrail(client, clock, config.auditRetentionMs).purge(),
        keySites: await new KeySites(pool, clock).purge(client),
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
    private readonly config: Pick<WebConfig, 'sessionAbsoluteMs' | 'sessionIdleMs' | 'auditRetentionMs'>,
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
