import type { Clock } from '../clock.js';
import type { RequiredEntityData } from '@mikro-orm/core';
import type { AuditEvent } from '../db/entities/accounts.js';
import type { Queryable } from '../db/pool.js';

/**
 * The audit trail of an account (the role table promises it to Business and up; it is recorded
 * for every account, so one that is upgraded has its history). Relay sends are not copied
 * here: they are read from relay_messages with their outcome as the worker left it.
 */
export const AUDIT_KINDS = [
  'sign_in',
  'sign_in_failed',
  'sign_out',
  'email_verified',
  'password_reset',
  'key_created',
  'key_revoked',
  'role_changed',
  'licences_changed',
  'sender_name_changed',
  'bundle_purchase',
  'bundle_refund',
  // A paid purchase whose credits could not be given (the account could no longer hold
  // bundles), and the refund of such a purchase, which took nothing back.
  'bundle_purchase_unapplied',
  'bundle_refund_unapplied',
  // A chargeback opened on a purchase took its credits back; a dispute won gave them back.
  'bundle_dispute',
  'bundle_dispute_won',
  'relay_mail',
  'relay_sms',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];
/** Kinds that are written to audit_events (relay_* come from relay_messages). */
export type RecordedKind = Exclude<AuditKind, 'relay_mail' | 'relay_sms'>;

/** Who did it: the account on the web, the operator's CLI, a payment provider, the API. */
export type Actor = 'web' | 'cli' | 'stripe' | 'webhook' | 'api';

export interface AuditEntry {
  accountId: number;
  kind: RecordedKind;
  actor: Actor;
  ip?: string;
  detail?: Record<string, string | number | boolean | null>;
}

export interface AuditRow {
  at: Date;
  kind: AuditKind;
  actor: string;
  ip: string;
  site: string;
  outcome: string;
  detail: Record<string, unknown>;
}

export interface AuditFilter {
  kind?: AuditKind;
  /** A site (host name) of relay sends. */
  site?: string;
  from?: Date;
  to?: Date;
  limit?: number;
}

/** One event as the ORM inserts it, in a unit of work's transaction (`em.insert(AuditEventEntity, …)`). */
export function auditEvent(entry: AuditEntry, at: Date): RequiredEntityData<AuditEvent> {
  return { account: entry.accountId, at, kind: entry.kind, actor: entry.actor, ip: entry.ip ?? '', detail: entry.detail ?? {} };
}

/** Records one event on hand SQL's connection, in the caller's transaction when it passes one. */
export async function recordAudit(db: Queryable, entry: AuditEntry, at: Date): Promise<void> {
  await db.query('insert into audit_events (account_id, at, kind, actor, ip, detail) values ($1, $2, $3, $4, $5, $6)', [
    entry.accountId,
    at,
    entry.kind,
    entry.actor,
    entry.ip ?? '',
    JSON.stringify(entry.detail ?? {}),
  ]);
}

export class AuditTrail {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    /** How long events are kept and shown (AUDIT_RETENTION_DAYS). */
    private readonly retentionMs: number,
  ) {}

  record(entry: AuditEntry, db: Queryable = this.db): Promise<void> {
    return recordAudit(db, entry, this.clock.now());
  }

  /** The account's events, newest first, within the retention time. */
  async list(accountId: number, filter: AuditFilter = {}): Promise<AuditRow[]> {
    const oldest = new Date(this.clock.now().getTime() - this.retentionMs);
    const from = filter.from && filter.from > oldest ? filter.from : oldest;
    const { rows } = await this.db.query<AuditRow>(
      `select * from (
         select at, kind, actor, ip, coalesce(detail->>'site', '') as site, coalesce(detail->>'outcome', '') as outcome, detail
           from audit_events where account_id = $1 and at >= $2 and ($3::timestamptz is null or at < $3)
         union all
         select created_at, 'relay_' || channel, 'api', '', site, status,
                jsonb_build_object('message_id', id, 'key_id', key_id, 'funded_by', funded_by)
           from relay_messages where account_id = $1 and created_at >= $2 and ($3::timestamptz is null or created_at < $3)
       ) e
       where ($4::text is null or kind = $4) and ($5::text is null or site = $5)
       order by at desc limit $6`,
      [accountId, from, filter.to ?? null, filter.kind ?? null, filter.site ?? null, Math.min(filter.limit ?? 500, 10_000)],
    );
    return rows;
  }

  /** Deletes events older than the retention time (the scheduled purge). */
  async purge(db: Queryable = this.db): Promise<number> {
    const { rowCount } = await db.query('delete from audit_events where at < $1', [new Date(this.clock.now().getTime() - this.retentionMs)]);
    return rowCount ?? 0;
  }
}

/**
 * One CSV field: quoted, and a leading `=`, `+`, `-`, `@`, tab or CR prefixed with `'` so that a
 * spreadsheet never runs a value (a site name, a key name) as a formula.
 */
export function csvField(value: unknown): string {
  let text = value instanceof Date ? value.toISOString() : typeof value === 'object' && value !== null ? JSON.stringify(value) : String(value ?? '');
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return `"${text.replace(/"/g, '""')}"`;
}

export function auditCsv(rows: AuditRow[]): string {
  const header = ['time', 'kind', 'actor', 'ip', 'site', 'outcome', 'detail'];
  const lines = rows.map((r) => [r.at, r.kind, r.actor, r.ip, r.site, r.outcome, r.detail].map(csvField).join(','));
  return [header.join(','), ...lines].join('\r\n') + '\r\n';
}
