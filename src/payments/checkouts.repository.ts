import { randomUUID } from 'node:crypto';
import type { Pool } from '../db/pool.js';

/**
 * What the buy button may do now: send the buyer to an open session, make one, wait for another
 * request making one, or wait until `retryAt` after Stripe failed to make one.
 */
export type CheckoutState = { url: string } | { claim: string } | { pending: true } | { retryAt: Date };

/**
 * The open Stripe Checkout Session of each account and bundle (`checkout_sessions`): every
 * statement on it. A press of the buy button reuses the open session while it has time left; only
 * one request at a time, in any process, may make a new one (its claim), and the others wait for
 * its URL. Stripe's events forget a session once it is completed or expired.
 */
export class CheckoutSessions {
  constructor(private readonly pool: Pool) {}

  /**
   * The account's open session for the bundle if it is usable until `usableUntil`; otherwise a
   * claim to make one (held until `claimUntil`), unless another request holds a claim now.
   */
  async open(accountId: number, bundleId: string, now: Date, usableUntil: Date, claimUntil: Date): Promise<CheckoutState> {
    const claim = randomUUID();
    // The row is taken when there is none, its session is about to expire, or its claim lapsed.
    const { rows: claimed } = await this.pool.query({
      name: 'checkout-claim',
      text: `insert into checkout_sessions as c (account_id, bundle_id, claim, session_id, url, expires_at, created_at)
             values ($1, $2, $3, null, null, $6, $4)
             on conflict (account_id, bundle_id) do update
                set claim = excluded.claim, session_id = null, url = null, expires_at = excluded.expires_at, created_at = excluded.created_at
              where (c.url is not null and c.expires_at <= $5) or (c.url is null and c.expires_at <= $4)
             returning 1`,
      values: [accountId, bundleId, claim, now, usableUntil, claimUntil],
    });
    if (claimed[0]) return { claim };
    const { rows } = await this.pool.query<{ url: string | null; claim: string | null; expires_at: Date }>({
      name: 'checkout-open',
      text: 'select url, claim, expires_at from checkout_sessions where account_id = $1 and bundle_id = $2',
      values: [accountId, bundleId],
    });
    const row = rows[0];
    if (row?.url) return { url: row.url };
    return row && row.claim === null ? { retryAt: row.expires_at } : { pending: true };
  }

  /** The session the claim made: its id, page and expiry. */
  async made(claim: string, sessionId: string, url: string, expiresAt: Date): Promise<void> {
    await this.pool.query(
      'update checkout_sessions set claim = null, session_id = $2, url = $3, expires_at = $4 where claim = $1',
      [claim, sessionId, url, expiresAt],
    );
  }

  /** Stripe could not make it: no request makes another before `retryAt`, so a failing Stripe is not called again at once. */
  async failed(claim: string, retryAt: Date): Promise<void> {
    await this.pool.query('update checkout_sessions set claim = null, expires_at = $2 where claim = $1', [claim, retryAt]);
  }

  /** The session was completed or expired at Stripe: the next press makes a new one. */
  async forget(sessionId: string): Promise<void> {
    await this.pool.query('delete from checkout_sessions where session_id = $1', [sessionId]);
  }
}
