import { z } from 'zod';
import { BUNDLES } from '../roles.js';
import { apiBase, requireAll } from '../settings.js';

/**
 * Payments' settings slice: the payment provider's webhook (relay credit, relay/payments.ts) and
 * Stripe Checkout (payments/stripe.ts). Its variables are merged into the configuration's one
 * schema by src/config.ts, which reads and checks the environment once. A settings slice imports
 * nothing of its area (.dependency-cruiser.cjs).
 */

/** Payments' environment variables (docs/configuration.md); STRIPE_PRICE_<BUNDLE_ID> are read by pattern. */
export const paymentVariables = {
  PAYMENT_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  PAYMENT_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).default(300),
  STRIPE_SECRET_KEY: z.string().regex(/^(sk|rk)_(test|live)_[A-Za-z0-9]+$/, 'must be a Stripe secret or restricted key (sk_… or rk_…)').optional(),
  STRIPE_WEBHOOK_SECRET: z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be a webhook signing secret (whsec_…)').optional(),
  STRIPE_API_BASE: apiBase,
};

type PaymentEnv = z.infer<z.ZodObject<typeof paymentVariables>>;

/** `STRIPE_PRICE_SVC_MAIL_BUNDLE_1000=price_…`: the Stripe price of each bundle that is for sale. */
export const STRIPE_PRICE = /^STRIPE_PRICE_(.+)$/;

export interface StripeConfig {
  secretKey: string;
  webhookSecret: string;
  /** Bundle id -> Stripe price id. */
  prices: Record<string, string>;
  apiBase: string | undefined;
}

/** The payment provider's webhook: its signing secret and how old a signed event may be. */
export function paymentSettings(e: PaymentEnv): { secret: string | undefined; toleranceSeconds: number } {
  return { secret: e.PAYMENT_WEBHOOK_SECRET, toleranceSeconds: e.PAYMENT_WEBHOOK_TOLERANCE_SECONDS };
}

/** Stripe needs its key, the webhook secret and at least one price, each for a known bundle. */
export function stripeSettings(e: PaymentEnv, env: NodeJS.ProcessEnv, problems: string[]): StripeConfig | undefined {
  const prices: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const match = STRIPE_PRICE.exec(name);
    if (!match || value === undefined) continue;
    const bundle = match[1]!.toLowerCase();
    if (!Object.hasOwn(BUNDLES, bundle)) problems.push(`  ${name}: no bundle ${bundle}; known: ${Object.keys(BUNDLES).join(', ')}`);
    else if (!/^price_[A-Za-z0-9]+$/.test(value)) problems.push(`  ${name}: must be a Stripe price id (price_…)`);
    else prices[bundle] = value;
  }
  const any = e.STRIPE_SECRET_KEY || e.STRIPE_WEBHOOK_SECRET || Object.keys(prices).length > 0;
  if (!any) return undefined;
  requireAll(problems, 'Stripe is configured', { STRIPE_SECRET_KEY: e.STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET: e.STRIPE_WEBHOOK_SECRET });
  if (Object.keys(prices).length === 0) problems.push('  STRIPE_PRICE_<BUNDLE_ID>: set the price of at least one bundle, e.g. STRIPE_PRICE_SVC_MAIL_BUNDLE_1000');
  return e.STRIPE_SECRET_KEY && e.STRIPE_WEBHOOK_SECRET
    ? { secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET, prices, apiBase: e.STRIPE_API_BASE }
    : undefined;
}
