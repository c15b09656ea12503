import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 27: a relay message is deleted RELAY_MESSAGE_RETENTION_DAYS (90) after it reached a
 * final state. The hourly purge finds them by this index instead of reading the whole table.
 */
export class Migration20261129000000RelayMessageRetention extends Migration {
  override async up(): Promise<void> {
    this.addSql(
      `create index relay_messages_finished_idx on relay_messages (finished_at)
        where status in ('sent', 'delivered', 'undelivered', 'failed')`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index relay_messages_finished_idx');
  }
}
