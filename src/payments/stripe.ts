import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
import type Stripe from 'stripe';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { StripeConfig } from './settings.js';
import { withinTolerance } from '../relay/payments.js';
import { BundleError, type BundleLedger } from '../relay/ledger.repository.js';
import { bundleOf, type Bundle } from '../relay/policy.js';
import type { CheckoutSessions } from './checkouts.repository.js';

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
 *
 * - `charge.dispute.created` (a chargeback, or an inquiry) takes the bundle back at once: Stripe
 *   withdraws the disputed amount when the dispute opens, and a buyer could otherwise spend the
 *   credits through the weeks a dispute lasts. `charge.dispute.closed` as `won` (or an inquiry
 *   closed without a chargeback, `warning_closed`) gives them back; `lost` leaves them taken.
 *   The purchase is found by its PaymentIntent, as a refund's is; each movement happens once.
 *
 * The buy button reuses the account's open Checkout Session of a bundle for its lifetime
 * (`checkout_sessions`): pressed again, or many times at once, it makes one session at Stripe.
 */
export interface BundleForSale extends Bundle {
  bundleId: string;
  priceId: string;
}

const ACCOUNT_ID = /^[1-9][0-9]{0,9}$/;

/**
 * A Checkout Session lives this long (Stripe takes 30 minutes to 24 hours); the buy button reuses
 * it until it has less than REUSE_MARGIN left, so that a buyer is not sent to a page that expires
 * while they type. Making one may take up to CLAIM (the SDK's timeout, with its retries); when
 * Stripe fails, the next try waits FAILURE_PAUSE. A press that finds another request making the
 * session waits for its page up to WAIT_POLLS x WAIT_POLL_MS.
 */
export const CHECKOUT_TIMES = {
  sessionMs: 60 * 60_000,
  reuseMarginMs: 10 * 60_000,
  claimMs: 60_000,
  failurePauseMs: 10_000,
  waitPollMs: 100,
  waitPolls: 150,
} as const;

/** Another request is making this account's session, or Stripe just failed to: try again shortly. */
export class CheckoutPending extends Error {}

/**
 * The SDK is loaded when a StripePayments is made (STRIPE_SECRET_KEY set), not by every process
 * that imports the web layer: it takes about 140 ms to load, which every server start, test file
 * and CLI command paid whether Stripe was configured or not.
 */
const require = createRequire(import.meta.url);

export class StripePayments {
  readonly client: Stripe;

