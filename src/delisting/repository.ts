import { randomUUID } from 'node:crypto';
import { recordAudit } from '../audit/repository.js';
import type { AuditEntry } from '../audit/trail.js';
import type { DelistRequest, DelistStatus } from '../db/entities/delisting.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import { whitelistUntil } from '../reputation/whitelist.repository.js';

/** A request as the service reads it (the token's hash only where it is compared). */
export type DelistRow = Pick<
  DelistRequest,
  'id' | 'ip' | 'email' | 'reason' | 'proven' | 'status' | 'createdAt' | 'mailedAt' | 'confirmedAt' | 'decidedAt' | 'decidedBy' | 'note' | 'whitelistUntil'
>;

const COLUMNS = `id, ip::text as ip, email, reason, proven, status, created_at as "createdAt", mailed_at as "mailedAt",
  confirmed_at as "confirmedAt", decided_at as "decidedAt", decided_by as "decidedBy", note, whitelist_until as "whitelistUntil"`;

/** PostgreSQL's unique_violation. */
const UNIQUE_VIOLATION = '23505';

export interface NewDelistRequest {
  ip: string;
  email: string;
  reason: string;
  proven: boolean;
  tokenHash: Buffer;
  requesterNetwork: string;
  at: Date;
  /** Unconfirmed requests created before this have expired. */
  staleBefore: Date;
}

/** A decision of the operator on a request. */
export interface Decision {
  status: 'approved' | 'rejected';
  by: string;
  note: string;
  at: Date;
  /** approved: the whitelist entry's end. */
  until?: Date;
  audit: Omit<AuditEntry, 'kind'>;
}

/**
 * The delisting requests (table `delist_requests`), on hand SQL: a request, its expiry of older
 * unconfirmed ones and its audit event in one transaction; an approval, its whitelist entry and
 * its audit event in one.
 */
export class DelistRepository {
  constructor(private readonly pool: Pool) {}

  /** Requests made from a source network since `since` (the per-source bound). */
  async countFromSource(network: string, since: Date): Promise<number> {
    const { rows } = await this.pool.query<{ n: number }>(
      'select count(*)::int as n from delist_requests where requester_network = $1 and created_at > $2',
      [network, since],
    );
    return rows[0]!.n;
  }

  /**
   * The latest rejection since `since` of this address or range, or of one that overlaps it (so
   * that asking for the rejected address's /24, or an address inside a rejected range, does not
   * get around the cooldown).
   */
  async lastRejection(ip: string, since: Date): Promise<Date | undefined> {
    const { rows } = await this.pool.query<{ at: Date }>(
      "select max(decided_at) as at from delist_requests where ip && $1::cidr and status = 'rejected' and decided_at > $2",
      [ip, since],
    );
    return rows[0]?.at ?? undefined;
  }

  /**
   * Inserts a request unless another is active (unconfirmed or open) for the same address: the
   * partial unique index decides, so parallel requests make one. One for an overlapping range
   * (the address's /24, an address inside the range) is refused too. Unconfirmed requests past
   * their window expire first; a proven request also replaces an unproven unconfirmed one for
   * the same address.
   */
  async create(input: NewDelistRequest, audit: Omit<AuditEntry, 'kind'>): Promise<DelistRow | undefined> {
    try {
      return await transaction(this.pool, async (client) => {
        await client.query(
          `update delist_requests set status = 'expired'
            where ip = $1::cidr and status = 'unconfirmed' and (created_at < $2 or ($3 and not proven))`,
          [input.ip, input.staleBefore, input.proven],
        );
        const { rows: overlapping } = await client.query(
          "select 1 from delist_requests where ip && $1::cidr and ip <> $1::cidr and status in ('unconfirmed', 'open') limit 1",
          [input.ip],
        );
        if (overlapping.length > 0) return undefined;
        const { rows } = await client.query<DelistRow>(
          `insert into delist_requests (id, ip, email, reason, proven, status, token_hash, requester_network, created_at)
           values ($1, $2::cidr, $3, $4, $5, 'unconfirmed', $6, $7, $8) returning ${COLUMNS}`,
          [randomUUID(), input.ip, input.email, input.reason, input.proven, input.tokenHash, input.requesterNetwork, input.at],
        );
        const row = rows[0]!;
        await recordAudit(client, { ...audit, kind: 'delist_requested', detail: { ...audit.detail, request: row.id, ip: row.ip, proven: row.proven } }, input.at);
        return row;
      });
    } catch (err) {
      if ((err as { code?: string }).code === UNIQUE_VIOLATION) return undefined;
      throw err;
    }
  }

