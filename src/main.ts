import cluster from 'node:cluster';
import type { Logger } from 'pino';
import { buildApp } from './app.js';
import { blacklistSnapshots } from './blacklist/snapshots.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig, type Config } from './config.js';
import { connectDatabase } from './db/connect.js';
import { openGeoIp } from './geo/geoip.js';
import { createLogger } from './http/logging.js';
import { BlacklistJob } from './jobs/blacklist-job.js';
import { loadApiArtifacts } from './openapi.js';
import { startRelay } from './relay/runtime.js';
import { Metrics } from './http/metrics.js';
import { createHttpServer } from './http/server.js';
import type { RelayQueue } from './relay/queue.js';

/** How long in-flight requests may take to finish after SIGTERM before the process gives up. */
const SHUTDOWN_GRACE_MS = 25_000;

/** One server process: database, app, scheduled jobs, relay worker; graceful stop on signals. */
async function serve(config: Config, logger: Logger): Promise<void> {
  const api = loadApiArtifacts();
  const [geo, database] = await Promise.all([openGeoIp(config.geoip), connectDatabase(config, logger)]);
  let relayQueue: RelayQueue | undefined;
  const metrics = new Metrics(database.pool, (channel) => relayQueue?.depth(channel) ?? Promise.resolve(0));
  const relay = await startRelay(config.relay, database.url, database.pool, systemClock, logger, {
    queueConnections: config.databaseUrl ? 4 : 2,
    metrics,
  });
  relayQueue = relay.queue;
  const app = buildApp({
    orm: database.orm,
    pool: database.pool,
    geo,
    relayQueue: relay.queue,
    metrics,
    config,
    logger,
    clock: systemClock,
    api,
  });
  const blacklistJob = new BlacklistJob(
    database.pool,
    blacklistSnapshots(database.pool, systemClock),
    systemClock,
    config.blacklistIntervalMs,
    logger,
  );
  blacklistJob.start();

  const server = createHttpServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info({ host: config.host, port, docs: `/api/v2/docs` }, 'listening');

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'stopping: no new connections, finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error('in-flight requests did not finish in time; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS);
    force.unref();
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    await blacklistJob.stop();
    await relay.stop();
    await database.close();
    logger.info('stopped');
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
  const database = await connectDatabase(config, logger);
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
    await Promise.all(
      workers.map((w) => new Promise<void>((resolve) => {
        w.once('exit', () => resolve());
        w.process.kill(signal);
      })),
    );
    await database.close();
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
