import type { EntityManager } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/core';
import { auditEvent, recordAudit } from '../audit/repository.js';
import type { Actor } from '../audit/trail.js';
import { AccountEntity, ApiKeyEntity, type Account, type ApiKey } from '../db/entities.js';
import { AuditEventEntity } from '../db/entities/accounts.js';
import type { Queryable } from '../db/pool.js';

/**
 * Accounts' API keys, over the ORM's entities (Account, ApiKey, AuditEvent): made, listed and
 * revoked in one unit of work each, with the audit trail's event in the same transaction. The
 * per-request lookup of a presented key (`findKeyByHash`) and the revocation inside another
 * aggregate's transaction (`revokeAccountKeys`) are hand SQL on that transaction's connection.
 */
export class KeyRepository {
  constructor(private readonly em: EntityManager) {}

  /**
   * A key for a new account (its role, licences, address) or for the account `account` names:
   * `no_account` when there is no such account, `limit` when it holds `activeMax` active keys.
   */
  async create(input: {
    account: number | Pick<Account, 'role' | 'licences' | 'email'>;
    key: Pick<ApiKey, 'id' | 'prefix' | 'name' | 'hash'>;
    at: Date;
    activeMax?: number;
    audit: { actor: Actor; ip?: string; at: Date };
  }): Promise<{ account: Account; apiKey: ApiKey } | 'no_account' | 'limit'> {
    return this.em.fork().transactional(async (tx) => {
      const accountId = typeof input.account === 'number' ? input.account : undefined;
      if (accountId && input.activeMax !== undefined) {
        // Keys made at the same moment for one account are counted one after the other.
        await tx.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`keys:${accountId}`]);
        const active = await tx.count(ApiKeyEntity, { account: accountId, revokedAt: null });
        if (active >= input.activeMax) return 'limit';
      }
      const account =
        typeof input.account === 'number' ? await tx.findOne(AccountEntity, input.account) : tx.create(AccountEntity, { ...input.account, createdAt: input.at });
      if (!account) return 'no_account';
      const apiKey = tx.create(ApiKeyEntity, { ...input.key, account, createdAt: input.at, revokedAt: null });
      await tx.flush();
      await tx.insert(
        AuditEventEntity,
        auditEvent(
          { accountId: account.id, kind: 'key_created', actor: input.audit.actor, ip: input.audit.ip, detail: { key_id: apiKey.id, prefix: apiKey.prefix, name: apiKey.name } },
          input.audit.at,
        ),
      );
      return { account, apiKey };
    });
  }

  /** Every key with its account, oldest first. */
  list(): Promise<ApiKey[]> {
    return this.em.fork().find(ApiKeyEntity, {}, { populate: ['account'], orderBy: { createdAt: 'asc' } });
  }

  /** Marks an active key (of `accountId`, when given) revoked, with its audit event; false when there is none. */
  async revoke(keyId: string, at: Date, by: { accountId?: number; actor: Actor; ip?: string }): Promise<boolean> {
    return this.em.fork().transactional(async (tx) => {
      const key = await tx.findOne(
        ApiKeyEntity,
        { id: keyId, revokedAt: null, ...(by.accountId === undefined ? {} : { account: by.accountId }) },
        { lockMode: LockMode.PESSIMISTIC_WRITE },
      );
      if (!key) return false;
      key.revokedAt = at;
      await tx.flush();
      await tx.insert(
        AuditEventEntity,
        auditEvent({ accountId: key.account.id, kind: 'key_revoked', actor: by.actor, ip: by.ip, detail: { key_id: keyId, prefix: key.prefix, name: key.name } }, at),
      );
      return true;
    });
  }
}

/** A key's row as the per-request lookup reads it: its columns as the entities name them. */
export type KeyOfCaller = Pick<ApiKey, 'name' | 'hash'> & { keyId: ApiKey['id']; accountId: Account['id'] } & Pick<Account, 'role' | 'licences'>;

/** The active key whose hash is `hash`, with its account: on every keyed request (a named statement). */
export async function findKeyByHash(db: Queryable, hash: Buffer): Promise<KeyOfCaller | undefined> {
  const { rows } = await db.query<KeyOfCaller>({
    name: 'authenticate-key',
    text: `select k.id as "keyId", k.name, k.hash, a.id as "accountId", a.role, a.licences
             from api_keys k join accounts a on a.id = k.account_id
            where k.hash = $1 and k.revoked_at is null`,
    values: [hash],
  });
  return rows[0];
}

/**
 * Revokes every active key of an account, in `db`'s transaction, each recorded in the account's
 * audit trail with `reason` (a password reset that asked for it, the operator clearing a
 * password); how many it revoked.
 */
export async function revokeAccountKeys(db: Queryable, accountId: number, at: Date, by: { actor: Actor; ip?: string; reason: string }): Promise<number> {
  const { rows } = await db.query<{ id: string; prefix: string; name: string }>(
    'update api_keys set revoked_at = $2 where account_id = $1 and revoked_at is null returning id, prefix, name',
    [accountId, at],
  );
  for (const row of rows) {
    await recordAudit(db, { accountId, kind: 'key_revoked', actor: by.actor, ip: by.ip, detail: { key_id: row.id, prefix: row.prefix, name: row.name, reason: by.reason } }, at);
  }
  return rows.length;
}
