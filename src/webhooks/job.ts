import type { Logger } from 'pino';
import { incidentLogger } from '../logging.js';
import type { WebhookService } from './service.js';

/**
 * Runs the webhooks' dispatcher in this process every `intervalMs`: the events of new
 * regenerations made, the due deliveries attempted. Several processes may run it together:
 * deliveries are claimed with SKIP LOCKED and a lease, and a regeneration's events are made by
 * whichever process moves the endpoint's cursor.
 */
export class WebhookDispatcher {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly webhooks: WebhookService,
    private readonly logger: Logger,
    private readonly intervalMs = 5_000,
  ) {}

  start(): void {
    const incident = incidentLogger(this.logger, 5 * 60_000);
    this.timer = setInterval(() => {
      this.running ??= this.webhooks
        .tick()
        .catch((err: unknown) => incident('error', 'webhooks', err, 'webhook dispatch failed; the next pass tries again'))
        .finally(() => (this.running = undefined));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }
}
