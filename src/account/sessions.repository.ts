import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import { looksLikeToken, newToken, tokenHash } from './secrets.js';

export interface SessionLimits {
  /** A session ends this long after sign-in, used or not (SESSION_DAYS). */
  absoluteMs: number;
  /** …and this long after its last request (SESSION_IDLE_HOURS). */
  idleMs: number;
}

export interface Session {
  accountId: number;
  /** The session's own secret, binding its CSRF tokens (never shown, never logged). */
  token: string;
  createdAt: Date;
}

/** What a form's answer leaves for the page it redirects to: a new key, shown once. */
export interface Flash {
  kind: 'key-created';
  key: string;
  prefix: string;
  name: string | null;
}

/**
 * A flash is sealed (AES-256-GCM) under a key derived from the session's id, which the table
 * does not hold (only its SHA-256): a copy of the database reads no key out of it.
 */
const flashKey = (token: string) => createHmac('sha256', token).update('trs web flash v1').digest();

function seal(token: string, flash: Flash): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', flashKey(token), iv);
  const body = Buffer.concat([cipher.update(JSON.stringify(flash), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

function unseal(token: string, sealed: Buffer): Flash | undefined {
  try {
    const decipher = createDecipheriv('aes-256-gcm', flashKey(token), sealed.subarray(0, 12));
    decipher.setAuthTag(sealed.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8')) as Flash;
  } catch {
    return undefined;
  }
}

/** A session's last use is written at most this often, not on every page. */
const TOUCH_EVERY_MS = 5 * 60_000;

/**
 * Sessions in PostgreSQL, so that every process sees the same ones and a sign-out ends a
 * session everywhere at once. The cookie holds a random 256-bit id; the table holds its
 * SHA-256. A sign-in always makes a new id (no fixation); a password reset ends them all.
 */
export class Sessions {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly limits: SessionLimits,
  ) {}

  async create(accountId: number, ip: string, userAgent: string): Promise<Session> {
    const token = newToken();
    const now = this.clock.now();
    await this.db.query(
      `insert into web_sessions (id_hash, account_id, created_at, last_seen_at, expires_at, ip, user_agent)
       values ($1, $2, $3, $3, $4, $5, $6)`,
      [tokenHash(token), accountId, now, new Date(now.getTime() + this.limits.absoluteMs), ip.slice(0, 64), userAgent.slice(0, 200)],
    );
    return { accountId, token, createdAt: now };
  }

  /** The live session of a cookie value, or undefined (unknown, expired, idle too long). */
  async find(token: string | undefined): Promise<Session | undefined> {
    if (!looksLikeToken(token)) return undefined;
    const now = this.clock.now();
    const { rows } = await this.db.query<{ account_id: number; created_at: Date; last_seen_at: Date }>(
      `select account_id, created_at, last_seen_at from web_sessions
        where id_hash = $1 and expires_at > $2 and last_seen_at > $3`,
      [tokenHash(token), now, new Date(now.getTime() - this.limits.idleMs)],
    );
    const row = rows[0];
    if (!row) return undefined;
    if (now.getTime() - row.last_seen_at.getTime() > TOUCH_EVERY_MS) {
      await this.db.query('update web_sessions set last_seen_at = $2 where id_hash = $1', [tokenHash(token), now]);
    }
    return { accountId: row.account_id, token, createdAt: row.created_at };
  }

  /** Leaves a flash for the session's next page (replacing one it has not shown). */
  async setFlash(token: string, flash: Flash): Promise<void> {
    await this.db.query('update web_sessions set flash = $2 where id_hash = $1', [tokenHash(token), seal(token, flash)]);
  }

  /** The session's flash, taken: it is gone once read, whoever asks at the same time. */
  async takeFlash(token: string): Promise<Flash | undefined> {
    const { rows } = await this.db.query<{ flash: Buffer | null }>(
      `update web_sessions s set flash = null from (select id_hash, flash from web_sessions where id_hash = $1 for update) old
        where s.id_hash = old.id_hash and old.flash is not null returning old.flash`,
      [tokenHash(token)],
    );
    return rows[0]?.flash ? unseal(token, rows[0].flash) : undefined;
  }

  async destroy(token: string | undefined): Promise<void> {
    if (!looksLikeToken(token)) return;
    await this.db.query('delete from web_sessions where id_hash = $1', [tokenHash(token)]);
  }

  /** Ends every session of an account (a password reset; a role change leaves them); how many there were. */
  async destroyAll(accountId: number, db: Queryable = this.db): Promise<number> {
    const { rowCount } = await db.query('delete from web_sessions where account_id = $1', [accountId]);
    return rowCount ?? 0;
  }

  async purge(db: Queryable = this.db): Promise<number> {
    const now = this.clock.now();
    const { rowCount } = await db.query('delete from web_sessions where expires_at <= $1 or last_seen_at <= $2', [
      now,
      new Date(now.getTime() - this.limits.idleMs),
    ]);
    return rowCount ?? 0;
  }
}
