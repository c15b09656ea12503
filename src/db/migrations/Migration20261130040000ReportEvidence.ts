import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 28 item 5: a report may carry private evidence (log lines, redacted, at most 16 KiB of
 * UTF-8). A nullable column of the partitioned `reports` table: every partition, those made
 * ahead included, has it, and dropping a month's partition at retention drops its evidence with
 * its reports. Adding a nullable column without a default rewrites nothing (a catalogue change).
 */
export class Migration20261130040000ReportEvidence extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table reports add column evidence text null');
  }

  override async down(): Promise<void> {
    this.addSql('alter table reports drop column evidence');
  }
}
