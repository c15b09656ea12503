import { Migration } from '@mikro-orm/migrations';

/**
 * A relay message's content (2FA texts, tenants' mails with their users' links) is deleted
 * RELAY_PAYLOAD_RETENTION_HOURS after the message reached a final state; its lifecycle stays.
 * `payload` is null then, and only then: a message that may still be sent always has it. The
 * partial index holds the messages whose content is still to be purged, so the hourly purge
 * reads only those.
 */
export class Migration20261128010100RelayPayloadRetention extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table relay_messages alter column payload drop not null');
    this.addSql(
      `alter table relay_messages add constraint relay_messages_payload_check
         check (payload is not null or status in ('sent', 'delivered', 'undelivered', 'failed'))`,
    );
    this.addSql(
      `create index relay_messages_payload_kept_idx on relay_messages (finished_at)
        where payload is not null and status in ('sent', 'delivered', 'undelivered', 'failed')`,
    );
  }

  override async down(): Promise<void> {
    this.addSql('drop index relay_messages_payload_kept_idx');
    this.addSql('alter table relay_messages drop constraint relay_messages_payload_check');
    this.addSql(`update relay_messages set payload = '{}'::jsonb where payload is null`);
    this.addSql('alter table relay_messages alter column payload set not null');
  }
}
