import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Clock } from '../clock.js';
import { BundleError, type Applied, type BundleLedger } from './ledger.repository.js';

/**
 * The payment provider's webhook, outside /api/v2: `POST /webhooks/payments` (openapi/internal/).
 *
 * Body: `{"id": "evt_…", "type": "bundle.purchased" | "bundle.refunded", "created": <unix s>,
 *         "data": {"account_id": 42, "bundle_id": "svc_mail_bundle_1000"}}`.
 * Header: `X-Signature: t=<unix s>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`.
 * Events signed more than the tolerance away from now are refused as stale; an event id is
 * applied once, however often it is delivered.
 */
export interface PaymentsConfig {
  secret: string | undefined;
  toleranceSeconds: number;
}

const EVENT = z.object({
  id: z.string().min(1).max(200),
  type: z.enum(['bundle.purchased', 'bundle.refunded']),
  created: z.number().int().optional(),
  data: z.object({ account_id: z.number().int().positive(), bundle_id: z.string().min(1).max(100) }),
});

export function sign(secret: string, timestamp: number, rawBody: string): string {
  return `t=${timestamp},v1=${createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest('hex')}`;
}

/**
 * A signature's time (unix seconds) is within the tolerance of now, both ways: an event signed
 * too long ago is stale, and one signed in the future (a signer's clock, or a replay prepared in
 * advance) is refused alike. Every payment webhook (this one and Stripe's) checks it so.
 */
export function withinTolerance(timestamp: number, now: Date, toleranceSeconds: number): boolean {
  return Math.abs(now.getTime() / 1000 - timestamp) <= toleranceSeconds;
}

type Verdict = { ok: true } | { ok: false; status: 400 | 401; code: string; message: string };

export function verifySignature(secret: string, header: string | undefined, rawBody: string, now: Date, toleranceSeconds: number): Verdict {
  const parts = new Map((header ?? '').split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const timestamp = Number(parts.get('t'));
  const given = parts.get('v1') ?? '';
  if (!Number.isInteger(timestamp) || !/^[0-9a-f]{64}$/.test(given)) {
    return { ok: false, status: 401, code: 'invalid_signature', message: 'X-Signature must be t=<unix seconds>,v1=<hex HMAC-SHA256>.' };
  }
  const expected = createHmac('sha256', secret).update(`${timestamp}.${rawBody}`).digest();
  if (!timingSafeEqual(expected, Buffer.from(given, 'hex'))) {
    return { ok: false, status: 401, code: 'invalid_signature', message: 'The signature does not match the body.' };
  }
  if (!withinTolerance(timestamp, now, toleranceSeconds)) {
    return { ok: false, status: 400, code: 'stale_event', message: `The event was signed more than ${toleranceSeconds} seconds away from now.` };
  }
  return { ok: true };
}

export type PaymentOutcome =
  | { ok: true; duplicate: boolean; channel: Applied['channel']; balance: number }
  | { ok: false; status: 400 | 401 | 422 | 503; code: string; message: string };

/**
 * `POST /webhooks/payments` (openapi/internal/): the signature checked on the raw body as it
 * came, then the event (read again from that raw body, so what is applied is what was signed)
 * applied to the bundle ledger once.
 */
export class PaymentEvents {
  constructor(
    private readonly ledger: BundleLedger,
    private readonly config: PaymentsConfig,
    private readonly clock: Clock,
  ) {}

  async receive(raw: string, signature: string | undefined): Promise<PaymentOutcome> {
    if (!this.config.secret) return { ok: false, status: 503, code: 'not_configured', message: 'PAYMENT_WEBHOOK_SECRET is not set on this server.' };
    const verdict = verifySignature(this.config.secret, signature, raw, this.clock.now(), this.config.toleranceSeconds);
    if (!verdict.ok) return verdict as PaymentOutcome;
    let event: z.infer<typeof EVENT>;
    try {
      event = EVENT.parse(JSON.parse(raw));
    } catch {
      return { ok: false, status: 400, code: 'invalid_event', message: 'The body is not a bundle event.' };
    }
    try {
      const applied = await this.ledger.apply({
        eventId: event.id,
        kind: event.type === 'bundle.purchased' ? 'purchase' : 'refund',
        accountId: event.data.account_id,
        bundleId: event.data.bundle_id,
      });
      return { ok: true, duplicate: !applied.applied, channel: applied.channel, balance: applied.balance };
    } catch (err) {
      if (!(err instanceof BundleError)) throw err;
      return { ok: false, status: 422, code: err.code, message: err.message };
    }
  }
}
