import { createServer } from 'node:http';
import { buildApp } from './app.js';
import { systemClock } from './clock.js';
import { ConfigError, loadConfig } from './config.js';
import { connectDatabase } from './db/connect.js';
import { createLogger } from './http/logging.js';
import { loadApiArtifacts } from './openapi.js';
import { openGeoIp } from './geo/geoip.js';
import { blacklistSnapshots } from './blacklist/snapshots.js';
import { BlacklistJob } from './jobs/blacklist-job.js';
import { startRelay } from './relay/runtime.js';

/** How long in-flight requests may take to finish after SIGTERM before the process gives up. */
const SHUTDOWN_GRACE_MS = 25_000;

async function main(): Promise<void> {
  let config;
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
  const api = loadApiArtifacts();
  const [geo, database] = await Promise.all([openGeoIp(config.geoip), connectDatabase(config, logger)]);
  const relay = await startRelay(config.relay, database.url, database.pool, systemClock, logger, {
    queueConnections: database.embedded ? 2 : 4,
  });
  const app = buildApp({ orm: database.orm, pool: database.pool, geo, relayQueue: relay.queue, config, logger, clock: systemClock, api });

  const blacklistJob = new BlacklistJob(
    database.pool,
    blacklistSnapshots(database.pool, systemClock),
    systemClock,
    config.blacklistIntervalMs,
    logger,
  );
  blacklistJob.start();

  const server = createServer(app);
  // Slow clients cannot hold a connection open forever.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
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

main().catch((err: unknown) => {
  console.error('failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
