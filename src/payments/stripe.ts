import express, { type Router } from 'express';
import Stripe from 'stripe';
import type { Logger } from 'pino';
import type { StripeConfig } from '../config.js';
import { BundleError, type BundleLedger } from '../relay/ledger.js';
import { bundleOf, type Bundle } from '../relay/policy.js';

/**
 * Bundles bought through Stripe Checkout (the official SDK). A Checkout Session carries the
 * account and the bundle in its metadata (and its PaymentIntent's, so a refund can find them);
 * Stripe's signed webhook events are mapped onto the bundle ledger:
 *
 * - `checkout.session.completed` with `payment_status: paid` credits the bundle, and
 *   `checkout.session.async_payment_succeeded` does for delayed payment methods (the same
 *   session's `completed` event was then unpaid and credited nothing);
 * - `charge.refunded` takes the bundle back once the charge is refunded in full (`refunded`):
 *   it is the one event that says so, where `refund.*` events would have us add up partial
 *   refunds. A partial refund is a goodwill gesture and leaves the credits.
 *
 * The event id is the ledger's event id, so an event Stripe delivers twice is applied once, and
 * the Checkout Session id is the purchase's id, so a session is credited once even when two
 * different events say it was paid. A paid session the account can no longer take (its role
 * holds no bundles) is recorded as such (`bundle_purchases`, and `bundle_purchase_unapplied` in
 * the account's audit trail, with a warning in the log), and its refund takes nothing back.
 */
export interface BundleForSale extends Bundle {
  bundleId: string;
  priceId: string;
}

const ACCOUNT_ID = /^[1-9][0-9]{0,9}$/;

export class StripePayments {
  readonly client: Stripe;

  constructor(
    private readonly config: StripeConfig,
    private readonly publicUrl: () => string | undefined,
  ) {
    const base = config.apiBase ? new URL(config.apiBase) : undefined;
    this.client = new Stripe(config.secretKey, {
      maxNetworkRetries: 2,
      timeout: 15_000,
      telemetry: false,
      ...(base && {
        host: base.hostname.replace(/^\[|\]$/g, ''),
        port: base.port || (base.protocol === 'https:' ? 443 : 80),
        protocol: base.protocol === 'https:' ? 'https' : 'http',
      }),
    });
  }

  get webhookSecret(): string {
    return this.config.webhookSecret;
  }

  /** The bundles with a configured price. */
  forSale(): BundleForSale[] {
    return Object.entries(this.config.prices).flatMap(([bundleId, priceId]) => {
      const bundle = bundleOf(bundleId);
      return bundle ? [{ bundleId, priceId, ...bundle }] : [];
    });
  }

  /** A Checkout Session for one bundle; returns the page to send the buyer to. */
  async checkout(account: { id: number; email: string | null }, bundleId: string): Promise<string> {
    const priceId = Object.hasOwn(this.config.prices, bundleId) ? this.config.prices[bundleId] : undefined;
    const origin = this.publicUrl();
    if (!priceId || !origin) throw new BundleError('unknown_bundle', `bundle ${bundleId} is not for sale here`);
    const metadata = { account_id: String(account.id), bundle_id: bundleId };
    const session = await this.client.checkout.sessions.create({
      mode: 'payment',
      line_items: [{ price: priceId, quantity: 1 }],
      client_reference_id: String(account.id),
      customer_email: account.email ?? undefined,
      metadata,
      payment_intent_data: { metadata },
      success_url: `${origin}/account?purchase=done`,
      cancel_url: `${origin}/account?purchase=cancelled`,
    });
    if (!session.url) throw new Error('Stripe returned a Checkout Session without a URL');
    return session.url;
  }

  /** Account and bundle from metadata we set ourselves; undefined when they are not ours. */
  static target(metadata: Stripe.Metadata | null | undefined): { accountId: number; bundleId: string } | undefined {
    const accountId = metadata?.account_id;
    const bundleId = metadata?.bundle_id;
    if (!accountId || !ACCOUNT_ID.test(accountId) || !bundleId || !bundleOf(bundleId)) return undefined;
    return { accountId: Number(accountId), bundleId };
  }

