import { createOutboxProvider, type OutboxConfig } from './sms/outbox.js';
import type { ReceiptRequest, ReceiptVerdict } from './sms/receipts.js';
import { createPlivoProvider, type PlivoConfig } from './sms/plivo.js';
import { createSnsProvider, type SnsConfig } from './sms/sns.js';
import { createTwilioProvider, type TwilioConfig } from './sms/twilio.js';
import { createVonageProvider, type VonageConfig } from './sms/vonage.js';
import { createWebhookProvider, type WebhookConfig } from './sms/webhook.js';

export interface SmsProvider {
  /** The provider's id (`twilio`, `sns`, …), e.g. for a metrics label. */
  readonly name: string;
  /**
   * Sends one SMS; fails with a {@link DeliveryError} whose `retryable` says whether the same
   * message may get through later. `providerId` is the provider's id of the message, which its
   * delivery receipts name.
   */
  send(sms: { to: string; text: string; reference?: string }): Promise<{ providerId: string | null }>;
  /** Closes kept-alive connections; the provider sends nothing afterwards. */
  close(): Promise<void>;
  /**
   * Where the provider posts delivery receipts, and how one is verified and read; only for a
   * provider that posts them and was given a receipt URL (RELAY_RECEIPT_BASE_URL).
   */
  readonly receipts?: ReceiptEndpoint;
}

export interface ReceiptEndpoint {
  /** The public URL the provider was given, as it signs it (`…/webhooks/sms/<provider>`). */
  url: string;
  /** HTTP methods the provider uses for its receipts. */
  methods: readonly ('GET' | 'POST')[];
  verify(request: ReceiptRequest, now: Date): ReceiptVerdict;
}

/** One provider's settings, by `provider`; without one, the generic webhook of old. */
export type SmsConfig = WebhookConfig | TwilioConfig | VonageConfig | PlivoConfig | SnsConfig | OutboxConfig;

export function createSmsProvider(config: SmsConfig): SmsProvider {
  switch (config.provider) {
    case undefined:
    case 'webhook':
      return createWebhookProvider(config);
    case 'twilio':
      return createTwilioProvider(config);
    case 'vonage':
      return createVonageProvider(config);
    case 'plivo':
      return createPlivoProvider(config);
    case 'sns':
      return createSnsProvider(config);
    case 'outbox':
      return createOutboxProvider(config);
  }
}
