import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { RelayConfig } from './settings.js';
import { createMailOutbox, createMailTransport } from './delivery/mail.js';
import { createSmsProvider, type ReceiptEndpoint } from './delivery/sms.js';
import { RelayQueue } from './queue.js';
import type { RelayRepository } from './repository.js';
import { RelayWorker, type DeliveryMetrics, type Transports } from './worker.js';

export interface RelayRuntime {
  queue: RelayQueue | undefined;
  /** The SMS provider's delivery receipts, where it posts them (RELAY_RECEIPT_BASE_URL set). */
  smsReceipts: { provider: string; endpoint: ReceiptEndpoint } | undefined;
  /**
   * Starts this process's delivery worker on the relay's messages (the relay module's
   * repository), unless RELAY_DELIVERY=false; nothing without a transport.
   */
  deliver(messages: RelayRepository): void;
  stop(): Promise<void>;
}

/**
 * The relay's queue and delivery worker, from configuration only (no provider address comes
 * from a request). Without a configured transport there is no queue, and sends answer 503.
 */
export async function startRelay(
  config: RelayConfig,
  databaseUrl: string,
  clock: Clock,
  logger: Logger,
  options: {
    queueConnections?: number;
    metrics?: DeliveryMetrics;
    /** Listen for other processes' sends (PostgreSQL NOTIFY); off for the embedded database. */
    listen?: boolean;
  } = {},
): Promise<RelayRuntime> {
  const transports: Transports = {};
  if (config.mail) {
    const dkim = config.mail.dkim && {
      domainName: config.mail.dkim.domainName,
      keySelector: config.mail.dkim.keySelector,
      privateKey: await readFile(config.mail.dkim.keyFile, 'utf8'),
    };
    transports.mail =
      config.mail.transport === 'outbox'
        ? createMailOutbox({ dir: config.mail.dir, from: config.mail.from, dkim })
        : createMailTransport({
            smtpUrl: config.mail.smtpUrl,
            from: config.mail.from,
            dkim,
            maxConnections: config.delivery.concurrency.mail,
          });
  }
  if (config.sms) transports.sms = createSmsProvider(config.sms);
  // Said at every start, so that an operator who expected messages to go out learns why not.
  if (!transports.mail) {
    logger.warn('relay: no mail transport configured (RELAY_SMTP_URL, or RELAY_MAIL_TRANSPORT=outbox for development): /relay-mail answers 503');
  }
  if (!transports.sms) {
    logger.warn('relay: no SMS provider configured (RELAY_SMS_PROVIDER, or outbox for development): /relay-sms answers 503');
  }
  if (!transports.mail && !transports.sms) return { queue: undefined, smsReceipts: undefined, deliver: () => undefined, stop: async () => undefined };
  const queue = await RelayQueue.open(
    databaseUrl,
    { retryLimit: config.retryLimit, retryDelaySeconds: config.retryDelaySeconds, listen: options.listen ?? true },
    logger,
    options.queueConnections,
  );
  const sms = transports.sms;
  return {
    queue,
    smsReceipts: sms?.receipts && { provider: sms.name, endpoint: sms.receipts },
    deliver(messages) {
      if (config.delivery.enabled) {
        new RelayWorker(messages, queue, transports, clock, logger, options.metrics).start(config.delivery);
        logger.info(
          { mail: transports.mail?.name ?? null, sms: transports.sms?.name ?? null, concurrency: config.delivery.concurrency },
          'relay: delivering queued messages',
        );
      } else {
        logger.info('relay: RELAY_DELIVERY=false, this process queues messages and other processes deliver them');
      }
    },
    async stop() {
      await queue.stop();
      transports.mail?.close();
      await transports.sms?.close();
    },
  };
}
