import type { Logger } from 'pino';
import type { BlacklistSnapshots } from '../blacklist/snapshots.js';
import type { Clock } from '../clock.js';
import { withClient, type Pool } from '../db/pool.js';

/** Any stable number: the advisory lock that lets one process regenerate at a time. */
const REGENERATION_LOCK = 7_260_112_005;

/**
 * Regenerates the blacklist every `intervalMs`, exactly once across all server processes:
 * each process wakes up at most every minute, and the one that takes the advisory lock
 * regenerates when the newest snapshot was last generated or checked an interval ago.
 */
export class BlacklistJob {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly pool: Pool,
    private readonly snapshots: BlacklistSnapshots,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    const tick = () => {
      this.running ??= this.runIfDue()
        .catch((err: unknown) => this.logger.error({ err }, 'blacklist regeneration failed'))
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
    return withClient(this.pool, async (client) => {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [REGENERATION_LOCK]);
      if (!rows[0]!.locked) return false;
      try {
        const { rows: last } = await client.query<{ checked_at: Date }>(
          'select checked_at from blacklist_snapshots order by id desc limit 1',
        );
        const due = !last[0] || this.clock.now().getTime() - last[0].checked_at.getTime() >= this.intervalMs;
        if (!due) return false;
        const started = Date.now();
        const result = await this.snapshots.regenerate();
        this.logger.info({ ...result, ms: Date.now() - started }, 'blacklist regenerated');
        return true;
      } finally {
        await client.query('select pg_advisory_unlock($1)', [REGENERATION_LOCK]).catch(() => undefined);
      }
    });
  }
}
