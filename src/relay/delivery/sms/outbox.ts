import { DeliveryError } from '../errors.js';
import { outboxFileName, writeOutboxFile } from '../outbox.js';
import type { SmsProvider } from './provider.js';
import type { OutboxConfig } from '../../settings.js';

export type { OutboxConfig } from '../../settings.js';

export function createOutboxProvider(config: OutboxConfig): SmsProvider {
  return {
    name: 'outbox',
    async send({ to, text, reference }) {
      const at = new Date();
      const name = outboxFileName(at, reference, 'json');
      const sms = { to, text, reference, createdAt: at.toISOString() };
      try {
        await writeOutboxFile(config.dir, name, `${JSON.stringify(sms, null, 2)}\n`);
      } catch (err) {
        // A full or unwritable disk may be fixed while the message waits for its retry.
        throw new DeliveryError(`SMS outbox could not write ${name}: ${(err as Error).message}`, true, { cause: err });
      }
      return { providerId: name.slice(0, -'.json'.length) };
    },
    async close() {},
  };
}
