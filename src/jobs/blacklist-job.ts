import type { Logger } from 'pino';
import { writeDnsblFile } from '../blacklist/dnsbl.js';
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
    /** DNSBL_FILE and its options: rewritten by every process whenever the current snapshot is not the one it last wrote. */
    private readonly dnsbl?: { file: string; zone: string | undefined; confidence: number; publicUrl: string | undefined },
  ) {}

  /** The snapshot this process last wrote DNSBL_FILE from. */
  private dnsblWritten: number | undefined;

  start(): void {
    // During a database outage every tick fails the same way: one line per incident. The next
    // tick after the database is back regenerates by itself.
    const incident = incidentLogger(this.logger, 5 * 60_000);
    const tick = () => {
      this.running ??= this.runIfDue()
        .catch((err: unknown) => incident('error', 'blacklist-job', err, 'blacklist regeneration failed; the next tick tries again'))
        .then(() => this.exportDnsbl())
        .catch((err: unknown) => incident('error', 'dnsbl-export', err, 'writing DNSBL_FILE failed; the next tick tries again'))
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

  /**
   * Writes DNSBL_FILE when the current snapshot is not the one this process last wrote it from:
   * the regeneration may have run on another process or machine, so each one looks for itself.
   */
  async exportDnsbl(): Promise<void> {
    if (!this.dnsbl) return;
    const head = await this.snapshots.head();
    if (!head || head.id === this.dnsblWritten) return;
    const started = Date.now();
    const { file, ...options } = this.dnsbl;
    const written = await writeDnsblFile(this.snapshots, file, options);
    this.dnsblWritten = written.snapshotId;
    this.logger.info({ file, ...written, ms: Date.now() - started }, 'DNS blocklist written');
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
