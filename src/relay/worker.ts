import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Metrics } from '../http/metrics.js';
import { transaction, type Pool } from '../db/pool.js';
import type { MailTransport } from './delivery/mail.js';
import type { SmsProvider } from './delivery/sms.js';
import type { Channel } from './policy.js';
import type { DeliveryJob, RelayQueue } from './queue.js';

interface StoredMessage {
  id: number;
  account_id: number;
  channel: Channel;
  period_start: Date;
  funded_by: 'inclusive' | 'bundle';
  status: string;
  recipient: string;
  payload: MailPayload | SmsPayload;
}

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

/**
 * Delivers queued relay messages. Each ends as `sent` or, once its retries are spent (or the
 * provider refuses it outright), as `failed`; a failed message gives its charge back.
 */
export class RelayWorker {
  constructor(
    private readonly pool: Pool,
    private readonly queue: RelayQueue,
    private readonly transports: Transports,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly metrics?: Metrics,
  ) {}

  async start(): Promise<void> {
    if (this.transports.mail) await this.queue.work('mail', (job) => this.deliver(job));
    if (this.transports.sms) await this.queue.work('sms', (job) => this.deliver(job));
  }

  private async deliver(job: DeliveryJob): Promise<void> {
    const { rows } = await this.pool.query<StoredMessage>(
      `select id, account_id, channel, period_start, funded_by, status, recipient, payload
         from relay_messages where id = $1`,
      [job.data.messageId],
    );
    const message = rows[0];
    if (!message || message.status !== 'queued') return;
    try {
      await this.send(message);
      await this.pool.query(
        `update relay_messages set status = 'sent', attempts = attempts + 1, finished_at = $2, last_error = null
          where id = $1 and status = 'queued'`,
        [message.id, this.clock.now()],
      );
      this.metrics?.relayOutcomes.inc({ channel: message.channel, outcome: 'sent' });
      this.logger.info({ messageId: message.id, channel: message.channel }, 'relay message sent');
    } catch (err) {
      const error = err as Error & { retryable?: boolean };
      const final = error.retryable === false || job.retryCount >= job.retryLimit;
      if (!final) {
        await this.pool.query('update relay_messages set attempts = attempts + 1, last_error = $2 where id = $1', [
          message.id,
          error.message.slice(0, 500),
        ]);
        this.metrics?.relayOutcomes.inc({ channel: message.channel, outcome: 'retried' });
        this.logger.warn({ messageId: message.id, attempt: job.retryCount + 1, err: error.message }, 'relay delivery failed; will retry');
        throw err;
      }
      await this.fail(message, error.message);
      this.metrics?.relayOutcomes.inc({ channel: message.channel, outcome: 'failed' });
      this.logger.error({ messageId: message.id, err: error.message }, 'relay message failed');
    }
  }

  private async send(message: StoredMessage): Promise<void> {
    if (message.channel === 'mail') {
      const p = message.payload as MailPayload;
      if (!this.transports.mail) throw Object.assign(new Error('no SMTP transport is configured'), { retryable: false });
      await this.transports.mail.send({
        to: message.recipient,
        toName: p.toName,
        senderName: p.senderName,
        subject: p.subject,
        html: p.html || undefined,
        text: p.text || undefined,
        replyTo: p.replyTo,
        headers: p.headers,
      });
    } else {
      if (!this.transports.sms) throw Object.assign(new Error('no SMS provider is configured'), { retryable: false });
      await this.transports.sms.send({ to: message.recipient, text: (message.payload as SmsPayload).text, reference: String(message.id) });
    }
  }

  /** Marks the message failed and gives its charge back, once. */
  private async fail(message: StoredMessage, reason: string): Promise<void> {
    await transaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `update relay_messages set status = 'failed', attempts = attempts + 1, last_error = $2, finished_at = $3
          where id = $1 and status = 'queued'`,
        [message.id, reason.slice(0, 500), this.clock.now()],
      );
      if (rowCount !== 1) return;
      if (message.funded_by === 'inclusive') {
        await client.query(
          `update relay_usage set inclusive_used = greatest(0, inclusive_used - 1)
            where account_id = $1 and channel = $2 and period_start = $3`,
          [message.account_id, message.channel, message.period_start],
        );
      } else {
        await client.query(
          `insert into bundle_ledger (account_id, channel, kind, amount, message_id, created_at)
           values ($1, $2, 'release', 1, $3, $4)`,
          [message.account_id, message.channel, message.id, this.clock.now()],
        );
      }
    });
  }
}
