import type { SmsProvider } from './provider.js';
import { createHttpClient, excerpt, jsonObject, retryableStatus } from './http.js';

/** A provider of our own making, or a gateway in front of one: JSON in, bearer token. */
export interface WebhookConfig {
  provider?: 'webhook';
  /** The provider endpoint that takes `POST { to, text, sender?, reference? }`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Sender id or number, when the provider lets the relay choose one. */
  sender?: string;
  /** Deadline for the whole request, 10 s by default. */
  timeoutMs?: number;
}

export function createWebhookProvider(config: WebhookConfig): SmsProvider {
  const http = createHttpClient({ label: 'SMS provider', timeoutMs: config.timeoutMs, secrets: [config.token] });

  return {
    name: 'webhook',
    async send({ to, text, reference }) {
      const { status, body } = await http.post(
        config.url,
        { Authorization: `Bearer ${config.token}`, 'Content-Type': 'application/json' },
        JSON.stringify({ to, text, sender: config.sender, reference }),
      );
      if (status < 200 || status > 299) {
        throw http.error(`SMS provider answered HTTP ${status}${excerpt(body)}`, retryableStatus(status));
      }
      const id = jsonObject(body).id;
      return { providerId: typeof id === 'string' || typeof id === 'number' ? String(id) : null };
    },
    close: () => http.close(),
  };
}
