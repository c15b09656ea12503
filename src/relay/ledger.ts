import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import { BUNDLES, bundleOf, RELAY_TIERS, type Channel } from './policy.js';
import { recordAudit, type Actor } from '../account/audit.js';

export class BundleError extends Error {
  constructor(
    readonly code: 'unknown_bundle' | 'unknown_account' | 'not_bundle_eligible',
    message: string,
  ) {
    super(message);
  }
}

export interface LedgerEvent {
  /** The payment provider's event id: an event is applied once, however often it arrives. */
  eventId: string;
  kind: 'purchase' | 'refund';
  accountId: number;
  bundleId: string;
  /** Who sent it, for the account's audit trail (the generic payment webhook unless said). */
  actor?: Actor;
}

export interface Applied {
  applied: boolean;
  channel: Channel;
  balance: number;
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

  async apply(event: LedgerEvent): Promise<Applied> {
    const bundle = bundleOf(event.bundleId);
    if (!bundle) throw new BundleError('unknown_bundle', `unknown bundle ${event.bundleId}; known: ${Object.keys(BUNDLES).join(', ')}`);
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<{ role: string }>('select role from accounts where id = $1', [event.accountId]);
      if (!rows[0]) throw new BundleError('unknown_account', `no account ${event.accountId}`);
      if (!(Object.hasOwn(RELAY_TIERS, rows[0].role) && RELAY_TIERS[rows[0].role as keyof typeof RELAY_TIERS]?.bundleEligible)) {
        throw new BundleError('not_bundle_eligible', `account ${event.accountId} (${rows[0].role}) cannot hold bundles`);
      }
      const amount = event.kind === 'purchase' ? bundle.credits : -bundle.credits;
      const inserted = await client.query(
        `insert into bundle_ledger (account_id, channel, kind, amount, bundle_id, event_id, created_at)
         values ($1, $2, $3, $4, $5, $6, $7) on conflict (event_id) do nothing`,
        [event.accountId, bundle.channel, event.kind, amount, event.bundleId, event.eventId, this.clock.now()],
      );
      if (inserted.rowCount === 1) {
        await recordAudit(
          client,
          {
            accountId: event.accountId,
            kind: event.kind === 'purchase' ? 'bundle_purchase' : 'bundle_refund',
            actor: event.actor ?? 'webhook',
            detail: { bundle_id: event.bundleId, credits: amount, event_id: event.eventId },
          },
          this.clock.now(),
        );
      }
      return {
        applied: inserted.rowCount === 1,
        channel: bundle.channel,
        balance: await bundleBalance(client, event.accountId, bundle.channel),
      };
    });
  }

  /** An operator's credit or refund (CLI): an event of its own. */
  manual(kind: 'purchase' | 'refund', accountId: number, bundleId: string): Promise<Applied> {
    return this.apply({ eventId: `cli-${randomUUID()}`, kind, accountId, bundleId, actor: 'cli' });
  }
}
