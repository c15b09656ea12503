import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import { retryDeadlock } from '../db/errors.js';
import { incidentLogger } from '../logging.js';

/** A job run on a cron schedule, by one process of all those sharing the database. */
export interface ScheduledJob {
  /** The pg-boss queue's name (`trs-…`). */
  name: string;
  /** Five-field cron, in UTC; pg-boss's resolution is one minute. */
  cron: string;
  /**
   * A run held longer than this is taken to belong to a process that died, and the next one
   * may start. The job's own body keeps two overlapping runs harmless (its advisory lock).
   */
  expireInSeconds: number;
  run(): Promise<void>;
}

/**
 * What an area runs beside the requests (its module's `jobs`): started once the scheduler is up,
 * stopped in the reverse order at the graceful stop, after the last request is answered.
 */
export interface Job {
  start(scheduler: Scheduler): Promise<void> | void;
  stop?(): Promise<void>;
}

export interface SchedulerOptions {
  /** Connections of the scheduler's own pool (it mostly sleeps). */
  max?: number;
  /** How often each process offers to send what is due (pg-boss: 1–45 s; default 30). */
  cronMonitorIntervalSeconds?: number;
  /** How often an idle worker looks for a sent job (default 10 s). */
  pollingIntervalSeconds?: number;
  /** How often pg-boss moves what its timekeeper sent onto the jobs' queues (1–45 s; default 5). */
  cronWorkerIntervalSeconds?: number;
}

/**
 * The scheduled jobs on pg-boss `schedule()`: every process registers the same schedules and a
 * worker for each; pg-boss's timekeeper lets one process per interval send what is due (at
 * most one job per schedule a minute, across processes), and a queue with the `stately` policy
 * has at most one run active and one waiting, so each job runs once across all processes,
 * whichever process takes it. It runs on the embedded database as the relay queue does.
 */
export class Scheduler {
  private readonly names: string[] = [];
  private readonly running = new Set<Promise<void>>();

  private constructor(
    private readonly boss: PgBoss,
    private readonly logger: Logger,
    private readonly pollingIntervalSeconds: number,
  ) {}

  static async open(url: string, logger: Logger, options: SchedulerOptions = {}): Promise<Scheduler> {
    const boss = new PgBoss({
      connectionString: url,
      max: options.max ?? 2,
      application_name: 'trs-scheduler',
      cronMonitorIntervalSeconds: options.cronMonitorIntervalSeconds ?? 30,
      cronWorkerIntervalSeconds: options.cronWorkerIntervalSeconds ?? 5,
    });
    const incident = incidentLogger(logger);
    boss.on('error', (err) => incident('error', 'scheduler', err, 'scheduler error'));
    await boss.start();
    return new Scheduler(boss, logger, options.pollingIntervalSeconds ?? 10);
  }

  /** Registers `job`'s schedule (the same from every process) and this process's worker for it. */
  async add(job: ScheduledJob): Promise<void> {
    const settings = { name: job.name, policy: 'stately' as const, retryLimit: 0, expireInSeconds: job.expireInSeconds };
    // Processes starting together create the queue together: pg-boss attaches a partition of its
    // job table for it, which may deadlock with another process's statements; the loser retries.
    await retryDeadlock(async () => {
      if (!(await this.boss.getQueue(job.name))) await this.boss.createQueue(job.name, settings);
      await this.boss.updateQueue(job.name, settings);
      await this.boss.schedule(job.name, job.cron, {}, { tz: 'UTC' });
    });
    await this.boss.work(job.name, { pollingIntervalSeconds: this.pollingIntervalSeconds }, async () => {
      const run = job.run();
      this.running.add(run);
      try {
        await run;
      } finally {
        this.running.delete(run);
      }
    });
    this.names.push(job.name);
  }

  /**
   * Sends `name`'s job now, taken by whichever process's worker comes first; a job already
   * waiting makes this one a no-op (`stately`). With `oncePerSeconds`, at most one such job is
   * sent per slot of that many seconds (slots from the epoch) by all the processes together:
   * a process's first run when it starts, however many start at once.
   */
  async runSoon(name: string, options: { oncePerSeconds?: number } = {}): Promise<string | null> {
    if (!options.oncePerSeconds) return this.boss.send(name, {});
    return this.boss.send(name, {}, { singletonKey: 'start', singletonSeconds: options.oncePerSeconds });
  }

  /** Stops taking jobs, and waits for the runs under way in this process. */
  async stop(): Promise<void> {
    for (const name of this.names) await this.boss.offWork(name);
    await Promise.allSettled(this.running);
    await this.boss.stop({ graceful: true, wait: true, timeout: 20_000 });
    this.logger.debug({ jobs: this.names }, 'scheduler stopped');
  }
}

