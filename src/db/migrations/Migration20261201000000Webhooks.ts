import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 28, item 2: outbound webhooks. `webhook_endpoints` holds each account's subscriptions
 * (at most 10, checked by the service): the URL, the events, the filters of address events, the
 * signing secret (kept in clear: it must be read to sign, and the project has no encryption
 * helper for secrets at rest), and where the regeneration events stand (`last_snapshot_id`).
 * `webhook_deliveries` holds every event to send, its `webhook-id` as primary key (the same on
 * every retry), the attempts and when the next one is due; the hourly purge deletes deliveries
 * older than 7 days.
 */
export class Migration20261201000000Webhooks extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table webhook_endpoints (
        id uuid primary key,
        account_id integer not null references accounts (id) on delete cascade,
        url text not null,
        events text[] not null,
        confidence smallint not null,
        categories smallint[] not null,
        secret text not null,
        created_at timestamptz not null,
        disabled_at timestamptz null,
        failing_since timestamptz null,
        last_snapshot_id bigint null
      )`);
    this.addSql('create index webhook_endpoints_account_id_idx on webhook_endpoints (account_id)');
    this.addSql(`
      create table webhook_deliveries (
        id text primary key,
        endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
        event_type text not null,
        payload jsonb not null,
        attempts integer not null default 0,
        next_attempt_at timestamptz null,
        last_status integer null,
        last_error text null,
        delivered_at timestamptz null,
        created_at timestamptz not null
      )`);
    this.addSql('create index webhook_deliveries_endpoint_id_idx on webhook_deliveries (endpoint_id)');
    this.addSql('create index webhook_deliveries_next_attempt_at_idx on webhook_deliveries (next_attempt_at)');
    this.addSql('create index webhook_deliveries_created_at_idx on webhook_deliveries (created_at)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table webhook_deliveries');
    this.addSql('drop table webhook_endpoints');
  }
}
