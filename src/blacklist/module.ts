import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Meter } from '../keys/usage.repository.js';
import type { Logger } from 'pino';
import type { Edge } from '../http/edge.js';
import { blacklistHandlers } from './handlers.js';
import { BlacklistJob } from './job.js';
import { blacklistSnapshots } from './repository.js';
import { BlacklistService } from './service.js';

/**
 * The blacklist: its snapshots (made once; the reputation, the statistics and the CrowdSec
 * decisions read the same store), the lists rendered from them, and the regeneration job with
 * the DNS blocklist file it keeps.
 */
export function blacklistModule(deps: {
  pool: Pool;
  replicas: Pool;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'blacklistHistory' | 'blacklistCacheBytes' | 'blacklistIntervalMs' | 'dnsbl' | 'web'>;
  categories: CategoryService;
  meter: Meter;
}) {
  const { pool, replicas, clock, logger, config } = deps;
  const snapshots = blacklistSnapshots(pool, clock, config.blacklistHistory, replicas);
  const service = new BlacklistService(snapshots, deps.categories, clock, config.blacklistCacheBytes, deps.meter, config.web.publicUrl);
  const dnsbl = config.dnsbl.file ? { ...config.dnsbl, file: config.dnsbl.file, publicUrl: config.web.publicUrl } : undefined;
  return {
    snapshots,
    service,
    handlers: ({ metering }: Edge) => blacklistHandlers(service, snapshots, metering),
    jobs: [new BlacklistJob(snapshots, clock, config.blacklistIntervalMs, logger, dnsbl)],
  };
}
