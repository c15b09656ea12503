import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import type { Role } from '../roles.js';
import { BUNDLES, bundleOf, relayTierOf, type Channel } from './policy.js';
import { type Actor } from '../audit/trail.js';
import { recordAudit } from '../audit/repository.js';

export class BundleError extends Error {
  constructor(
    readonly code: 'unknown_bundle' | 'unknown_account' | 'not_bundle_eligible',
    message: string,
  ) {
    super(message);
  }
}

/** The audit event of each kind of ledger movement from a payment. */
const AUDIT_KIND = {
  purchase: 'bundle_purchase',
  refund: 'bundle_refund',
  dispute: 'bundle_dispute',
  dispute_won: 'bundle_dispute_won',
} as const;

export interface LedgerEvent {
  /** The payment provider's event id: an event is applied once, however often it arrives. */
  eventId: string;
  /** `dispute` and `dispute_won` come through {@link BundleLedger.dispute} only. */
  kind: keyof typeof AUDIT_KIND;
  accountId: number;
  bundleId: string;
  /** Who sent it, for the account's audit trail (the generic payment webhook unless said). */
  actor?: Actor;
  /**
   * The provider's id of the purchase (Stripe: `stripe:<Checkout Session id>`). A purchase with
   * one is credited once, whatever number of different events name it, and is kept on record
   * (`bundle_purchases`) even when its credits cannot be given.
   */
  purchaseRef?: string;
  /**
   * The id of the payment (Stripe: `stripe:<PaymentIntent id>`): on a purchase it is recorded,
   * on a refund it finds the purchase, so that a refund takes back only what was credited.
   */
  paymentRef?: string;
}

/** A dispute (chargeback) of a purchase's payment: opened, or closed in the buyer's disfavour. */
export interface DisputeEvent {
  /** The provider's event id: each movement is applied once. */
  eventId: string;
  /** `opened`: the credits are taken back; `won`: a dispute that took them back gives them back. */
  phase: 'opened' | 'won';
  /** The payment disputed (Stripe: `stripe:<PaymentIntent id>`), which finds the purchase. */
  paymentRef: string;
  /** The dispute (Stripe: `stripe:<dispute id>`). */
  disputeRef: string;
  actor?: Actor;
}

/** What a dispute event did to the purchase's account, and why it did nothing when it did not. */
export interface DisputeApplied extends Applied {
  accountId: number;
  /** Not applied: seen before; a refund took it back already; never credited; nothing held to give back. */
  unchanged?: 'duplicate' | 'refunded' | 'not_credited' | 'not_held';
}

export interface Applied {
  applied: boolean;
  channel: Channel;
  balance: number;
  /** A refund whose purchase was never credited: nothing was taken back. */
  neverCredited?: boolean;
  /** A refund of a purchase whose open dispute took its credits back already: nothing more was taken. */
  heldByDispute?: boolean;
}

/** The bundle balance of an account's channel: the sum of its append-only ledger. */
export async function bundleBalance(db: Queryable, accountId: number, channel: Channel): Promise<number> {
  const { rows } = await db.query<{ balance: number }>({
    name: 'bundle-balance',
    text: 'select coalesce(sum(amount), 0)::int as balance from bundle_ledger where account_id = $1 and channel = $2',
    values: [accountId, channel],
  });
  return rows[0]!.balance;
}

/**
 * Purchases and refunds of bundles, from the payment provider's signed events or the CLI.
 * A refund takes the bundle's credits back even when they were already consumed, so the
 * balance may go below zero.
 */