  /**
   * Marks the request's link as mailed unless its address (or an overlapping range) had a link
   * mailed within the window, or its recipient had `recipientMax` already: under a lock per
   * recipient, so parallel requests count each other. A proven request counts only proven
   * requests' mails for its address: whoever asked first from elsewhere cannot keep the
   * address's owner from getting a link that day. True when the mail may go out.
   */
  async claimMail(id: string, at: Date, since: Date, recipientMax: number): Promise<boolean> {
    return transaction(this.pool, async (client) => {
      const { rows: target } = await client.query<{ ip: string; email: string; proven: boolean }>(
        'select ip::text as ip, email, proven from delist_requests where id = $1',
        [id],
      );
      if (!target[0]) return false;
      await client.query("select pg_advisory_xact_lock(hashtext('delist-mail:' || $1))", [target[0].email]);
      await client.query("select pg_advisory_xact_lock(hashtext('delist-mail-ip:' || $1))", [target[0].ip]);
      const { rows } = await client.query<{ address: number; recipient: number }>(
        `select (select count(*)::int from delist_requests where ip && $1::cidr and mailed_at > $3 and (proven or not $4)) as address,
                (select count(*)::int from delist_requests where email = $2 and mailed_at > $3) as recipient`,
        [target[0].ip, target[0].email, since, target[0].proven],
      );
      if (rows[0]!.address > 0 || rows[0]!.recipient >= recipientMax) return false;
      await client.query('update delist_requests set mailed_at = $2 where id = $1', [id, at]);
      await recordAudit(client, { accountId: null, kind: 'delist_mailed', actor: 'api', detail: { request: id, ip: target[0].ip } }, at);
      return true;
    });
  }

  async find(id: string): Promise<(DelistRow & { tokenHash: Buffer }) | undefined> {
    const { rows } = await this.pool.query<DelistRow & { tokenHash: Buffer }>(
      `select ${COLUMNS}, token_hash as "tokenHash" from delist_requests where id = $1`,
      [id],
    );
    return rows[0];
  }

  /**
   * Confirms an unconfirmed request within its window. Undefined when it was not unconfirmed, or
   * its window had passed (then it is marked expired).
   */
  async confirm(id: string, at: Date, staleBefore: Date, audit: Omit<AuditEntry, 'kind'>): Promise<DelistRow | undefined> {
    return transaction(this.pool, async (client) => {
      await client.query("update delist_requests set status = 'expired' where id = $1 and status = 'unconfirmed' and created_at < $2", [id, staleBefore]);
      const { rows } = await client.query<DelistRow>(
        `update delist_requests set status = 'open', confirmed_at = $2 where id = $1 and status = 'unconfirmed' returning ${COLUMNS}`,
        [id, at],
      );
      if (rows[0]) await recordAudit(client, { ...audit, kind: 'delist_confirmed', detail: { ...audit.detail, request: id, ip: rows[0].ip } }, at);
      return rows[0];
    });
  }

  /** Requests by status (all but expired by default), proven first, then oldest first. */
  async list(statuses: readonly DelistStatus[], limit: number): Promise<DelistRow[]> {
    const { rows } = await this.pool.query<DelistRow>(
      `select ${COLUMNS} from delist_requests where status = any($1::text[]) order by proven desc, created_at asc limit $2`,
      [statuses, limit],
    );
    return rows;
  }

  /**
   * Decides an open request (a rejection may also close an unconfirmed one); an approval
   * whitelists its range until `until` with the request as the reason, in the same transaction.
   */
  async decide(id: string, decision: Decision, from: readonly DelistStatus[]): Promise<DelistRow | undefined> {
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<DelistRow>(
        `update delist_requests set status = $2, decided_at = $3, decided_by = $4, note = $5, whitelist_until = $6
          where id = $1 and status = any($7::text[]) returning ${COLUMNS}`,
        [id, decision.status, decision.at, decision.by, decision.note, decision.until ?? null, from],
      );
      const row = rows[0];
      if (!row) return undefined;
      if (decision.status === 'approved') {
        await whitelistUntil(client, row.ip, `delisting request ${row.id}${decision.note ? `: ${decision.note}` : ''}`, decision.until!);
      }
      await recordAudit(
        client,
        { ...decision.audit, kind: decision.status === 'approved' ? 'delist_approved' : 'delist_rejected', detail: { ...decision.audit.detail, request: id, ip: row.ip, by: decision.by } },
        decision.at,
      );
      return row;
    });
  }

  /** The latest decision on a request whose range holds the address (for GET /reports/{ip}). */
  async latestDecision(ip: string): Promise<DelistRow | undefined> {
    const { rows } = await this.pool.query<DelistRow>(
      `select ${COLUMNS} from delist_requests
        where ip >>= $1::inet and status in ('approved', 'rejected')
        order by decided_at desc limit 1`,
      [ip],
    );
    return rows[0];
  }

  /**
   * The purge: unconfirmed requests past their window expire; requests decided or expired before
   * `deleteBefore` are deleted (a rejection must outlive its 7-day cooldown, an approval its
   * whitelist entry).
   */
  async purge(db: Queryable, staleBefore: Date, deleteBefore: Date): Promise<{ expired: number; deleted: number }> {
    const expired = await db.query("update delist_requests set status = 'expired' where status = 'unconfirmed' and created_at < $1", [staleBefore]);
    const deleted = await db.query(
      `delete from delist_requests
        where (status in ('rejected', 'expired') and coalesce(decided_at, created_at) < $1)
           or (status = 'approved' and whitelist_until < $1)`,
      [deleteBefore],
    );
    return { expired: expired.rowCount ?? 0, deleted: deleted.rowCount ?? 0 };
  }
}
