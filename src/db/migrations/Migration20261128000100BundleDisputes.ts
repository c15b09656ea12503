import { Migration } from '@mikro-orm/migrations';

/**
 * Chargebacks (L8 of the review of 2026-11-26): a disputed purchase's credits are taken back
 * when the dispute opens and given back if it is won. `dispute_ref` is the dispute (Stripe:
 * `stripe:<dispute id>`), `disputed_at` is set while its credits are held back; the ledger gets
 * two kinds for the two movements.
 */
export class Migration20261128000100BundleDisputes extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table bundle_purchases add column dispute_ref text null, add column disputed_at timestamptz null');
    this.addSql('alter table bundle_ledger drop constraint bundle_ledger_kind_check');
    this.addSql(
      "alter table bundle_ledger add constraint bundle_ledger_kind_check check (kind in ('purchase', 'consumption', 'refund', 'release', 'dispute', 'dispute_won'))",
    );
  }

  override async down(): Promise<void> {
    this.addSql("delete from bundle_ledger where kind in ('dispute', 'dispute_won')");
    this.addSql('alter table bundle_ledger drop constraint bundle_ledger_kind_check');
    this.addSql("alter table bundle_ledger add constraint bundle_ledger_kind_check check (kind in ('purchase', 'consumption', 'refund', 'release'))");
    this.addSql('alter table bundle_purchases drop column disputed_at, drop column dispute_ref');
  }
}
