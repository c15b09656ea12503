import { timingSafeEqual } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { LIBUV_DEFAULT_THREADS } from '../account/settings.js';
import type { Pool } from '../db/pool.js';
import { API_BASE } from '../openapi.js';
import { whenAnswered } from './answered.js';

/**
 * Prometheus metrics of one process, served at GET /metrics: requests and their latency per
 * operation and status, quota refusals, relay queue depth and delivery outcomes, database pool
 * use, and Node's own process metrics.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'trs_http_requests_total',
    help: 'HTTP requests answered, by operation and status',
    labelNames: ['operation', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'trs_http_request_duration_seconds',
    help: 'Time to answer, by operation',
    labelNames: ['operation'] as const,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [this.registry],
  });
  readonly quotaRefusals = new Counter({
    name: 'trs_quota_refusals_total',
    help: 'Requests refused with 429 because a daily counter was used up',
    labelNames: ['counter'] as const,
    registers: [this.registry],
  });
  readonly relayOutcomes = new Counter({
    name: 'trs_relay_messages_total',
    help: 'Relay messages by channel and outcome (sent, retried, failed; delivered, undelivered from receipts)',
    labelNames: ['channel', 'outcome'] as const,
    registers: [this.registry],
  });
  readonly relayDeliverySeconds = new Histogram({
    name: 'trs_relay_delivery_seconds',
    help: 'Time from a relay send accepted (its 200) to its transport taking the message, by channel and provider',
    labelNames: ['channel', 'provider'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers: [this.registry],
  });

  /**
   * @param relayBacklog the relay messages waiting or being handed on now, per channel: how many,
   *   and the age in seconds of the oldest (0 when none); read when the metrics are scraped.
   * @param hashing what password hashing has done in this process (account/passwords.ts
   *   `hashActivity`), read when the metrics are scraped.
   * @param replicaReads the lag-tolerant reads the read replicas answered, those the primary
   *   answered for a replica that failed, and for one that had not replayed what the read
   *   needed (DATABASE_REPLICA_URL; db/replicas.ts `counts`).
   */
  constructor(
    pool: Pool,
    relayBacklog?: () => Promise<Record<'mail' | 'sms', { depth: number; oldestSeconds: number }>>,
    hashing?: () => { running: number; peak: number; total: number; refused: number },
    replicaReads?: { replica: number; fallback: number; behind: number },
  ) {
    collectDefaultMetrics({ register: this.registry, prefix: 'trs_' });
    new Gauge({
      name: 'trs_db_pool_connections',
      help: 'Connections of the database pool by state',
      labelNames: ['state'] as const,
      registers: [this.registry],
      collect() {
        this.set({ state: 'total' }, pool.totalCount);
        this.set({ state: 'idle' }, pool.idleCount);
        this.set({ state: 'waiting' }, pool.waitingCount);
      },
    });
    if (replicaReads) {
      new Counter({
        name: 'trs_db_replica_reads_total',
        help: 'Lag-tolerant reads answered by the read replicas (answered_by="replica"), by the primary for a replica that failed (answered_by="primary") or had not replayed what the read needed (answered_by="primary_behind")',
        labelNames: ['answered_by'] as const,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc({ answered_by: 'replica' }, replicaReads.replica);
          this.inc({ answered_by: 'primary' }, replicaReads.fallback);
          this.inc({ answered_by: 'primary_behind' }, replicaReads.behind);
        },
      });
    }
    if (hashing) {
      new Gauge({
        name: 'trs_libuv_threadpool_size',
        help: "Threads of libuv's pool in this process (UV_THREADPOOL_SIZE it started with, else 4): password hashing leaves 2 of them free",
        registers: [this.registry],
        collect() {
          this.set(Number(process.env.UV_THREADPOOL_SIZE) || LIBUV_DEFAULT_THREADS);
        },
      });
      new Gauge({
        name: 'trs_password_hashes_running',
        help: 'Password hashes (scrypt) running now in this process',
        registers: [this.registry],
        collect() {
          this.set(hashing().running);
        },
      });
      new Gauge({
        name: 'trs_password_hashes_running_peak',
        help: 'The most password hashes that ever ran at once in this process (PASSWORD_HASH_CONCURRENCY bounds it)',
        registers: [this.registry],
        collect() {
          this.set(hashing().peak);
        },
      });
      for (const [name, help, read] of [
        ['trs_password_hashes_total', 'Password hashes run in this process', () => hashing().total],
        ['trs_password_hash_refusals_total', 'Password hashes refused with 503 because PASSWORD_HASH_CONCURRENCY ran and PASSWORD_HASH_QUEUE waited', () => hashing().refused],
      ] as const) {
        new Counter({
          name,
          help,
          registers: [this.registry],
          collect() {
            this.reset();
            this.inc(read());
          },
        });
      }
    }
    // Both gauges come from one reading per scrape.
    type Backlog = Record<'mail' | 'sms', { depth: number; oldestSeconds: number }> | undefined;
    let reading: Promise<Backlog> | undefined;
    const read = (): Promise<Backlog> =>
      (reading ??= (relayBacklog?.() ?? Promise.resolve(undefined))
        .catch(() => undefined)
        .finally(() => setImmediate(() => (reading = undefined))));
    new Gauge({
      name: 'trs_relay_queue_depth',
      help: 'Relay messages waiting for delivery or being handed on, by channel',
      labelNames: ['channel'] as const,
      registers: [this.registry],
      async collect() {
        const now = await read();
        if (now) for (const channel of ['mail', 'sms'] as const) this.set({ channel }, now[channel].depth);
      },
    });
    new Gauge({
      name: 'trs_relay_queue_oldest_seconds',
      help: 'Age of the oldest relay message waiting for delivery, by channel (0 when none waits)',
      labelNames: ['channel'] as const,
      registers: [this.registry],
      async collect() {
        const now = await read();
        if (now) for (const channel of ['mail', 'sms'] as const) this.set({ channel }, now[channel].oldestSeconds);
      },
    });
  }

  /** Counts and times every request once its response is sent. */
  middleware() {
    return (req: Request, res: Response, next: NextFunction) => {
      const started = performance.now();
      whenAnswered(res, () => {
        const operation = res.locals.operationId ?? (req.path.startsWith(`${API_BASE}/`) ? 'unmatched' : 'other');
        this.latency.observe({ operation }, (performance.now() - started) / 1000);
        this.requests.inc({ operation, status: String(res.statusCode) });
      });
      next();
    };
  }

  /**
   * GET /metrics: with METRICS_TOKEN set, only for `Authorization: Bearer <token>`. Without it,
   * only where `loopback` allows it (outside production) and only for a caller on loopback that
   * came through no proxy: a request carrying any header a proxy adds (see {@link proxied}),
   * even from a proxy on loopback, is refused, so the metrics are never public by accident. With
   * NODE_ENV=production a token is required: without one every caller gets 403 saying so.
   */
  handler(token: string | undefined, loopback = true) {
    return async (req: Request, res: Response) => {
      if (!token) {
        if (!loopback) {
          res.status(403).type('text/plain').send('metrics need a token in production: set METRICS_TOKEN and send Authorization: Bearer <token>\n');
          return;
        }
        if (proxied(req) || !isLoopback(req.ip ?? req.socket.remoteAddress ?? '')) {
          res.status(403).type('text/plain').send('metrics are served to loopback only; set METRICS_TOKEN to read them from elsewhere\n');
          return;
        }
      } else {
        const given = Buffer.from(req.headers.authorization ?? '');
        const expected = Buffer.from(`Bearer ${token}`);
        if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
          res.status(401).type('text/plain').send('metrics need the bearer token\n');
          return;
        }
      }
      res.type(this.registry.contentType).send(await this.registry.metrics());
    };
  }
}

/**
 * Headers a reverse proxy or CDN adds: `Forwarded`, `Via`, any `X-Forwarded-*` (For, Host,
 * Proto, Port, Server …), `X-Real-IP` (nginx's usual choice), and the client-address headers
 * of common CDNs and balancers.
 */
const PROXY_HEADER = /^(forwarded|via|x-forwarded-.+|x-real-ip|x-client-ip|x-cluster-client-ip|x-original-forwarded-for|true-client-ip|cf-connecting-ip|fastly-client-ip)$/;

/** Whether a request came through a proxy, by any header such a proxy adds. */
export function proxied(req: Request): boolean {
  return Object.keys(req.headers).some((name) => PROXY_HEADER.test(name));
}

function isLoopback(address: string): boolean {
  return /^(127\.|::ffff:127\.)/.test(address) || address === '::1';
}
