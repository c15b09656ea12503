import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import type { Queryable } from '../db/pool.js';
import { incidentLogger } from '../logging.js';
import type { Channel } from './policy.js';

const QUEUE: Record<Channel, string> = { mail: 'relay-mail', sms: 'relay-sms' };

export interface QueueOptions {
  retryLimit: number;
  retryDelaySeconds: number;
  /** How often an idle worker looks for new jobs. */
  pollingSeconds?: number;
}

export type DeliveryJob = PgBoss.JobWithMetadata<{ messageId: number }>;

/**
 * The durable relay queue: pg-boss in PostgreSQL. A send is queued in the same transaction
 * that charges it and stores the message, so an accepted message is never lost; a job that
 * a stopped process did not finish is picked up again by the next one.
 */
export class RelayQueue {
  private constructor(
    private readonly boss: PgBoss,
    private readonly options: QueueOptions,
  ) {}

  static async open(url: string, options: QueueOptions, logger: Logger, max = 4): Promise<RelayQueue> {
    const boss = new PgBoss({ connectionString: url, max, application_name: 'trs-relay' });
    // pg-boss reports every failed poll; during a database outage that is one incident.
    const incident = incidentLogger(logger);
    boss.on('error', (err) => incident('error', 'relay-queue', err, 'relay queue error'));
    await boss.start();
    for (const name of Object.values(QUEUE)) {
      await boss.createQueue(name, {
        name,
        retryLimit: options.retryLimit,
        retryDelay: options.retryDelaySeconds,
        retryBackoff: true,
      });
    }
    return new RelayQueue(boss, options);
  }

  /** Queues a message inside the caller's transaction. */
  async enqueue(channel: Channel, messageId: number, db: Queryable): Promise<void> {
    await this.boss.send(
      QUEUE[channel],
      { messageId },
      { db: { executeSql: (text, values) => db.query(text, values) } },
    );
  }

  /** Starts delivering: `handle` resolves when the job is done, throws to have it retried. */
  async work(channel: Channel, handle: (job: DeliveryJob) => Promise<void>): Promise<void> {
    await this.boss.work<{ messageId: number }>(
      QUEUE[channel],
      { includeMetadata: true, batchSize: 1, pollingIntervalSeconds: this.options.pollingSeconds ?? 2 },
      async ([job]) => {
        if (job) await handle(job);
      },
    );
  }

  /** Jobs waiting or being retried, per channel (for /metrics). */
  async depth(channel: Channel): Promise<number> {
    return this.boss.getQueueSize(QUEUE[channel]);
  }

  /** Stops taking jobs and waits for the ones under way. */
  async stop(): Promise<void> {
    await this.boss.stop({ graceful: true, wait: true, timeout: 20_000 });
  }
}
