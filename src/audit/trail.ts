
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
  // Delisting (src/delisting): each step of a request, with its id in the detail. A request
  // belongs to no account: these are recorded with none, or the deciding operator's account.
  'delist_requested',
  'delist_mailed',
  'delist_confirmed',
  'delist_approved',
  'delist_rejected',
] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];
/** Kinds that are written to audit_events (relay_* come from relay_messages). */
export type RecordedKind = Exclude<AuditKind, 'relay_mail' | 'relay_sms'>;

/** Who did it: the account on the web, the operator's CLI, a payment provider, the API. */
export type Actor = 'web' | 'cli' | 'stripe' | 'webhook' | 'api';

export interface AuditEntry {
  /** null: a step that belongs to no account (a delisting request, the operator's CLI). */
  accountId: number | null;
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
