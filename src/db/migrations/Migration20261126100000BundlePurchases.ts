import { Migration } from '@mikro-orm/migrations';

/**
 * Purchases a payment provider reported, one row per purchase (Stripe: per Checkout Session),
 * whether or not their credits reached the ledger. A purchase is credited once however many
 * different events name it; one that could not be credited (the account can no longer hold
 * bundles, or is gone) stays on record for the operator; a refund finds its purchase by the
 * payment's id and takes back only what was credited. No foreign key to `accounts`: the
 * record of a payment outlives the account it was for.
 */
export class Migration20261126100000BundlePurchases extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table bundle_purchases (
        purchase_ref text primary key,
        payment_ref text null unique,
        account_id integer not null,
        bundle_id text not null,
        event_id text not null,
        credited boolean not null,
        reason text null,
        created_at timestamptz not null,
        refund_event_id text null,
        refunded_at timestamptz null
      )`);
    this.addSql('create index bundle_purchases_account_idx on bundle_purchases (account_id, created_at desc)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table bundle_purchases');
  }
}
