import type { Logger } from 'pino';
import { writeDnsblFile } from './dnsbl.js';
import type { BlacklistSnapshots } from './repository.js';
import { incidentLogger } from '../logging.js';
import type { Scheduler } from '../jobs/scheduler.js';

/** The pg-boss queue (and schedule) of the regeneration. */
export const BLACKLIST_QUEUE = 'trs-blacklist-regeneration';

/**
 * Regenerates the blacklist every `intervalMs`, exactly once across all server processes: a
 * pg-boss schedule sends a run every minute, taken by one process of all (src/jobs/scheduler.ts),
 * which regenerates when the newest snapshot was last generated or checked an interval ago.
 * The scheduled regeneration also takes an advisory lock inside its own transaction (it holds
 * behind a transaction-mode pooler too), so a run outliving its job's expiry (30 minutes) never
 * overlaps the next one.
 */
export class BlacklistJob {
  private timer: NodeJS.Timeout | undefined;
  private exporting: Promise<unknown> | undefined;

  constructor(
    private readonly snapshots: BlacklistSnapshots,
    private readonly intervalMs: number,
    private readonly logger: Logger,
    /** DNSBL_FILE and its options: rewritten by every process whenever the current snapshot is not the one it last wrote. */
    private readonly dnsbl?: { file: string; zone: string | undefined; confidence: number; publicUrl: string | undefined },
  ) {}

  /** The snapshot this process last wrote DNSBL_FILE from. */
  private dnsblWritten: number | undefined;

  /**
   * Registers the regeneration on the scheduler (pg-boss `schedule()`, every minute, one
   * process of all takes each run; the run regenerates when an interval has passed) and asks
   * for a first run now. DNSBL_FILE, a file of this process's machine, is looked after by
   * each process itself: after a run here, and every minute for runs made elsewhere.
   */
  async start(scheduler: Scheduler): Promise<void> {
    // During a database outage every run fails the same way: one line per incident. The next
    // run after the database is back regenerates by itself.
    const incident = incidentLogger(this.logger, 5 * 60_000);
    const exportDnsbl = () => {
      this.exporting ??= this.exportDnsbl()
        .catch((err: unknown) => incident('error', 'dnsbl-export', err, 'writing DNSBL_FILE failed; the next run tries again'))
        .finally(() => (this.exporting = undefined));
      return this.exporting;
    };
    await scheduler.add({
      name: BLACKLIST_QUEUE,
      cron: '* * * * *',
      expireInSeconds: 30 * 60,
      run: async () => {
        await this.runIfDue().catch((err: unknown) =>
          incident('error', 'blacklist-job', err, 'blacklist regeneration failed; the next run tries again'),
        );
        await exportDnsbl();
      },
    });
    await scheduler.runSoon(BLACKLIST_QUEUE, { oncePerSeconds: 60 });
    if (this.dnsbl) {
      void exportDnsbl();
      this.timer = setInterval(() => void exportDnsbl(), 60_000);
      this.timer.unref();
    }
  }

  /** Stops this process's DNSBL_FILE checks (the scheduler stops the runs). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.exporting;
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
