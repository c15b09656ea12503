import { Migration } from '@mikro-orm/migrations';

/**
 * The relay's delivery lifecycle (issue 13): a message is `queued`, then `sending` while a
 * worker holds it, `sent` once its transport took it (with the provider and the provider's id
 * of the message), and `delivered` or `undelivered` when the provider's receipt says so; or
 * `failed` when it could not be handed on (its charge given back). Each step has its time.
 */
export class Migration20261125000000RelayDelivery extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table relay_messages drop constraint relay_messages_status_check');
    this.addSql(
      `alter table relay_messages add constraint relay_messages_status_check
         check (status in ('queued', 'sending', 'sent', 'delivered', 'undelivered', 'failed'))`,
    );
    this.addSql('alter table relay_messages add column provider text null');
    this.addSql('alter table relay_messages add column provider_id text null');
    this.addSql('alter table relay_messages add column sending_at timestamptz null');
    this.addSql('alter table relay_messages add column sent_at timestamptz null');
    this.addSql('alter table relay_messages add column receipt_at timestamptz null');
    this.addSql('alter table relay_messages add column receipt_error text null');
    // Messages sent before this migration: their finish was their handing on.
    this.addSql("update relay_messages set sent_at = finished_at where status = 'sent'");
    // A provider's receipt names the message by the provider's id.
    // Not unique: a provider's ids are its own business (a generic webhook may repeat them), and a
    // refused write of a delivered message's outcome would have it sent again.
    this.addSql('create index relay_messages_provider_id_idx on relay_messages (provider, provider_id) where provider_id is not null');
    // The queue's age and depth for /metrics, and the operator's view of what is waiting.
    this.addSql("create index relay_messages_pending_idx on relay_messages (channel, created_at) where status in ('queued', 'sending')");
    this.addSql('create index relay_messages_account_created_idx on relay_messages (account_id, created_at desc)');

    // The per-site daily cap becomes a counter charged by one conditional upsert, instead of a
    // count of the day's messages under a lock that every send of the site waited for.
    this.addSql('alter table usage_counters drop constraint usage_counters_counter_check');
    this.addSql(
      "alter table usage_counters add constraint usage_counters_counter_check check (counter in ('check', 'report', 'public', 'faults', 'relay_site'))",
    );
    this.addSql(`insert into usage_counters (subject, counter, day, used)
                 select 'relay-site:' || account_id || ':' || site, 'relay_site', (created_at at time zone 'UTC')::date, count(*)
                   from relay_messages where created_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC'
                  group by 1, 3
                 on conflict (subject, counter, day) do update set used = excluded.used`);
  }

  override async down(): Promise<void> {
    this.addSql("delete from usage_counters where counter = 'relay_site'");
    this.addSql('alter table usage_counters drop constraint usage_counters_counter_check');
    this.addSql("alter table usage_counters add constraint usage_counters_counter_check check (counter in ('check', 'report', 'public', 'faults'))");
    this.addSql('drop index relay_messages_account_created_idx');
    this.addSql('drop index relay_messages_pending_idx');
    this.addSql('drop index relay_messages_provider_id_idx');
    this.addSql("update relay_messages set status = 'queued' where status = 'sending'");
    this.addSql("update relay_messages set status = 'sent' where status in ('delivered', 'undelivered')");
    for (const column of ['receipt_error', 'receipt_at', 'sent_at', 'sending_at', 'provider_id', 'provider']) {
      this.addSql(`alter table relay_messages drop column ${column}`);
    }
    this.addSql('alter table relay_messages drop constraint relay_messages_status_check');
    this.addSql("alter table relay_messages add constraint relay_messages_status_check check (status in ('queued', 'sent', 'failed'))");
  }
}
