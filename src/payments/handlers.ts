import type { Handlers } from '../http/types.js';
import { rawBodyOf, webhookRefusal } from '../http/webhook-bodies.js';
import type { StripeEvents } from './stripe.js';

/** Stripe's webhook (openapi/internal/), its signature checked on the raw body. */
export function stripeHandlers(events: StripeEvents): Handlers {
  return {
    async receiveStripeEvent(req, res) {
      const outcome = await events.receive(rawBodyOf(res), req.header('stripe-signature') ?? '');
      if (!outcome.ok) throw webhookRefusal(outcome);
      res.json(outcome.body);
    },
  };
}
