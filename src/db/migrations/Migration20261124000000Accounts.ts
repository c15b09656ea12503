import { Migration } from '@mikro-orm/migrations';

/**
 * Accounts on the web (issue 19): a password and a verified address on the account, sessions,
 * one-time links (verification, reset), invite codes, throttles of sign-in, sign-up and reset,
 * the audit trail, the white-label sender name, and when each key was last used.
 *
 * Secrets are stored as SHA-256 only (session ids, link tokens, invite codes), like the keys:
 * a copy of the database opens no session and follows no link.
 */
export class Migration20261124000000Accounts extends Migration {
  override async up(): Promise<void> {
    this.addSql('alter table accounts add column password_hash text null');
    this.addSql('alter table accounts add column email_verified_at timestamptz null');
    // Business and Enterprise: the name their relayed mails and SMS carry (white-label).
    this.addSql(
      "alter table accounts add column sender_name text null check (sender_name is null or (length(sender_name) between 1 and 64 and sender_name !~ '[[:cntrl:]]'))",
    );
    // One web login per address; accounts the CLI made without a password may share one.
    this.addSql('create unique index accounts_login_email_key on accounts (lower(email)) where password_hash is not null');
    this.addSql('create index accounts_email_idx on accounts (lower(email))');
    // Written at most once per key per few minutes (see account/last-used.ts), never per request.
    this.addSql('alter table api_keys add column last_used_at timestamptz null');
    this.addSql('create index api_keys_account_idx on api_keys (account_id)');
    // The dashboard's recent reports of an account.
    this.addSql('create index reports_account_reported_at_idx on reports (account_id, reported_at desc)');

    this.addSql(`
      create table web_sessions (
        id_hash bytea primary key,
        account_id integer not null references accounts (id) on delete cascade,
        created_at timestamptz not null,
        last_seen_at timestamptz not null,
        expires_at timestamptz not null,
        ip text not null default '',
        user_agent text not null default ''
      )`);
    this.addSql('create index web_sessions_account_idx on web_sessions (account_id)');
    this.addSql('create index web_sessions_expires_idx on web_sessions (expires_at)');

    this.addSql(`
      create table account_tokens (
        token_hash bytea primary key,
        account_id integer not null references accounts (id) on delete cascade,
        purpose text not null check (purpose in ('verify', 'reset')),
        created_at timestamptz not null,
        expires_at timestamptz not null,
        used_at timestamptz null
      )`);
    this.addSql('create index account_tokens_account_idx on account_tokens (account_id, purpose)');
    this.addSql('create index account_tokens_expires_idx on account_tokens (expires_at)');

    this.addSql(`
      create table invites (
        code_hash bytea primary key,
        note text not null default '',
        created_at timestamptz not null,
        expires_at timestamptz not null,
        used_at timestamptz null,
        used_by integer null references accounts (id) on delete set null
      )`);

    // Fixed windows per subject (an address or a source IP, per action).
    this.addSql(`
      create table auth_throttle (
        subject text not null,
        window_start timestamptz not null,
        attempts integer not null,
        primary key (subject, window_start)
      )`);

    this.addSql(`
      create table audit_events (
        id bigint generated always as identity primary key,
        account_id integer not null references accounts (id) on delete cascade,
        at timestamptz not null,
        kind text not null,
        actor text not null default '',
        ip text not null default '',
        detail jsonb not null default '{}'
      )`);
    this.addSql('create index audit_events_account_at_idx on audit_events (account_id, at desc)');
    this.addSql('create index audit_events_at_idx on audit_events (at)');

    // Secrets the server makes itself and every process shares (the CSRF key).
    this.addSql(`
      create table web_secrets (
        name text primary key,
        value bytea not null,
        created_at timestamptz not null default now()
      )`);
  }

  override async down(): Promise<void> {
    this.addSql('drop table web_secrets');
    this.addSql('drop table audit_events');
    this.addSql('drop table auth_throttle');
    this.addSql('drop table invites');
    this.addSql('drop table account_tokens');
    this.addSql('drop table web_sessions');
    this.addSql('drop index reports_account_reported_at_idx');
    this.addSql('drop index api_keys_account_idx');
    this.addSql('alter table api_keys drop column last_used_at');
    this.addSql('drop index accounts_email_idx');
    this.addSql('drop index accounts_login_email_key');
    this.addSql('alter table accounts drop column sender_name');
    this.addSql('alter table accounts drop column email_verified_at');
    this.addSql('alter table accounts drop column password_hash');
  }
}
