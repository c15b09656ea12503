import type { Logger } from 'pino';
import type { BlacklistSnapshots } from '../blacklist/snapshots.js';
import type { Clock } from '../clock.js';
import { incidentLogger } from '../logging.js';

/** Any stable number: the advisory lock that lets one process regenerate at a time. */
const REGENERATION_LOCK = 7_260_112_005;

/**
 * Regenerates the blacklist every `intervalMs`, exactly once across all server processes:
 * each process wakes up at most every minute, and the one that takes the advisory lock
 * regenerates when the newest snapshot was last generated or checked an interval ago. The
 * lock is transaction-scoped, taken inside the regeneration's own transaction, so it holds
 * behind a transaction-mode pooler too.
 */
export class BlacklistJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly snapshots: BlacklistSnapshots,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    // During a database outage every tick fails the same way: one line per incident. The next
    // tick after the database is back regenerates by itself.
    const incident = incidentLogger(this.logger, 5 * 60_000);
    const tick = () => {
      this.running ??= this.runIfDue()
        .catch((err: unknown) => incident('error', 'blacklist-job', err, 'blacklist regeneration failed; the next tick tries again'))
        .finally(() => (this.running = undefined));
    };
    tick();
    this.timer = setInterval(tick, Math.min(60_000, this.intervalMs));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** Regenerates when due and this process holds the lock; returns whether it did. */
  async runIfDue(): Promise<boolean> {
    const started = Date.now();
    const result = await this.snapshots.regenerateIf(async (client) => {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [REGENERATION_LOCK]);
      if (!rows[0]!.locked) return false;
      const { rows: last } = await client.query<{ checked_at: Date }>('select checked_at from blacklist_snapshots order by id desc limit 1');
      return !last[0] || this.clock.now().getTime() - last[0].checked_at.getTime() >= this.intervalMs;
    });
    if (!result) return false;
    this.logger.info({ ...result, ms: Date.now() - started }, 'blacklist regenerated');
    return true;
  }
}
