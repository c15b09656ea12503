import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { RelayConfig } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { Metrics } from '../http/metrics.js';
import { createMailOutbox, createMailTransport } from './delivery/mail.js';
import { createSmsProvider } from './delivery/sms.js';
import { RelayQueue } from './queue.js';
import { RelayWorker, type Transports } from './worker.js';

export interface RelayRuntime {
  queue: RelayQueue | undefined;
  stop(): Promise<void>;
}

/**
 * The relay's queue and delivery worker, from configuration only (no provider address comes
 * from a request). Without a configured transport there is no queue, and sends answer 503.
 */
export async function startRelay(
  config: RelayConfig,
  databaseUrl: string,
  pool: Pool,
  clock: Clock,
  logger: Logger,
  options: { pollingSeconds?: number; queueConnections?: number; metrics?: Metrics } = {},
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
        : createMailTransport({ smtpUrl: config.mail.smtpUrl, from: config.mail.from, dkim });
  }
  if (config.sms) transports.sms = createSmsProvider(config.sms);
  if (!transports.mail && !transports.sms) {
    logger.info('relay: no mail transport or SMS provider configured; relay sends answer 503');
    return { queue: undefined, stop: async () => undefined };
  }
  const queue = await RelayQueue.open(
    databaseUrl,
    { retryLimit: config.retryLimit, retryDelaySeconds: config.retryDelaySeconds, pollingSeconds: options.pollingSeconds },
    logger,
    options.queueConnections,
  );
  await new RelayWorker(pool, queue, transports, clock, logger, options.metrics).start();
  return {
    queue,
    async stop() {
      await queue.stop();
      transports.mail?.close();
      await transports.sms?.close();
    },
  };
}