  constructor(
    private readonly config: StripeConfig,
    private readonly publicUrl: () => string | undefined,
    readonly sessions: CheckoutSessions,
    private readonly clock: Clock,
  ) {
    const base = config.apiBase ? new URL(config.apiBase) : undefined;
    const StripeSdk = require('stripe') as typeof Stripe;
    this.client = new StripeSdk(config.secretKey, {
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

  /**
   * The Checkout page for one bundle: the account's open session of it while it has time left,
   * else a new one. One request at a time (in any process) makes it; the others wait for it.
   */
  async checkout(account: { id: number; email: string | null }, bundleId: string): Promise<string> {
    const priceId = Object.hasOwn(this.config.prices, bundleId) ? this.config.prices[bundleId] : undefined;
    const origin = this.publicUrl();
    if (!priceId || !origin) throw new BundleError('unknown_bundle', `bundle ${bundleId} is not for sale here`);
    const at = (now: Date, ms: number) => new Date(now.getTime() + ms);
    for (let poll = 0; poll <= CHECKOUT_TIMES.waitPolls; poll++) {
      const now = this.clock.now();
      const state = await this.sessions.open(account.id, bundleId, now, at(now, CHECKOUT_TIMES.reuseMarginMs), at(now, CHECKOUT_TIMES.claimMs));
      if ('url' in state) return state.url;
      if ('claim' in state) return this.create(account, bundleId, priceId, origin, state.claim, now);
      if ('retryAt' in state) throw new CheckoutPending(`Stripe failed to make a Checkout Session of bundle ${bundleId}; the next try is at ${state.retryAt.toISOString()}`);
      await sleep(CHECKOUT_TIMES.waitPollMs);
    }
    throw new CheckoutPending(`the Checkout Session of bundle ${bundleId} is still being made`);
  }

  private async create(account: { id: number; email: string | null }, bundleId: string, priceId: string, origin: string, claim: string, now: Date): Promise<string> {
    const metadata = { account_id: String(account.id), bundle_id: bundleId };
    const expiresAt = new Date(now.getTime() + CHECKOUT_TIMES.sessionMs);
    let session: Stripe.Checkout.Session;
    try {
      session = await this.client.checkout.sessions.create({
        mode: 'payment',
        line_items: [{ price: priceId, quantity: 1 }],
        client_reference_id: String(account.id),
        customer_email: account.email ?? undefined,
        metadata,
        payment_intent_data: { metadata },
        success_url: `${origin}/account?purchase=done`,
        cancel_url: `${origin}/account?purchase=cancelled`,
        expires_at: Math.floor(expiresAt.getTime() / 1000),
      });
      if (!session.url) throw new Error('Stripe returned a Checkout Session without a URL');
    } catch (err) {
      await this.sessions.failed(claim, new Date(this.clock.now().getTime() + CHECKOUT_TIMES.failurePauseMs));
      throw err;
    }
    await this.sessions.made(claim, session.id, session.url, typeof session.expires_at === 'number' ? new Date(session.expires_at * 1000) : expiresAt);
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

/** The `t=` of a Stripe-Signature header, when it has exactly one. */
function signatureTime(header: string): number | undefined {
  const stamps = header.split(',').filter((part) => part.trim().startsWith('t='));
  return stamps.length === 1 ? Number(stamps[0]!.trim().slice(2)) : undefined;
}

export type StripeOutcome = { ok: true; body: Outcome['body'] } | { ok: false; status: 400 | 404; code: string; message: string };

/**
 * `POST /webhooks/stripe` (openapi/internal/): Stripe's signature scheme (`Stripe-Signature`)
 * on the raw body as it came, then the ledger. The SDK checks the signature and the event's
 * age; its time is also refused when it lies more than the tolerance
 * (PAYMENT_WEBHOOK_TOLERANCE_SECONDS) in the future, as /webhooks/payments does. Without Stripe
 * configured (no StripePayments) the webhook does not exist.
 */
export class StripeEvents {
  constructor(
    private readonly stripe: StripePayments | undefined,
    private readonly ledger: BundleLedger,
    private readonly logger: Logger,
    private readonly clock: Clock,
    private readonly toleranceSeconds: number,
  ) {}

  async receive(raw: Buffer, header: string): Promise<StripeOutcome> {
    const stripe = this.stripe;
    if (!stripe) return { ok: false, status: 404, code: 'not_found', message: 'Stripe is not configured on this server (STRIPE_SECRET_KEY).' };
    const now = this.clock.now();
    let event: Stripe.Event;
    try {
      event = stripe.client.webhooks.constructEvent(raw, header, stripe.webhookSecret, this.toleranceSeconds, undefined, now.getTime());
    } catch {
      return { ok: false, status: 400, code: 'invalid_signature', message: 'The Stripe-Signature header does not match the body, or the event is stale.' };
    }
    const signedAt = signatureTime(header);
    if (signedAt === undefined || !withinTolerance(signedAt, now, this.toleranceSeconds)) {
      return { ok: false, status: 400, code: 'stale_event', message: `The event was signed more than ${this.toleranceSeconds} seconds away from now.` };
    }
    return { ok: true, body: (await handle(stripe, this.ledger, event, this.logger)).body };
  }
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
      // Completed, paid or not: the buy button makes a new session from now on.
      if (session.id) await stripe.sessions.forget(session.id);
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
    case 'checkout.session.expired':
      if (event.data.object.id) await stripe.sessions.forget(event.data.object.id);
      return { status: 200, body: { ok: true, ignored: event.type } };
    case 'charge.dispute.created':
    case 'charge.dispute.closed':
      return dispute(ledger, event.id, event.type, event.data.object, logger);
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
    if (applied.heldByDispute) {
      return { status: 200, body: { ok: true, duplicate: false, ignored: 'taken back by its dispute', channel: applied.channel, balance: applied.balance } };
    }
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

/**
 * A dispute of a bundle's payment: opened, its credits are taken back; closed as won (or an
 * inquiry closed without a chargeback), they are given back; lost, they stay taken back.
 */
async function dispute(ledger: BundleLedger, eventId: string, type: 'charge.dispute.created' | 'charge.dispute.closed', disputed: Stripe.Dispute, logger: Logger): Promise<Outcome> {
  let phase: 'opened' | 'won';
  if (type === 'charge.dispute.created') phase = 'opened';
  else if (disputed.status === 'won' || disputed.status === 'warning_closed') phase = 'won';
  else return { status: 200, body: { ok: true, ignored: `dispute ${disputed.status}` } };
  const paymentIntent = idOf(disputed.payment_intent);
  const applied = paymentIntent
    ? await ledger.dispute({ eventId, phase, paymentRef: `stripe:${paymentIntent}`, disputeRef: `stripe:${disputed.id}`, actor: 'stripe' })
    : undefined;
  if (!applied) {
    logger.warn({ eventId, type, dispute: disputed.id, paymentIntent }, 'Stripe dispute of a payment with no bundle purchase on record: nothing changed');
    return { status: 200, body: { ok: true, ignored: 'no purchase on record' } };
  }
  const { channel, balance } = applied;
  switch (applied.unchanged) {
    case undefined:
      logger.warn(
        { eventId, type, dispute: disputed.id, accountId: applied.accountId, paymentIntent },
        phase === 'opened' ? 'Stripe dispute opened: the bundle is taken back' : 'Stripe dispute won: the bundle is given back',
      );
      return { status: 200, body: { ok: true, duplicate: false, channel, balance } };
    case 'duplicate':
      return { status: 200, body: { ok: true, duplicate: true, channel, balance } };
    default:
      return { status: 200, body: { ok: true, ignored: `purchase ${applied.unchanged.replace('_', ' ')}`, channel, balance } };
  }
}
