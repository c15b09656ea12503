import type { Handlers, ResponseOf } from '../http/types.js';
import type { MailInput, RelayService, SmsInput } from './service.js';

/**
 * The relay answers without the envelope. Its request bodies reach the handlers checked by the
 * validator, but typed by hand: openapi-typescript turns their `anyOf` (a recipient under its
 * current or its earlier name) into `unknown`.
 */
export function relayHandlers(relay: RelayService): Handlers {
  return {
    async getRelayQuota(_req, res) {
      const body: ResponseOf<'getRelayQuota'> = await relay.quota(res.locals.caller!);
      res.json(body);
    },
    async sendRelayMail(req, res) {
      const body: ResponseOf<'sendRelayMail'> = await relay.sendMail(res.locals.caller!, req.body as MailInput);
      if (body.ignored_headers) req.log?.info({ queueId: body.queue_id, ignoredHeaders: body.ignored_headers }, 'relay mail: headers left out');
      res.json(body);
    },
    async sendRelaySms(req, res) {
      const body: ResponseOf<'sendRelaySms'> = await relay.sendSms(res.locals.caller!, req.body as SmsInput);
      res.json(body);
    },
  };
}
