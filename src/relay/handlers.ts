import type { Handlers, ResponseOf } from '../http/types.js';
import type { Request, Response } from 'express';
import { rawBodyOf, webhookRefusal } from '../http/webhook-bodies.js';
import type { PaymentEvents } from './payments.js';
import type { SmsReceipts } from './receipts.js';
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

/**
 * The relay's inbound webhooks (openapi/internal/): the payment provider's bundle events and
 * the SMS provider's delivery receipts, each checked on its raw body.
 */
export function relayWebhookHandlers(payments: PaymentEvents, receipts: SmsReceipts): Handlers {
  const receipt = async (req: Request<{ provider: string }>, res: Response) => {
    const at = req.originalUrl.indexOf('?');
    const outcome = await receipts.receive({
      provider: req.params.provider,
      method: req.method,
      query: at < 0 ? '' : req.originalUrl.slice(at),
      headers: req.headers,
      body: rawBodyOf(res).toString('utf8'),
    });
    if (!outcome.ok) throw webhookRefusal(outcome);
    res.json(outcome);
  };
  return {
    async receivePaymentEvent(req, res) {
      const outcome = await payments.receive(rawBodyOf(res).toString('utf8'), req.header('x-signature'));
      if (!outcome.ok) throw webhookRefusal(outcome);
      res.json(outcome);
    },
    receiveSmsReceipt: receipt,
    receiveSmsReceiptQuery: receipt,
  };
}
