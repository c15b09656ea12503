import { Migration } from '@mikro-orm/migrations';

/**
 * Positive feedback (POST /whitelist) is counted on a daily counter of its own, `feedback`,
 * instead of the report quota: a site whose reports are used up can still say it unblocked
 * an address, and the ReportedIP plugins treat a 429 on it as a failure that costs a retry.
 */
export class Migration20261126000100FeedbackCounter extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table usage_counters drop constraint usage_counters_counter_check');
    this.addSql(
      "alter table usage_counters add constraint usage_counters_counter_check check (counter in ('check', 'report', 'feedback', 'public', 'faults', 'relay_site'))",
    );
  }

  override async down(): Promise<void> {
    this.addSql("delete from usage_counters where counter = 'feedback'");
    this.addSql('alter table usage_counters drop constraint usage_counters_counter_check');
    this.addSql("alter table usage_counters add constraint usage_counters_counter_check check (counter in ('check', 'report', 'public', 'faults', 'relay_site'))");
  }
}