export class BundleLedger {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  /**
   * Applies a purchase or refund. A purchase with a `purchaseRef` that cannot be credited (the
   * account can no longer hold bundles, or is gone) is still recorded, with an audit event
   * `bundle_purchase_unapplied` on the account, before the BundleError is thrown: a paid
   * purchase never vanishes, and its later refund takes nothing.
   */
  async apply(event: LedgerEvent & { kind: 'purchase' | 'refund' }): Promise<Applied> {
    const bundle = bundleOf(event.bundleId);
    if (!bundle) throw new BundleError('unknown_bundle', `unknown bundle ${event.bundleId}; known: ${Object.keys(BUNDLES).join(', ')}`);
    const outcome = await transaction(this.pool, async (client): Promise<Applied | BundleError> => {
      const now = this.clock.now();
      if (event.kind === 'purchase' && event.purchaseRef) {
        const refusal = await this.refusal(client, event);
        const claimed = await client.query(
          `insert into bundle_purchases (purchase_ref, payment_ref, account_id, bundle_id, event_id, credited, reason, created_at)
           values ($1, $2, $3, $4, $5, $6, $7, $8) on conflict do nothing`,
          [event.purchaseRef, event.paymentRef ?? null, event.accountId, event.bundleId, event.eventId, !refusal, refusal?.code ?? null, now],
        );
        // Another event about the same purchase came first: it decided, once.
        if (claimed.rowCount !== 1) return this.result(client, event, bundle.channel, false);
        if (refusal) {
          if (refusal.code !== 'unknown_account') {
            await recordAudit(
              client,
              {
                accountId: event.accountId,
                kind: 'bundle_purchase_unapplied',
                actor: event.actor ?? 'webhook',
                detail: { bundle_id: event.bundleId, credits: 0, event_id: event.eventId, purchase: event.purchaseRef, reason: refusal.code },
              },
              now,
            );
          }
          return refusal;
        }
        return this.insert(client, event, bundle.credits, bundle.channel);
      }
      if (event.kind === 'refund' && event.paymentRef) {
        const { rows } = await client.query<{ purchase_ref: string; account_id: number; bundle_id: string; credited: boolean; refunded_at: Date | null; disputed_at: Date | null }>(
          'select purchase_ref, account_id, bundle_id, credited, refunded_at, disputed_at from bundle_purchases where payment_ref = $1 for update',
          [event.paymentRef],
        );
        const purchase = rows[0];
        if (purchase) {
          const target = { ...event, accountId: purchase.account_id, bundleId: purchase.bundle_id };
          const channel = bundleOf(purchase.bundle_id)!.channel;
          if (purchase.refunded_at) return this.result(client, target, channel, false);
          await client.query('update bundle_purchases set refunded_at = $2, refund_event_id = $3 where purchase_ref = $1', [purchase.purchase_ref, now, event.eventId]);
          // Its dispute took the credits back already: the refund takes nothing more.
          if (purchase.disputed_at) return { ...(await this.result(client, target, channel, false)), heldByDispute: true };
          if (!purchase.credited) {
            const { rows: account } = await client.query('select 1 from accounts where id = $1', [purchase.account_id]);
            if (account[0]) {
              await recordAudit(
                client,
                {
                  accountId: purchase.account_id,
                  kind: 'bundle_refund_unapplied',
                  actor: event.actor ?? 'webhook',
                  detail: { bundle_id: purchase.bundle_id, credits: 0, event_id: event.eventId, purchase: purchase.purchase_ref },
                },
                now,
              );
            }
            return { ...(await this.result(client, target, channel, false)), neverCredited: true };
          }
          return this.insert(client, target, -bundleOf(purchase.bundle_id)!.credits, channel);
        }
        // A purchase from before purchases were recorded (or whose event has not come yet): as before.
      }
      const refusal = await this.refusal(client, event);
      if (refusal) return refusal;
      return this.insert(client, event, event.kind === 'purchase' ? bundle.credits : -bundle.credits, bundle.channel);
    });
    if (outcome instanceof BundleError) throw outcome;
    return outcome;
  }

