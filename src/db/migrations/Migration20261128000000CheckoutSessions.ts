import { Migration } from '@mikro-orm/migrations';

/**
 * The open Stripe Checkout Session of each account and bundle: the buy button sends the buyer
 * back to it for its lifetime instead of making another at Stripe on every press (L2 of the
 * review of 2026-11-26). `claim` marks a row whose session one request is making now (until
 * `expires_at`); `session_id` and `url` are set once Stripe made it, and the row is forgotten
 * when Stripe reports the session completed or expired. One row per account and bundle at most.
 */
export class Migration20261128000000CheckoutSessions extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table checkout_sessions (
        account_id integer not null references accounts (id) on delete cascade,
        bundle_id text not null,
        claim uuid null,
        session_id text null unique,
        url text null,
        expires_at timestamptz not null,
        created_at timestamptz not null,
        primary key (account_id, bundle_id)
      )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table checkout_sessions');
  }
}
