import { Migration } from '@mikro-orm/migrations';

/**
 * The 2FA relay: messages (the audit trail of every accepted send, with its delivery state),
 * the inclusive monthly usage per account and channel, and the bundle ledger whose sum is the
 * balance. The job queue itself is pg-boss's, in its own schema.
 */
export class Migration20261121000400Relay extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table relay_messages (
        id bigint generated always as identity primary key,
        account_id integer not null references accounts (id) on delete cascade,
        channel text not null check (channel in ('mail', 'sms')),
        period_start timestamptz not null,
        funded_by text not null check (funded_by in ('inclusive', 'bundle')),
        status text not null default 'queued' check (status in ('queued', 'sent', 'failed')),
        recipient text not null,
        site_url text not null default '',
        payload jsonb not null,
        attempts integer not null default 0,
        last_error text null,
        created_at timestamptz not null,
        finished_at timestamptz null
      )`);
    this.addSql('create index relay_messages_account_period_idx on relay_messages (account_id, channel, period_start, status)');
    this.addSql('create index relay_messages_recipient_idx on relay_messages (recipient, created_at desc)');
    this.addSql("create index relay_messages_site_idx on relay_messages (site_url, created_at) where site_url <> ''");

    this.addSql(`
      create table relay_usage (
        account_id integer not null references accounts (id) on delete cascade,
        channel text not null check (channel in ('mail', 'sms')),
        period_start timestamptz not null,
        inclusive_used integer not null default 0 check (inclusive_used >= 0),
        primary key (account_id, channel, period_start)
      )`);

    // Append-only: purchases (+), consumption (-1 per send), refunds (-) and releases (+1 for a
    // send whose delivery failed). The balance is the sum; it may go below zero after a refund.
    this.addSql(`
      create table bundle_ledger (
        id bigint generated always as identity primary key,
        account_id integer not null references accounts (id) on delete cascade,
        channel text not null check (channel in ('mail', 'sms')),
        kind text not null check (kind in ('purchase', 'consumption', 'refund', 'release')),
        amount integer not null,
        bundle_id text null,
        event_id text null unique,
        message_id bigint null,
        created_at timestamptz not null
      )`);
    this.addSql('create index bundle_ledger_account_idx on bundle_ledger (account_id, channel)');
  }

  override async down(): Promise<void> {
    this.addSql('drop table bundle_ledger');
    this.addSql('drop table relay_usage');
    this.addSql('drop table relay_messages');
  }
}
