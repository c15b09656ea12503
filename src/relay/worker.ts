import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { serializeError } from '../logging.js';
import type { MailTransport } from './delivery/mail.js';
import type { SmsProvider } from './delivery/sms.js';
import type { Channel } from './policy.js';
import type { ConsumeOptions, DeliveryJob, RelayQueue } from './queue.js';
import type { ClaimedMessage, RelayRepository } from './repository.js';

export interface MailPayload {
  subject: string;
  html: string;
  text: string;
  /** The recipient's display name, if the send gave one. */
  toName?: string;
  /** The sender name from the send's `From` header; the address is always the relay's. */
  senderName?: string;
  /** The parsed Reply-To mailbox: an address, or a name and an address (never raw header text). */
  replyTo?: string | { name: string; address: string };
  headers: { name: string; value: string }[];
}

export interface SmsPayload {
  text: string;
}

export interface Transports {
  mail?: MailTransport;
  sms?: SmsProvider;
}

/** What the worker reports to the process's metrics (kept apart from how they are served). */
export interface DeliveryMetrics {
  relayOutcomes: { inc(labels: { channel: Channel; outcome: string }): void };
  /** Seconds from a send's acceptance (its 200) to its transport taking the message. */
  relayDeliverySeconds: { observe(labels: { channel: Channel; provider: string }, seconds: number): void };
}

/** Waits between attempts to record an outcome while the database is away (about 30 s in all). */
const RECORD_RETRY_MS = [250, 500, 1_000, 2_000, 4_000, 8_000, 16_000];

/**
 * Delivers queued relay messages. A message is claimed (`sending`), handed to its channel's
 * transport, and recorded as `sent` with the provider's id of it; a failed attempt puts it back
 * (`queued`) for the queue's retry, and once its retries are spent (or the provider refuses it
 * outright) it ends `failed` and its charge is given back.
 */
export class RelayWorker {
  constructor(
    private readonly messages: RelayRepository,
    private readonly queue: RelayQueue,
    private readonly transports: Transports,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly metrics?: DeliveryMetrics,
  ) {}

  /** Starts the configured channels' deliveries in this process. */
  start(options: { concurrency: Record<Channel, number>; pollSeconds: number }): void {
    for (const channel of ['mail', 'sms'] as const) {
      if (!this.transports[channel]) continue;
      const consume: ConsumeOptions = { concurrency: options.concurrency[channel], pollSeconds: options.pollSeconds };
      this.queue.consume(channel, consume, (job) => this.deliver(job));
    }
  }

  /** The name of the transport a channel's messages go through (`smtp`, `twilio`, …). */
  provider(channel: Channel): string {
    return (channel === 'mail' ? this.transports.mail?.name : this.transports.sms?.name) ?? 'none';
  }

  private async deliver(job: DeliveryJob): Promise<void> {
    const message = await this.messages.claim(job.data.messageId, this.clock.now());
    // Sent, failed, or claimed by no one any more: nothing to do (a job handed out twice).
    if (!message) return;
    const provider = this.provider(message.channel);
    let providerId: string | null;
    try {
      providerId = await this.send(message);
    } catch (err) {
      const error = err as Error & { retryable?: boolean };
      const final = error.retryable === false || job.retryCount >= job.retryLimit;
      if (!final) {
        await this.record(message.id, () => this.messages.requeue(message.id, error.message));
        this.metrics?.relayOutcomes.inc({ channel: message.channel, outcome: 'retried' });
        this.logger.warn({ messageId: message.id, attempt: job.retryCount + 1, provider, err: error.message }, 'relay delivery failed; will retry');
        throw err;
      }
      await this.record(message.id, () => this.messages.fail(message, error.message, this.clock.now()));
      this.metrics?.relayOutcomes.inc({ channel: message.channel, outcome: 'failed' });
      this.logger.error({ messageId: message.id, provider, err: error.message }, 'relay message failed');
      return;
    }
    // The transport has the message: from here on it must be recorded, never sent again.
    const sentAt = this.clock.now();
    await this.record(message.id, () => this.messages.markSent(message.id, sentAt, provider, providerId));
    const seconds = Math.max(0, (sentAt.getTime() - new Date(message.createdAt).getTime()) / 1000);
    this.metrics?.relayDeliverySeconds.observe({ channel: message.channel, provider }, seconds);
    this.metrics?.relayOutcomes.inc({ channel: message.channel, outcome: 'sent' });
    this.logger.info({ messageId: message.id, channel: message.channel, provider, providerId }, 'relay message sent');
  }

  /** Hands the message to its transport; resolves with the provider's id of it. */
  private async send(message: ClaimedMessage): Promise<string | null> {
    if (message.channel === 'mail') {
      const p = message.payload as MailPayload;
      if (!this.transports.mail) throw Object.assign(new Error('no SMTP transport is configured'), { retryable: false });
      const sent = await this.transports.mail.send({
        to: message.recipient,
        toName: p.toName,
        senderName: p.senderName,
        subject: p.subject,
        html: p.html || undefined,
        text: p.text || undefined,
        replyTo: p.replyTo,
        headers: p.headers,
      });
      return sent.messageId;
    }
    if (!this.transports.sms) throw Object.assign(new Error('no SMS provider is configured'), { retryable: false });
    const sent = await this.transports.sms.send({ to: message.recipient, text: (message.payload as SmsPayload).text, reference: String(message.id) });
    return sent.providerId;
  }

  /**
   * Writes an outcome, trying again while the database is away: an outcome that is lost would
   * have the message sent again (or its charge kept). After about 30 s it gives up; the job then
   * comes back once it expires, and the message's status decides what happens to it.
   */
  private async record(messageId: number, write: () => Promise<unknown>): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await write();
        return;
      } catch (err) {
        const wait = RECORD_RETRY_MS[attempt];
        if (wait === undefined) {
          this.logger.error({ messageId, err: serializeError(err) }, 'relay outcome could not be recorded');
          throw err;
        }
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }
}
