import { Migration } from '@mikro-orm/migrations';

/**
 * Issue 28, item 1: delisting and appeals. `delist_requests` holds each request to take an
 * address (or range) off the list, its confirmation token (SHA-256 only) and the operator's
 * decision. At most one active request (unconfirmed or open) per address, by a partial unique
 * index, so that parallel requests cannot make two. An approval whitelists the range until
 * `whitelist.expires_at`; the hourly purge removes expired whitelist entries. The audit trail
 * records steps that belong to no account (an anonymous request, the operator's CLI), so its
 * account becomes optional.
 */
export class Migration20261130010000Delisting extends Migration {
  override async up(): Promise<void> {
    this.addSql(`
      create table delist_requests (
        id uuid primary key,
        ip cidr not null,
        email text not null,
        reason text not null,
        proven boolean not null,
        status text not null check (status in ('unconfirmed', 'open', 'approved', 'rejected', 'expired')),
        token_hash bytea not null,
        requester_network text not null,
        created_at timestamptz not null,
        mailed_at timestamptz null,
        confirmed_at timestamptz null,
        decided_at timestamptz null,
        decided_by text null,
        note text not null default '',
        whitelist_until timestamptz null
      )`);
    this.addSql(
      `create unique index delist_requests_active_idx on delist_requests (ip) where status in ('unconfirmed', 'open')`,
    );
    this.addSql('create index delist_requests_ip_created_at_idx on delist_requests (ip, created_at)');
    this.addSql('create index delist_requests_requester_network_created_at_idx on delist_requests (requester_network, created_at)');
    this.addSql('create index delist_requests_email_mailed_at_idx on delist_requests (email, mailed_at)');
    this.addSql('create index delist_requests_status_created_at_idx on delist_requests (status, created_at)');
    this.addSql('alter table whitelist add column expires_at timestamptz null');
    this.addSql('alter table audit_events alter column account_id drop not null');
  }

  override async down(): Promise<void> {
    this.addSql('delete from audit_events where account_id is null');
    this.addSql('alter table audit_events alter column account_id set not null');
    this.addSql('alter table whitelist drop column expires_at');
    this.addSql('drop table delist_requests');
  }
}
