import type { Clock } from '../clock.js';
import type { RequiredEntityData } from '@mikro-orm/core';
import type { AuditEvent } from '../db/entities/accounts.js';
import type { Queryable } from '../db/pool.js';
import type { AuditEntry, AuditFilter, AuditRow } from './trail.js';

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
