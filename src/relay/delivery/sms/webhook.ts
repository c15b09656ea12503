import type { SmsProvider } from './provider.js';
import { createHttpClient, excerpt, jsonObject, retryableStatus } from './http.js';
import type { WebhookConfig } from '../../settings.js';

export type { WebhookConfig } from '../../settings.js';

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
