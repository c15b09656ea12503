import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { blacklistSnapshots } from './blacklist/snapshots.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { connectDatabase } from './db/connect.js';
import { openGeoIp } from './geo/geoip.js';
import { createLogger } from './logging.js';
import { BlacklistJob } from './jobs/blacklist-job.js';
import { PurgeJob } from './account/purge-job.js';
import { loadApiArtifacts } from './openapi.js';
import { logProgress } from './progress.js';
import { startRelay } from './relay/runtime.js';
import { Metrics } from './http/metrics.js';
import { createHttpServer } from './http/server.js';
import { Drain } from './http/drain.js';
import { RelayMessages } from './relay/messages.js';

/** One server process: database, app, scheduled jobs, relay worker; graceful stop on signals. */
async function serve(config: Config, logger: Logger): Promise<void> {
  const api = loadApiArtifacts();
  // A worker's supervisor has migrated already: the worker only checks that nothing is pending.
  const migrate = config.migrateOnStart && cluster.isPrimary ? 'apply' : 'verify';
  const [geo, database] = await Promise.all([openGeoIp({ ...config.geoip, progress: logProgress(logger) }), connectDatabase(config, logger, { migrate })]);
  const relayMessages = new RelayMessages(database.pool, systemClock);
  const metrics = new Metrics(database.pool, () => relayMessages.backlog());
  const relay = await startRelay(config.relay, database.url, database.pool, systemClock, logger, {
    queueConnections: config.databaseUrl ? 4 : 2,
    metrics,
    // The embedded database has one process and one session: no one else to hear from.
    listen: config.databaseUrl !== undefined,
  });
  const drain = new Drain();
  const app = buildApp({
    drain,
    orm: database.orm,
    pool: database.pool,
    geo,
    relayQueue: relay.queue,
    smsReceipts: relay.smsReceipts,
    metrics,
    config,
    logger,
    clock: systemClock,
    api,
  });
  const blacklistJob = new BlacklistJob(
    blacklistSnapshots(database.pool, systemClock, config.blacklistHistory),
    systemClock,
    config.blacklistIntervalMs,
    logger,
  );
  blacklistJob.start();
  const purgeJob = new PurgeJob(database.pool, systemClock, config.web, logger);
  purgeJob.start();

  const server = createHttpServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ host: config.host, port, docs: `/api/v2/docs` }, 'listening');

  let stopping = false;
  /**
   * SIGTERM (a service manager, a container's stop, a rolling restart) drains first: /readyz
   * answers 503 and responses close their connections for SHUTDOWN_DRAIN_SECONDS, so that a load
   * balancer moves traffic away before the listener closes. SIGINT (Ctrl-C) skips the drain.
   * Then in-flight requests and deliveries finish; a second signal, or SHUTDOWN_TIMEOUT_SECONDS,
   * forces the exit.
   */
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    const force = setTimeout(() => {
      logger.error({ timeoutSeconds: config.shutdown.timeoutMs / 1000 }, 'shutdown did not finish in time; exiting');
      process.exit(1);
    }, config.shutdown.timeoutMs);
    force.unref();
    drain.begin();
    const drainMs = signal === 'SIGTERM' ? config.shutdown.drainMs : 0;
    logger.info({ signal, drainSeconds: drainMs / 1000 }, 'stopping: draining (/readyz answers 503, responses close their connections)');
    await new Promise((resolve) => setTimeout(resolve, drainMs));
    logger.info('stopping: no new connections, finishing in-flight requests');
    await drain.close(server);
    logger.info('stopping: every request answered, HTTP server closed');
    await blacklistJob.stop();
    await purgeJob.stop();
    await relay.stop();
    logger.info('stopping: scheduled jobs and relay worker stopped');
    await database.close();
    logger.info('stopped: database connections closed');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

/**
 * WORKERS > 1: this process migrates the database (and serves the embedded one, which the
 * workers join), then forks that many server processes sharing the port, replaces any that
 * dies, and passes signals on for a graceful stop.
 */
async function supervise(config: Config, logger: Logger): Promise<void> {
  const database = await connectDatabase(config, logger, { migrate: config.migrateOnStart ? 'apply' : 'verify' });
  let stopping = false;
  for (let i = 0; i < config.workers; i++) cluster.fork();
  cluster.on('exit', (worker, code, signal) => {
    if (stopping) return;
    logger.error({ pid: worker.process.pid, code, signal }, 'worker died; starting another');
    cluster.fork();
  });
  const stop = async (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
    logger.info({ signal, workers: workers.length }, 'stopping: passing the signal to the worker processes');
    await Promise.all(
      workers.map((w) => new Promise<void>((resolve) => {
        w.once('exit', () => resolve());
        w.process.kill(signal);
      })),
    );
    await database.close();
    logger.info('stopped: every worker process has exited');
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  logger.info({ workers: config.workers }, 'started worker processes');
}

async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      process.exit(2);
    }
    throw err;
  }
  const logger = createLogger(config.logLevel);
  if (config.workers > 1 && cluster.isPrimary) await supervise(config, logger);
  else await serve(config, logger);
}

main().catch((err: unknown) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
