import type pg from 'pg';
import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import { retryDeadlock } from '../db/errors.js';
import { listen, listeningConnection, notify } from '../db/notify.js';
import type { Queryable } from '../db/pool.js';
import { incidentLogger } from '../logging.js';
import type { Channel } from './policy.js';

const QUEUE: Record<Channel, string> = { mail: 'relay-mail', sms: 'relay-sms' };
/** The PostgreSQL notification channel that wakes the delivery workers of every process. */
const WAKE_CHANNEL = 'trs_relay_queued';
/**
 * A job held longer than this is taken to belong to a process that died, and is handed out
 * again. Far above a delivery's own deadlines (SMTP 15 s, SMS providers 10 s by default).
 */
const EXPIRE_SECONDS = 120;

export interface QueueOptions {
  retryLimit: number;
  retryDelaySeconds: number;
  /**
   * Listen for PostgreSQL notifications of new messages, so that another process's sends wake
   * this one's workers at once. Off for the embedded database, which has one process and
   * multiplexes every connection onto one session (where a listener would see nothing).
   */
  listen: boolean;
}

export interface ConsumeOptions {
  /** Jobs handed to `handle` at once. */
  concurrency: number;
  /** How often an idle dispatcher looks for work it was not woken for (retries coming due). */
  pollSeconds: number;
}

export type DeliveryJob = PgBoss.JobWithMetadata<{ messageId: number }>;

/**
 * The durable relay queue: pg-boss in PostgreSQL. A send is queued in the same transaction
 * that charges it and stores the message, so an accepted message is never lost; a job that
 * a stopped process did not finish is handed out again once it expires.
 *
 * Dispatch is immediate: the queuing transaction notifies (`pg_notify`, delivered when it
 * commits) and the sending process wakes its own dispatcher after the commit; every process
 * listening wakes its dispatcher for that channel. Polling is only the fallback, for retries
 * coming due and notifications lost while a connection was down.
 */
export class RelayQueue {
  private readonly dispatchers = new Map<Channel, Dispatcher>();
  private listener: Listener | undefined;

  private constructor(
    private readonly boss: PgBoss,
    private readonly logger: Logger,
  ) {}

  static async open(url: string, options: QueueOptions, logger: Logger, max = 4): Promise<RelayQueue> {
    // No timekeeper here: the scheduled jobs' pg-boss (jobs/scheduler.ts) sends what is due.
    const boss = new PgBoss({ connectionString: url, max, application_name: 'trs-relay', maintenanceIntervalSeconds: 30, schedule: false });
    // pg-boss reports every failed poll; during a database outage that is one incident.
    const incident = incidentLogger(logger);
    boss.on('error', (err) => incident('error', 'relay-queue', err, 'relay queue error'));
    await boss.start();
    for (const name of Object.values(QUEUE)) {
      const settings = {
        name,
        retryLimit: options.retryLimit,
        retryDelay: options.retryDelaySeconds,
        retryBackoff: true,
        expireInSeconds: EXPIRE_SECONDS,
      };
      // Processes starting together create the queues together, which may deadlock (db/errors.ts).
      await retryDeadlock(async () => {
        await boss.createQueue(name, settings);
        // A queue made by an earlier version keeps its settings unless they are updated.
        await boss.updateQueue(name, settings);
      });
    }
    const queue = new RelayQueue(boss, logger);
    if (options.listen) queue.listener = new Listener(url, (channel) => queue.wake(channel), incident);
    return queue;
  }

  /**
   * Queues a message inside the caller's transaction; the notification that wakes the workers
   * of other processes leaves when that transaction commits (and never if it rolls back).
   */
  async enqueue(channel: Channel, messageId: number, db: Queryable): Promise<void> {
    await this.boss.send(QUEUE[channel], { messageId }, { db: { executeSql: (text, values) => db.query(text, values) } });
    if (this.listener) await notify(db, WAKE_CHANNEL, channel);
  }

  /** Wakes this process's dispatcher of `channel`; call it once the queuing transaction committed. */
  wake(channel: Channel): void {
    this.dispatchers.get(channel)?.wake();
  }

  /**
   * Starts delivering `channel` in this process: up to `concurrency` jobs at once, each handed
   * to `handle`, which resolves when the job is done (delivered, or failed for good) and throws
   * to have it retried after the queue's backoff.
   */
  consume(channel: Channel, options: ConsumeOptions, handle: (job: DeliveryJob) => Promise<void>): void {
    const incident = incidentLogger(this.logger);
    const dispatcher = new Dispatcher(this.boss, QUEUE[channel], options, handle, (err) =>
      incident('error', `relay-dispatch-${channel}`, err, `relay ${channel} dispatcher error`),
    );
    this.dispatchers.set(channel, dispatcher);
    dispatcher.start();
  }

