export type { ReceiptEndpoint, SmsProvider } from './sms/provider.js';
import { createOutboxProvider, type OutboxConfig } from './sms/outbox.js';
import type { SmsProvider } from './sms/provider.js';
import { createPlivoProvider, type PlivoConfig } from './sms/plivo.js';
import { createSnsProvider, type SnsConfig } from './sms/sns.js';
import { createTwilioProvider, type TwilioConfig } from './sms/twilio.js';
import { createVonageProvider, type VonageConfig } from './sms/vonage.js';
import { createWebhookProvider, type WebhookConfig } from './sms/webhook.js';

/** One provider's settings, by `provider`; without one, the generic webhook of old. */
export type { SmsConfig } from '../settings.js';
import type { SmsConfig } from '../settings.js';

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
