import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Pool } from '../db/pool.js';
import type { BundleLedger } from '../relay/ledger.repository.js';
import { CheckoutSessions } from './checkouts.repository.js';
import { stripeHandlers } from './handlers.js';
import { StripeEvents, StripePayments } from './stripe.js';

/**
 * Bundles sold through Stripe Checkout: the client (undefined unless STRIPE_* is configured),
 * which the checkout pages use, and its webhook, which credits the relay's ledger.
 */
export function paymentsModule(deps: {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  config: Pick<Config, 'stripe' | 'payments' | 'web'>;
  ledger: BundleLedger;
}) {
  const { pool, clock, logger, config } = deps;
  const stripe = config.stripe && new StripePayments(config.stripe, () => config.web.publicUrl, new CheckoutSessions(pool), clock);
  return {
    stripe,
    handlers: () => stripeHandlers(new StripeEvents(stripe, deps.ledger, logger, clock, config.payments.toleranceSeconds)),
  };
}
