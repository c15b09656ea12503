import type { Role } from '../roles.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import { type AuditEntry } from '../audit/trail.js';
import { recordAudit } from '../audit/repository.js';

/** An account's web login. */
export interface LoginRow {
  id: number;
  email: string;
  password_hash: string | null;
  email_verified_at: Date | null;
}

export type LinkPurpose = 'verify' | 'reset';

export interface OperatorRow {
  id: number;
  email: string;
  has_password: boolean;
  email_verified_at: Date | null;
}

/**
 * The statements of accounts on the web: the accounts' logins, their one-time links
 * (account_tokens, by hash) and the invite codes (by hash). Sessions, throttles and the audit
 * trail have their own stores beside it (sessions.repository.ts, throttle.repository.ts; the audit trail is src/audit/).
 */
/** How long a web sign-up may stay unconfirmed before the purge deletes it. */
export const UNVERIFIED_ACCOUNT_DAYS = 30;

export class AccountRepository {
  constructor(private readonly pool: Pool) {}

  /** Runs `work` in one transaction; the methods below take its client as `db`. */
  inTransaction<T>(work: (db: Queryable) => Promise<T>): Promise<T> {
    return transaction(this.pool, work);
  }

  /** One sign-up per address at a time (until the transaction ends). */
  async lockSignup(email: string, db: Queryable): Promise<void> {
    await db.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`signup:${email}`]);
  }

  /** The web login of an address, else an account the operator made with it (it may set a password by reset). */
  async loginOf(email: string, db: Queryable = this.pool): Promise<LoginRow | undefined> {
    const { rows } = await db.query<LoginRow>(
      `select id, email, password_hash, email_verified_at from accounts where lower(email) = $1
        order by (password_hash is null), id limit 1`,
      [email],
    );
    return rows[0];
  }

  /** An account's role and licences. */
  async roleOf(accountId: number): Promise<{ role: Role; licences: number } | undefined> {
    const { rows } = await this.pool.query<{ role: Role; licences: number }>('select role, licences from accounts where id = $1', [accountId]);
    return rows[0];
  }

  async emailOf(accountId: number): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ email: string }>('select email from accounts where id = $1', [accountId]);
    return rows[0]?.email;
  }

  /** An account by id or (lower-case) address, for the operator: whether it has a password, and since when its address is confirmed. */
  async find(by: { email: string } | { id: number }): Promise<OperatorRow | undefined> {
    const columns = 'id, email, password_hash is not null as has_password, email_verified_at';
    const { rows } =
      'email' in by
        ? await this.pool.query<OperatorRow>(`select ${columns} from accounts where lower(email) = $1 order by (password_hash is null), id limit 1`, [by.email])
        : await this.pool.query<OperatorRow>(`select ${columns} from accounts where id = $1`, [by.id]);
    return rows[0];
  }

  /** A new Free account with a password; its id. */
  async insertLogin(email: string, passwordHash: string, at: Date, db: Queryable): Promise<number> {
    const { rows } = await db.query<{ id: number }>(
      `insert into accounts (email, role, licences, created_at, password_hash) values ($1, 'free', 1, $2, $3) returning id`,
      [email, at, passwordHash],
    );
    return rows[0]!.id;
  }

  async markVerified(accountId: number, at: Date, db: Queryable = this.pool): Promise<void> {
    await db.query('update accounts set email_verified_at = coalesce(email_verified_at, $2) where id = $1', [accountId, at]);
  }

  /** Replaces a password hash unless it changed meanwhile. */
  async rehash(accountId: number, previous: string, next: string): Promise<void> {
    await this.pool.query('update accounts set password_hash = $3 where id = $1 and password_hash = $2', [accountId, previous, next]);
  }

  /** Forgets an account's password: it signs in again only after a reset link sets a new one. */
  async clearPassword(accountId: number, db: Queryable): Promise<void> {
    await db.query('update accounts set password_hash = null where id = $1', [accountId]);
  }

  /** A new password from a reset link, which also proves the address. */
  async resetPassword(accountId: number, passwordHash: string, at: Date, db: Queryable): Promise<void> {
    await db.query('update accounts set password_hash = $2, email_verified_at = coalesce(email_verified_at, $3) where id = $1', [accountId, passwordHash, at]);
  }

  /** The account's role and licences, locked for a change in `db`'s transaction. */
  async roleForUpdate(accountId: number, db: Queryable): Promise<{ role: Role; licences: number } | undefined> {
    const { rows } = await db.query<{ role: Role; licences: number }>('select role, licences from accounts where id = $1 for update', [accountId]);
    return rows[0];
  }

  async setRole(accountId: number, role: Role, licences: number, db: Queryable): Promise<void> {
    await db.query('update accounts set role = $2, licences = $3 where id = $1', [accountId, role, licences]);
  }

  async setSenderName(accountId: number, name: string | null, db: Queryable): Promise<void> {
    await db.query('update accounts set sender_name = $2 where id = $1', [accountId, name]);
  }

  /** A new link of a purpose for the account, replacing the older live ones of that purpose. */
  async replaceLink(accountId: number, purpose: LinkPurpose, hash: Buffer, at: Date, expiresAt: Date, db: Queryable): Promise<void> {
    await db.query('update account_tokens set used_at = $3 where account_id = $1 and purpose = $2 and used_at is null', [accountId, purpose, at]);
    await db.query('insert into account_tokens (token_hash, account_id, purpose, created_at, expires_at) values ($1, $2, $3, $4, $5)', [
      hash,
      accountId,
      purpose,
      at,
      expiresAt,
    ]);
  }

  /**
   * Whether this transaction may decide on a new link of a purpose for the account now: false
   * while another transaction is deciding (it holds the lock until it ends), which then stands
   * for both. Without waiting, so that many requests at once never queue on it.
   */
  async tryLockLinks(accountId: number, purpose: LinkPurpose, db: Queryable): Promise<boolean> {
    const { rows } = await db.query<{ locked: boolean }>('select pg_try_advisory_xact_lock(hashtextextended($1, 0)) as locked', [`links:${purpose}:${accountId}`]);
    return rows[0]!.locked;
  }

  /** When the account's newest link of a purpose was made (used, replaced or live), if it has one. */
  async newestLinkAt(accountId: number, purpose: LinkPurpose, db: Queryable): Promise<Date | undefined> {
    const { rows } = await db.query<{ at: Date | null }>('select max(created_at) as at from account_tokens where account_id = $1 and purpose = $2', [accountId, purpose]);
    return rows[0]?.at ?? undefined;
  }

  /** A live link by its hash; `consume` uses it up (once, whoever asks at the same time). */
  async liveLink(hash: Buffer, purpose: LinkPurpose, at: Date, consume: boolean, db: Queryable = this.pool) {
    const { rows } = consume
      ? await db.query<{ account_id: number; token_hash: Buffer }>(
          `update account_tokens set used_at = $3 where token_hash = $1 and purpose = $2 and used_at is null and expires_at > $3
           returning account_id, token_hash`,
          [hash, purpose, at],
        )
      : await db.query<{ account_id: number; token_hash: Buffer }>(
          'select account_id, token_hash from account_tokens where token_hash = $1 and purpose = $2 and used_at is null and expires_at > $3',
          [hash, purpose, at],
        );
    return rows[0];
  }

  async insertInvite(hash: Buffer, note: string, at: Date, expiresAt: Date): Promise<void> {
    await this.pool.query('insert into invites (code_hash, note, created_at, expires_at) values ($1, $2, $3, $4)', [hash, note, at, expiresAt]);
  }

  async inviteLive(hash: Buffer, at: Date): Promise<boolean> {
    const { rows } = await this.pool.query('select 1 from invites where code_hash = $1 and used_at is null and expires_at > $2', [hash, at]);
    return rows.length === 1;
  }

  /** Uses a live invite up for an account; false when it is not live (any more). */
  async useInvite(hash: Buffer, accountId: number, at: Date, db: Queryable): Promise<boolean> {
    const { rowCount } = await db.query(
      'update invites set used_at = $2, used_by = $3 where code_hash = $1 and used_at is null and expires_at > $2',
      [hash, at, accountId],
    );
    return rowCount === 1;
  }

  /** An event of the account's audit trail, in `db`'s transaction when given. */
  audit(entry: AuditEntry, at: Date, db: Queryable = this.pool): Promise<void> {
    return recordAudit(db, entry, at);
  }

  /**
   * Web sign-ups whose address was never confirmed, made before `before` (UNVERIFIED_ACCOUNT_DAYS
   * ago). Such an account cannot sign in, so it holds no key, session or payment; without this
   * every address anyone ever typed into the sign-up form would stay an account forever, and an
   * address registered by a stranger would stay theirs. Accounts the CLI made (no password) stay.
   */
  async purgeUnverified(before: Date, db: Queryable = this.pool): Promise<number> {
    const { rowCount } = await db.query(
      `delete from accounts a
        where a.password_hash is not null and a.email_verified_at is null and a.created_at < $1
          and not exists (select 1 from api_keys k where k.account_id = a.id)`,
      [before],
    );
    return rowCount ?? 0;
  }

  /** Used and expired links, and invites that expired unused (the scheduled purge). */
  async purgeLinks(at: Date, db: Queryable = this.pool): Promise<number> {
    const { rowCount: tokens } = await db.query('delete from account_tokens where expires_at <= $1 or used_at is not null', [at]);
    const { rowCount: invites } = await db.query('delete from invites where expires_at <= $1 and used_at is null', [at]);
    return (tokens ?? 0) + (invites ?? 0);
  }
}
