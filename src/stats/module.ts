import type { BlacklistSnapshots } from '../blacklist/repository.js';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { Pool } from '../db/pool.js';
import { statsHandlers } from './handlers.js';
import { StatsRepository } from './repository.js';
import { StatsService } from './service.js';

/** The statistics: read from the replicas (they tolerate replication lag). */
export function statsModule(deps: { replicas: Pool; clock: Clock; categories: CategoryService; snapshots: BlacklistSnapshots }) {
  const service = new StatsService(new StatsRepository(deps.replicas), deps.categories, deps.snapshots, deps.clock);
  return { service, handlers: () => statsHandlers(service) };
}
