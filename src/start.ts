import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import type { Logger } from 'pino';
import { hashActivity } from './account/passwords.js';
import { buildApp } from './app.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { connectDatabase, type Database, type MigrateMode } from './db/connect.js';
import type { ReplicaPool } from './db/replicas.js';
import { openGeoIp } from './geo/geoip.js';
import { Drain } from './http/drain.js';
import { Metrics } from './http/metrics.js';
import { createHttpServer, SERVER_TIMEOUTS } from './http/server.js';
import { Scheduler } from './jobs/scheduler.js';
import { API_BASE, loadApiArtifacts, projectRoot } from './openapi.js';
import { ApiReference, redoclyCli, referenceFileOf } from './reference.js';
import { logProgress } from './progress.js';
import { startRelay, type RelayRuntime } from './relay/runtime.js';
import { buildModules, type Modules } from './modules.js';

export interface StartOptions {
  logger: Logger;
  /** The one clock of the process (tests pass a ManualClock); the system's by default. */
  clock?: Clock;
  /** What to do about pending migrations when connecting (default: apply them). */
  migrate?: MigrateMode;
  /** A database opened already (the tests' per-file databases); it is closed by stop(). */
  database?: Database;
  /** The scheduled jobs (blacklist regeneration, purge of old account data); on by default. */
  jobs?: boolean;
  /** Connections of the relay queue's own pool. */
  queueConnections?: number;
  timeouts?: typeof SERVER_TIMEOUTS;
  /**
   * The published reference: another file than dist/reference.html, no Redocly CLI (`cli:
   * null`, as in a production install), another wait for a build (tests).
   */
  reference?: { file?: string; cli?: string | null; waitMs?: number };
}

/** A running server process: what start() made, and the one way to stop it. */
export interface Running {
  /** e.g. `http://127.0.0.1:8080` */
  origin: string;
  server: Server;
  app: Express;
  database: Database;
  relay: RelayRuntime;
  drain: Drain;
  /**
   * The graceful stop: /readyz answers 503 and responses close their connections for
   * `drainMs`, then no new connections, in-flight requests answered, the scheduled jobs and
   * the relay worker stopped (deliveries under way finish), the database closed. Each step is
   * logged as it is done. `abrupt` (tests) closes every connection at once instead of waiting.
   */
  stop(options?: { drainMs?: number; abrupt?: boolean; reason?: string }): Promise<void>;
}

/**
 * The composition root: configuration in, a listening server out, with everything a process
 * runs (database, GeoIP, metrics, relay queue and worker, scheduled jobs, the app). main.ts,
 * the tests' servers, the benchmarks and the soak all start the server through it.
 */
export async function start(config: Config, options: StartOptions): Promise<Running> {
  const { logger } = options;
  const clock = options.clock ?? systemClock;
  const api = loadApiArtifacts();
  const reference = new ApiReference({
    file: options.reference?.file ?? referenceFileOf(projectRoot),
    document: api.yaml,
    root: projectRoot,
    cli: options.reference?.cli === null ? undefined : (options.reference?.cli ?? redoclyCli(projectRoot)),
    logger,
    waitMs: options.reference?.waitMs,
  });
  const [geo, database] = await Promise.all([
    openGeoIp({ ...config.geoip, progress: logProgress(logger) }),
    options.database ?? connectDatabase(config, logger, { migrate: options.migrate ?? 'apply' }),
  ]);
  // The metrics read the relay's backlog from its module, built once the relay's queue is up
  // (before the server listens, so before anything reads the metrics).
  let modules: Modules | undefined;
  const metrics = new Metrics(
    database.pool,
    () => modules!.relay.messages.backlog(clock.now()),
    () => hashActivity,
    (database.replicas as Partial<ReplicaPool>).counts,
  );
  // pg-boss and the relay's LISTEN keep session state: the direct URL, never a transaction pooler.
  const relay = await startRelay(config.relay, database.directUrl, clock, logger, {
    queueConnections: options.queueConnections ?? (database.embedded ? 2 : 4),
    metrics,
    // The embedded database has one process and one session: no one else to hear from.
    listen: !database.embedded,
  });
  modules = buildModules({ orm: database.orm, pool: database.pool, replicas: database.replicas, clock, logger, config, geo, relay, metrics });
  relay.deliver(modules.relay.messages);
  const drain = new Drain();
  const app = buildApp({
    drain,
    orm: database.orm,
    pool: database.pool,
    modules,
    metrics,
    config,
    logger,
    clock,
    api,
    reference,
  });
  // The areas' jobs: the scheduled ones on pg-boss schedules (one run across every process
  // sharing the database), the webhooks' dispatcher beside them.
  const scheduler = options.jobs === false ? undefined : await Scheduler.open(database.directUrl, logger, { max: database.embedded ? 1 : 2 });
  const jobs = scheduler ? modules.jobs : [];
  for (const job of jobs) await job.start(scheduler!);

  const server = createHttpServer(app, options.timeouts);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  const origin = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  logger.info({ host: config.host, port, docs: `${API_BASE}/docs` }, 'listening');
  if (!config.metricsToken && !config.metricsLoopback) logger.warn('GET /metrics answers 403 until METRICS_TOKEN is set (required with NODE_ENV=production)');

  return {
    origin,
    server,
    app,
    database,
    relay,
    drain,
    async stop({ drainMs = 0, abrupt = false, reason } = {}) {
      drain.begin();
      reference.close();
      if (!abrupt) {
        logger.info({ reason, drainSeconds: drainMs / 1000 }, 'stopping: draining (/readyz answers 503, responses close their connections)');
        await new Promise((resolve) => setTimeout(resolve, drainMs));
      }
      if (abrupt) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      } else {
        logger.info('stopping: no new connections, finishing in-flight requests');
        await drain.close(server);
        logger.info('stopping: every request answered, HTTP server closed');
      }
      await drain.finish();
      logger.info('stopping: reports gathered for a group commit written');
      await scheduler?.stop();
      for (const job of [...jobs].reverse()) await job.stop?.();
      await relay.stop();
      logger.info('stopping: scheduled jobs and relay worker stopped');
      await database.close();
      logger.info('stopped: database connections closed');
    },
  };
}