  /**
   * Takes a disputed purchase's credits back when its dispute opens (the balance may go below
   * zero, as with a refund), and gives them back when that dispute is won, each once, with an
   * audit event (`bundle_dispute`, `bundle_dispute_won`). Undefined when no purchase on record
   * has that payment. A refunded purchase gives nothing back, and a purchase whose dispute took
   * its credits takes nothing more on its refund (see {@link apply}).
   */
  async dispute(event: DisputeEvent): Promise<DisputeApplied | undefined> {
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<{
        purchase_ref: string;
        account_id: number;
        bundle_id: string;
        credited: boolean;
        refunded_at: Date | null;
        dispute_ref: string | null;
        disputed_at: Date | null;
      }>('select purchase_ref, account_id, bundle_id, credited, refunded_at, dispute_ref, disputed_at from bundle_purchases where payment_ref = $1 for update', [
        event.paymentRef,
      ]);
      const purchase = rows[0];
      if (!purchase) return undefined;
      const bundle = bundleOf(purchase.bundle_id)!;
      const target: LedgerEvent = { eventId: event.eventId, kind: event.phase === 'opened' ? 'dispute' : 'dispute_won', accountId: purchase.account_id, bundleId: purchase.bundle_id, actor: event.actor };
      const unchanged = async (why: NonNullable<DisputeApplied['unchanged']>): Promise<DisputeApplied> => ({
        ...(await this.result(client, target, bundle.channel, false)),
        accountId: purchase.account_id,
        unchanged: why,
      });
      if (!purchase.credited) return unchanged('not_credited');
      if (purchase.refunded_at) return unchanged('refunded');
      // Opened: nothing is held yet. Won: this dispute holds the credits (held no more: given back already).
      if (event.phase === 'opened' && purchase.disputed_at !== null) return unchanged('duplicate');
      if (event.phase === 'won' && purchase.dispute_ref !== event.disputeRef) return unchanged('not_held');
      if (event.phase === 'won' && purchase.disputed_at === null) return unchanged('duplicate');
      const applied = await this.insert(client, target, event.phase === 'opened' ? -bundle.credits : bundle.credits, bundle.channel, { dispute: event.disputeRef });
      // The same event again (its ledger entry exists): nothing moves.
      if (!applied.applied) return { ...applied, accountId: purchase.account_id, unchanged: 'duplicate' };
      await client.query('update bundle_purchases set dispute_ref = $2, disputed_at = $3 where purchase_ref = $1', [
        purchase.purchase_ref,
        event.disputeRef,
        event.phase === 'opened' ? this.clock.now() : null,
      ]);
      return { ...applied, accountId: purchase.account_id };
    });
  }

  /**
   * Why the account cannot take this event: it is gone, or (for a purchase) its role holds no
   * bundles. A refund is taken back whatever the role is now: the credits were given.
   */
  private async refusal(db: Queryable, event: LedgerEvent): Promise<BundleError | undefined> {
    const { rows } = await db.query<{ role: string }>('select role from accounts where id = $1', [event.accountId]);
    if (!rows[0]) return new BundleError('unknown_account', `no account ${event.accountId}`);
    if (event.kind === 'refund') return undefined;
    if (!relayTierOf(rows[0].role as Role)?.bundleEligible) {
      return new BundleError('not_bundle_eligible', `account ${event.accountId} (${rows[0].role}) cannot hold bundles`);
    }
    return undefined;
  }

  private async insert(db: Queryable, event: LedgerEvent, amount: number, channel: Channel, detail: Record<string, string> = {}): Promise<Applied> {
    const inserted = await db.query(
      `insert into bundle_ledger (account_id, channel, kind, amount, bundle_id, event_id, created_at)
       values ($1, $2, $3, $4, $5, $6, $7) on conflict (event_id) do nothing`,
      [event.accountId, channel, event.kind, amount, event.bundleId, event.eventId, this.clock.now()],
    );
    if (inserted.rowCount === 1) {
      await recordAudit(
        db,
        {
          accountId: event.accountId,
          kind: AUDIT_KIND[event.kind],
          actor: event.actor ?? 'webhook',
          detail: { bundle_id: event.bundleId, credits: amount, event_id: event.eventId, ...detail },
        },
        this.clock.now(),
      );
    }
    return this.result(db, event, channel, inserted.rowCount === 1);
  }

  private async result(db: Queryable, event: LedgerEvent, channel: Channel, applied: boolean): Promise<Applied> {
    const { rows } = await db.query('select 1 from accounts where id = $1', [event.accountId]);
    return { applied, channel, balance: rows[0] ? await bundleBalance(db, event.accountId, channel) : 0 };
  }

  /** An operator's credit or refund (CLI): an event of its own. */
  manual(kind: 'purchase' | 'refund', accountId: number, bundleId: string): Promise<Applied> {
    return this.apply({ eventId: `cli-${randomUUID()}`, kind, accountId, bundleId, actor: 'cli' });
  }
}
