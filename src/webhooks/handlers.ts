import { sendData } from '../http/envelope.js';
import type { Handlers } from '../http/types.js';
import type { WebhookService } from './service.js';

/** The webhooks of the key's account: subscribe, list, delete, send a test event. Uncharged. */
export function webhookHandlers(webhooks: WebhookService): Handlers {
  return {
    async createWebhook(req, res) {
      const data = await webhooks.subscribe(res.locals.caller!, req.body);
      sendData(res, data, 'The webhook was created. Store its secret now; it is not shown again.', 201);
    },
    async listWebhooks(_req, res) {
      sendData(res, await webhooks.list(res.locals.caller!));
    },
    async deleteWebhook(req, res) {
      await webhooks.remove(res.locals.caller!, req.params.id);
      res.status(204).end();
    },
    async testWebhook(req, res) {
      sendData(res, await webhooks.test(res.locals.caller!, req.params.id));
    },
  };
}
