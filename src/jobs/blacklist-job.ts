import type { Logger } from 'pino';
import type { BlacklistSnapshots } from '../blacklist/repository.js';
import type { Clock } from '../clock.js';
import { incidentLogger } from '../logging.js';

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
    const result = await this.snapshots.regenerateIfDue(this.intervalMs);
    if (!result) return false;
    this.logger.info({ ...result, ms: Date.now() - started }, 'blacklist regenerated');
    return true;
  }
}