  /** Stops taking jobs and waits for the ones under way. */
  async stop(): Promise<void> {
    await this.listener?.close();
    await Promise.all([...this.dispatchers.values()].map((d) => d.stop()));
    await this.boss.stop({ graceful: true, wait: true, timeout: 20_000 });
  }
}

/**
 * Hands jobs of one queue to `handle`, up to `concurrency` at a time: it fetches as many jobs
 * as there are free slots (one statement, `for update skip locked`, so two processes never take
 * the same job), and fetches again whenever a slot frees while work may be waiting. A slow
 * delivery holds its own slot only. Idle, it sleeps until woken or until the poll interval.
 */
class Dispatcher {
  private running = new Set<Promise<void>>();
  private stopping = false;
  private woken = false;
  private waitingForSlot = false;
  private alarm: (() => void) | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly boss: PgBoss,
    private readonly name: string,
    private readonly options: ConsumeOptions,
    private readonly handle: (job: DeliveryJob) => Promise<void>,
    private readonly onError: (err: unknown) => void,
  ) {}

  start(): void {
    this.loop = this.run();
  }

  wake(): void {
    this.woken = true;
    this.alarm?.();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.alarm?.();
    await this.loop;
  }

  private async run(): Promise<void> {
    const pollMs = this.options.pollSeconds * 1000;
    while (!this.stopping) {
      const free = this.options.concurrency - this.running.size;
      if (free <= 0) {
        // Every slot is taken: wait for one to free (or for stop()).
        this.waitingForSlot = true;
        await this.sleep(undefined);
        this.waitingForSlot = false;
        continue;
      }
      this.woken = false;
      let full = false;
      try {
        const jobs = (await this.boss.fetch<{ messageId: number }>(this.name, { batchSize: free, includeMetadata: true })) as DeliveryJob[];
        for (const job of jobs) this.track(job);
        full = jobs.length === free;
      } catch (err) {
        this.onError(err);
      }
      // More may be waiting when the fetch filled every free slot, or when a new message came
      // meanwhile; otherwise sleep until woken or the poll interval (retries coming due).
      if (full || this.woken) continue;
      await this.sleep(pollMs);
    }
    await Promise.allSettled(this.running);
  }

  private track(job: DeliveryJob): void {
    const done = this.deliver(job).finally(() => {
      this.running.delete(done);
      if (this.waitingForSlot) this.alarm?.();
    });
    this.running.add(done);
  }

  private async deliver(job: DeliveryJob): Promise<void> {
    let failure: unknown;
    try {
      await this.handle(job);
    } catch (err) {
      failure = err;
    }
    try {
      if (failure === undefined) await this.boss.complete(this.name, job.id);
      else await this.boss.fail(this.name, job.id, { message: failure instanceof Error ? failure.message : String(failure) });
    } catch (err) {
      // The job stays held until it expires, then is handed out again; the message's own status
      // keeps a delivered message from going out twice.
      this.onError(err);
    }
  }

  /** Resolves on wake(), on a freed slot, on stop(), or after `ms` (never, without `ms`). */
  private sleep(ms: number | undefined): Promise<void> {
    return new Promise((resolve) => {
      const timer = ms === undefined ? undefined : setTimeout(() => this.alarm?.(), ms);
      this.alarm = () => {
        this.alarm = undefined;
        if (timer) clearTimeout(timer);
        resolve();
      };
    });
  }
}

/**
 * A connection of its own that LISTENs for new relay messages and calls `onQueued` with their
 * channel. When the connection breaks it reconnects (1 s, doubling to 30 s), and wakes every
 * channel once connected, for what was queued meanwhile.
 */
class Listener {
  private client: pg.Client | undefined;
  private closed = false;
  private retryMs = 1_000;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly url: string,
    private readonly onQueued: (channel: Channel) => void,
    private readonly incident: (level: 'warn' | 'error', component: string, err: unknown, message: string) => void,
  ) {
    void this.connect();
  }

  private async connect(): Promise<void> {
    const client = listeningConnection(this.url, 'trs-relay-listener');
    this.client = client;
    client.on('notification', (msg) => {
      if (msg.payload === 'mail' || msg.payload === 'sms') this.onQueued(msg.payload);
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client, new Error('the listening connection ended')));
    try {
      await client.connect();
      await listen(client, WAKE_CHANNEL);
      this.retryMs = 1_000;
      this.onQueued('mail');
      this.onQueued('sms');
    } catch (err) {
      this.lost(client, err);
    }
  }

  private lost(client: pg.Client, err: unknown): void {
    if (this.closed || this.client !== client) return;
    this.client = undefined;
    client.removeAllListeners('end');
    client.on('error', () => undefined);
    void client.end().catch(() => undefined);
    this.incident('warn', 'relay-listener', err, 'relay queue listener lost its connection; reconnecting (polling meanwhile)');
    this.timer = setTimeout(() => void this.connect(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, 30_000);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
    }
  }
}
