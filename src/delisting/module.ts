import type { AccountMailer } from '../account/mailer.js';
import type { Clock } from '../clock.js';
import type { Pool } from '../db/pool.js';
import { delistingHandlers } from './handlers.js';
import { DelistRepository } from './repository.js';
import { DelistService, type EvidenceReader } from './service.js';
import type { DelistingSettings } from './settings.js';

/** Delisting requests: confirmed by mail, decided by rule or by a reviewer, with the reports' evidence beside them. */
export function delistingModule(deps: {
  pool: Pool;
  clock: Clock;
  settings: DelistingSettings;
  /** PUBLIC_URL: the origin of the links in the mails, read when a mail is made. */
  publicUrl: () => string | undefined;
  mailer: AccountMailer;
  evidence: EvidenceReader;
}) {
  const service = new DelistService(new DelistRepository(deps.pool), deps.clock, deps.mailer, deps.settings, deps.publicUrl, deps.evidence);
  return { service, handlers: () => delistingHandlers(service) };
}
