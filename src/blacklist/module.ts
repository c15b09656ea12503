import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { Pool } from '../db/pool.js';
import type { Meter } from '../keys/usage.repository.js';
import type { Logger } from 'pino';
import type { Edge } from '../http/edge.js';
import { blacklistHandlers } from './handlers.js';
import { BlacklistJob } from './job.js';
import { blacklistSnapshots } from './repository.js';
import { BlacklistService } from './service.js';
import type { BlacklistSettings } from './settings.js';

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
  settings: BlacklistSettings;
  /** PUBLIC_URL: the lists and the DNS blocklist's TXT records point to it. */
  publicUrl: string | undefined;
  categories: CategoryService;
  meter: Meter;
}) {
  const { pool, replicas, clock, logger, settings, publicUrl } = deps;
  const snapshots = blacklistSnapshots(pool, clock, settings.blacklistHistory, replicas);
  const service = new BlacklistService(snapshots, deps.categories, clock, settings.blacklistCacheBytes, deps.meter, publicUrl);
  const dnsbl = settings.dnsbl.file ? { ...settings.dnsbl, file: settings.dnsbl.file, publicUrl } : undefined;
  return {
    snapshots,
    service,
    handlers: ({ metering }: Edge) => blacklistHandlers(service, snapshots, metering),
    jobs: [new BlacklistJob(snapshots, settings.blacklistIntervalMs, logger, dnsbl)],
  };
}
