import type { AccountMailer } from '../account/mailer.js';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import { delistingHandlers } from './handlers.js';
import { DelistRepository } from './repository.js';
import { DelistService, type EvidenceReader } from './service.js';

/** Delisting requests: confirmed by mail, decided by rule or by a reviewer, with the reports' evidence beside them. */
export function delistingModule(deps: {
  pool: Pool;
  clock: Clock;
  config: Pick<Config, 'delisting' | 'web'>;
  mailer: AccountMailer;
  evidence: EvidenceReader;
}) {
  const { config } = deps;
  const service = new DelistService(new DelistRepository(deps.pool), deps.clock, deps.mailer, config.delisting, () => config.web.publicUrl, deps.evidence);
  return { service, handlers: () => delistingHandlers(service) };
}