  /** The target of a refunded charge: its own metadata, else its PaymentIntent's. */
  async refundTarget(charge: Stripe.Charge): Promise<{ accountId: number; bundleId: string } | undefined> {
    const own = StripePayments.target(charge.metadata);
    if (own || !charge.payment_intent) return own;
    const intentId = typeof charge.payment_intent === 'string' ? charge.payment_intent : charge.payment_intent.id;
    return StripePayments.target((await this.client.paymentIntents.retrieve(intentId)).metadata);
  }
}

type Outcome = { status: number; body: Record<string, unknown> };

/** `POST /webhooks/stripe`: Stripe's signature scheme (`Stripe-Signature`), then the ledger. */
export function stripeWebhookRouter(stripe: StripePayments, ledger: BundleLedger, logger: Logger): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  router.post('/webhooks/stripe', express.raw({ type: 'application/json', limit: '256kb' }), async (req, res) => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    let event: Stripe.Event;
    try {
      event = stripe.client.webhooks.constructEvent(raw, req.header('stripe-signature') ?? '', stripe.webhookSecret, 300);
    } catch {
      res.status(400).json({ ok: false, code: 'invalid_signature', message: 'The Stripe-Signature header does not match the body, or the event is stale.' });
      return;
    }
    const outcome = await handle(stripe, ledger, event, logger);
    res.status(outcome.status).json(outcome.body);
  });
  return router;
}

/** An id Stripe gives as a string or as the expanded object. */
const idOf = (value: string | { id: string } | null | undefined): string | undefined => (typeof value === 'string' ? value : value?.id);

async function handle(stripe: StripePayments, ledger: BundleLedger, event: Stripe.Event, logger: Logger): Promise<Outcome> {
  let kind: 'purchase' | 'refund';
  let target: { accountId: number; bundleId: string } | undefined;
  let purchaseRef: string | undefined;
  let paymentIntent: string | undefined;
  switch (event.type) {
    case 'checkout.session.completed':
    case 'checkout.session.async_payment_succeeded': {
      const session = event.data.object;
      if (session.payment_status !== 'paid') return { status: 200, body: { ok: true, ignored: 'not paid yet' } };
      kind = 'purchase';
      target = StripePayments.target(session.metadata);
      // A session is credited once, whichever of its events (completed, async success) comes.
      purchaseRef = session.id ? `stripe:${session.id}` : undefined;
      paymentIntent = idOf(session.payment_intent);
      break;
    }
    case 'charge.refunded': {
      const charge = event.data.object;
      if (!charge.refunded) return { status: 200, body: { ok: true, ignored: 'partial refund' } };
      kind = 'refund';
      target = await stripe.refundTarget(charge);
      paymentIntent = idOf(charge.payment_intent);
      break;
    }
    default:
      return { status: 200, body: { ok: true, ignored: event.type } };
  }
  // Not one of our sessions (another product on the same Stripe account): nothing to do.
  if (!target) return { status: 200, body: { ok: true, ignored: 'no bundle in metadata' } };
  try {
    const applied = await ledger.apply({
      eventId: event.id,
      kind,
      ...target,
      actor: 'stripe',
      purchaseRef,
      paymentRef: paymentIntent && `stripe:${paymentIntent}`,
    });
    if (applied.neverCredited) {
      logger.warn({ eventId: event.id, type: event.type, accountId: target.accountId, paymentIntent }, 'Stripe refund of a purchase that was never credited: nothing taken back');
      return { status: 200, body: { ok: true, duplicate: false, ignored: 'purchase never credited', channel: applied.channel, balance: applied.balance } };
    }
    return { status: 200, body: { ok: true, duplicate: !applied.applied, channel: applied.channel, balance: applied.balance } };
  } catch (err) {
    if (!(err instanceof BundleError)) throw err;
    // Retrying will not help: say so to Stripe (2xx ends its retries) and to the operator. A paid
    // purchase is on record (bundle_purchases, and the account's audit trail) for the operator
    // to credit by hand or refund.
    logger.warn(
      { eventId: event.id, type: event.type, accountId: target.accountId, bundleId: target.bundleId, purchase: purchaseRef, code: err.code },
      kind === 'purchase' ? 'paid Stripe purchase could not be credited: recorded as bundle_purchase_unapplied' : 'Stripe event could not be applied to the bundle ledger',
    );
    return { status: 200, body: { ok: false, code: err.code, message: err.message } };
  }
}
