import type { BlacklistSnapshots } from '../blacklist/repository.js';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { Orm } from '../db/orm.js';
import type { Pool } from '../db/pool.js';
import type { GeoIp } from '../geo/geoip.js';
import type { Edge } from '../http/edge.js';
import type { Meter } from '../keys/usage.repository.js';
import { reputationHandlers } from './handlers.js';
import { ReputationRepository } from './repository.js';
import { ReputationService, type DelistingDecisions, type ReportListener } from './service.js';
import type { ReportBatching } from './settings.js';
import { Whitelist } from './whitelist.repository.js';

/**
 * The reputation: reports taken (gathered for a group commit, charged, told to the webhooks),
 * addresses checked and scored, the evidence a delisting request shows, the whitelist. The
 * reports gathered are written on stop (`close`).
 */
export function reputationModule(deps: {
  orm: Orm;
  pool: Pool;
  replicas: Pool;
  clock: Clock;
  /** POST /report's group commit (REPORT_BATCH_MS, REPORT_BATCH_MAX). */
  batching: ReportBatching;
  geo: GeoIp;
  categories: CategoryService;
  meter: Meter;
  snapshots: BlacklistSnapshots;
  delistings: DelistingDecisions;
  listener: ReportListener;
}) {
  const repository = new ReputationRepository(deps.pool, deps.replicas);
  const service = new ReputationService(repository, deps.categories, deps.geo, deps.clock, {
    batching: deps.batching,
    quota: deps.meter,
    delistings: deps.delistings,
    listed: deps.snapshots,
    listener: deps.listener,
  });
  return {
    service,
    whitelist: new Whitelist(deps.orm.em),
    /** The evidence of the reports about an address, newest first (every reporter's, or one account's). */
    evidence: (ip: string, limit: number, accountId?: number) => repository.evidence(ip, accountId, limit, 0),
    handlers: ({ metering }: Edge) => reputationHandlers(service, metering),
    close: () => service.close(),
  };
}
