import type { Logger } from 'pino';
import type { AccountMailer } from '../account/mailer.js';
import type { Clock } from '../clock.js';
import type { Pool } from '../db/pool.js';
import { webhookHandlers } from './handlers.js';
import { WebhookDispatcher } from './job.js';
import { WebhookRepository } from './repository.js';
import { WebhookService } from './service.js';
import type { WebhookSettings } from './settings.js';

/**
 * Outbound webhooks: the endpoints, the events the reports and regenerations make, their
 * deliveries (the dispatcher, with the scheduled jobs); a disabled endpoint's owner is mailed.
 * The events gathered are stored on stop (`settle`).
 */
export function webhooksModule(deps: { pool: Pool; clock: Clock; logger: Logger; settings: WebhookSettings; mailer: AccountMailer }) {
  const service = new WebhookService(new WebhookRepository(deps.pool), deps.clock, deps.mailer, deps.settings, deps.logger);
  return {
    service,
    handlers: () => webhookHandlers(service),
    jobs: [new WebhookDispatcher(service, deps.logger)],
    settle: () => service.settle(),
  };
}
