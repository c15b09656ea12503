import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Pool } from '../db/pool.js';
import type { BundleLedger } from '../relay/ledger.repository.js';
import { CheckoutSessions } from './checkouts.repository.js';
import { stripeHandlers } from './handlers.js';
import type { StripeConfig } from './settings.js';
import { StripeEvents, StripePayments } from './stripe.js';

/**
 * Bundles sold through Stripe Checkout: the client (undefined unless STRIPE_* is configured),
 * which the checkout pages use, and its webhook, which credits the relay's ledger.
 */
export function paymentsModule(deps: {
  pool: Pool;
  clock: Clock;
  logger: Logger;
  /** STRIPE_*; undefined when Stripe is not configured. */
  settings: StripeConfig | undefined;
  /** How old a signed event may be (PAYMENT_WEBHOOK_TOLERANCE_SECONDS). */
  toleranceSeconds: number;
  /** PUBLIC_URL: where Checkout sends the buyer back. */
  publicUrl: () => string | undefined;
  ledger: BundleLedger;
}) {
  const { pool, clock, logger, settings } = deps;
  const stripe = settings && new StripePayments(settings, deps.publicUrl, new CheckoutSessions(pool), clock);
  return {
    stripe,
    handlers: () => stripeHandlers(new StripeEvents(stripe, deps.ledger, logger, clock, deps.toleranceSeconds)),
  };
}
