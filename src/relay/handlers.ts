import type { Handlers, ResponseOf } from '../http/types.js';
import type { Response } from 'express';
import { relayTierOf, type RelayTier } from './policy.js';
import type { MailInput, RelayService, SmsInput } from './service.js';

/**
 * The caller's relay tier. The guard (x-access.feature: relay) has refused a role without one
 * with 403, so eligibility is decided once, there; here it is only looked up.
 */
function tierOf(res: Response): RelayTier {
  const tier = relayTierOf(res.locals.caller!.role);
  if (!tier) throw new Error(`the guard admitted the ${res.locals.caller!.role} role to the relay, which has no relay tier`);
  return tier;
}

/**
 * The relay answers without the envelope. Its request bodies reach the handlers checked by the
 * validator, but typed by hand: openapi-typescript turns their `anyOf` (a recipient under its
 * current or its earlier name) into `unknown`.
 */
export function relayHandlers(relay: RelayService): Handlers {
  return {
    async getRelayQuota(_req, res) {
      const body: ResponseOf<'getRelayQuota'> = await relay.quota(res.locals.caller!, tierOf(res));
      res.json(body);
    },
    async sendRelayMail(req, res) {
      const body: ResponseOf<'sendRelayMail'> = await relay.sendMail(res.locals.caller!, tierOf(res), req.body as MailInput);
      if (body.ignored_headers) req.log?.info({ queueId: body.queue_id, ignoredHeaders: body.ignored_headers }, 'relay mail: headers left out');
      res.json(body);
    },
    async sendRelaySms(req, res) {
      const body: ResponseOf<'sendRelaySms'> = await relay.sendSms(res.locals.caller!, tierOf(res), req.body as SmsInput);
      res.json(body);
    },
  };
}
