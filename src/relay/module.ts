import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Orm } from '../db/orm.js';
import type { Pool } from '../db/pool.js';
import type { KeySites } from '../keys/sites.repository.js';
import { SmsTemplates } from './delivery/templates.js';
import { SmsTemplateRepository } from './delivery/templates.repository.js';
import { relayHandlers, relayWebhookHandlers } from './handlers.js';
import { BundleLedger } from './ledger.repository.js';
import { PaymentEvents, type PaymentsConfig } from './payments.js';
import { SmsReceipts } from './receipts.js';
import { RelayRepository } from './repository.js';
import type { RelayRuntime } from './runtime.js';
import { RelayService, relayLimits } from './service.js';
import type { RelayConfig } from './settings.js';
import type { DeliveryMetrics } from './worker.js';

/**
 * The 2FA relay: its messages (one repository: the sends, the worker, the receipts, the
 * metrics' backlog and the purge read the same), the SMS templates, the prepaid bundles' ledger,
 * and the inbound webhooks that credit bundles and take delivery receipts. `runtime` is the
 * process's queue (undefined in the CLI: sends are not made there).
 */
export function relayModule(deps: {
  orm: Orm;
  pool: Pool;
  clock: Clock;
  logger: Logger;
  settings: RelayConfig;
  /** The payment webhook's secret and tolerance (PAYMENT_WEBHOOK_*). */
  payments: PaymentsConfig;
  sites: KeySites;
  runtime?: Pick<RelayRuntime, 'queue' | 'smsReceipts'>;
  metrics?: DeliveryMetrics;
}) {
  const { orm, pool, clock, logger, runtime } = deps;
  const messages = new RelayRepository(pool);
  const templates = new SmsTemplates(new SmsTemplateRepository(orm.em), clock);
  const ledger = new BundleLedger(pool, clock);
  const service = new RelayService(messages, runtime?.queue, relayLimits(deps.settings), clock, deps.sites, templates);
  return {
    service,
    messages,
    templates,
    ledger,
    handlers: () => ({
      ...relayHandlers(service),
      ...relayWebhookHandlers(
        new PaymentEvents(ledger, deps.payments, clock),
        new SmsReceipts(runtime?.smsReceipts, messages, clock, logger, deps.metrics),
      ),
    }),
  };
}
