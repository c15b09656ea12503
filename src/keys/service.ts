import { hash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Queryable } from '../db/pool.js';
import { systemClock, type Clock } from '../clock.js';
import { LICENCES, ROLE_POLICIES, ROLES, type Role } from '../roles.js';
import type { Actor } from '../audit/trail.js';
import { findKeyByHash, KeyRepository } from './repository.js';
import { isPrintableLine, withoutUnprintable } from '../text.js';

/**
 * API keys: `trs_` followed by 32 random bytes in base64url (256 bits of entropy). Only the
 * SHA-256 of a key is stored. A slow password hash buys nothing at this entropy: nobody can
 * enumerate 2^256 candidates, and a fast hash keeps the per-request lookup cheap.
 */
export const KEY_PREFIX = 'trs_';
const KEY_PATTERN = /^trs_[A-Za-z0-9_-]{43}$/;
const SHOWN_PREFIX_LENGTH = KEY_PREFIX.length + 8;

/** What a key is stored as: its SHA-256. */
const KEY_HASH = 'sha256';

export function hashKey(key: string): Buffer {
  return hash(KEY_HASH, key, 'buffer');
}

export function looksLikeKey(key: string): boolean {
  return KEY_PATTERN.test(key);
}

export interface Caller {
  keyId: string;
  /** The key's name (empty when it has none). */
  keyName: string;
  accountId: number;
  role: Role;
  licences: number;
}

export interface CreatedKey {
  accountId: number;
  keyId: string;
  key: string;
  prefix: string;
  name: string;
  role: Role;
  licences: number;
  email: string | null;
}

export interface KeyListing {
  keyId: string;
  prefix: string;
  name: string;
  accountId: number;
  role: Role;
  licences: number;
  email: string | null;
  createdAt: string;
  revokedAt: string | null;
}

export class KeyError extends Error {}

/** The longest key name. */
export const KEY_NAME_MAX = 100;
const MARKUP = /[<>]/;

/**
 * A key's name is a label (the site it is for): at most 100 characters on one line of printable
 * characters (src/text.ts: no control character, C1 and bidi controls included, which the CLI
 * would otherwise print raw), without `<` or `>` (it reaches the ReportedIP plugins' pages as
 * `keyName`). Returns the name trimmed.
 */
export function checkKeyName(input: string): string {
  const name = input.trim();
  if (name.length > KEY_NAME_MAX || !isPrintableLine(name) || MARKUP.test(name)) {
    throw new KeyError(`a key name is at most ${KEY_NAME_MAX} printable characters on one line, without < or >`);
  }
  return name;
}

/** A key's name as /verify-key shows it: a name given before the rule held loses what it breaks. */
export function shownKeyName(name: string): string {
  return withoutUnprintable(name).replace(/[<>]/g, '');
}

/** An account already holds as many active keys as it may (`create`'s `activeMax`). */
export class KeyLimitError extends KeyError {}

/** Business accounts hold 2 to 20 licences; every other role exactly one. */
export function checkLicences(role: Role, licences: number | undefined): number {
  if (!ROLE_POLICIES[role].licensed) {
    if (licences !== undefined && licences !== 1) throw new KeyError(`--licences applies to a licensed role (${licensedRoles()}) only`);
    return 1;
  }
  const count = licences ?? LICENCES.min;
  if (!Number.isInteger(count) || count < LICENCES.min || count > LICENCES.max) {
    throw new KeyError(`${role} accounts hold ${LICENCES.min} to ${LICENCES.max} licences`);
  }
  return count;
}

const licensedRoles = () => ROLES.filter((r) => ROLE_POLICIES[r].licensed).join(', ');

export class KeyService {
  private readonly keys: KeyRepository;

  constructor(
    em: EntityManager,
    private readonly clock: Clock = systemClock,
  ) {
    this.keys = new KeyRepository(em);
  }

  /** Creates an account with one key, or a further key for an existing account. */
  /** `audit`: who made the key, for the account's audit trail (the CLI unless said otherwise). */
  async create(input: {
    role: Role;
    licences?: number;
    email?: string;
    accountId?: number;
    name?: string;
    audit?: { actor: Actor; ip?: string; at?: Date };
    /**
     * With `accountId`: the most active keys the account may hold, this one included (the
     * dashboard's ACTIVE_KEYS_MAX); KeyLimitError when it holds that many already. Counted under a
     * lock of the account's keys, so keys made at the same moment never go past it.
     */
    activeMax?: number;
  }): Promise<CreatedKey> {
    const name = checkKeyName(input.name ?? '');
    const key = KEY_PREFIX + randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const made = await this.keys.create({
      account: input.accountId ?? { role: input.role, licences: checkLicences(input.role, input.licences), email: input.email ?? null },
      key: { id: randomUUID(), prefix: key.slice(0, SHOWN_PREFIX_LENGTH), name, hash: hashKey(key) },
      at: now,
      activeMax: input.activeMax,
      audit: { actor: input.audit?.actor ?? 'cli', ip: input.audit?.ip, at: input.audit?.at ?? now },
    });
    if (made === 'no_account') throw new KeyError(`no account ${input.accountId}`);
    if (made === 'limit') throw new KeyLimitError(`an account holds at most ${input.activeMax} active keys`);
    const { account, apiKey } = made;
    return {
      accountId: account.id,
      keyId: apiKey.id,
      key,
      prefix: apiKey.prefix,
      name: apiKey.name,
      role: account.role,
      licences: account.licences,
      email: account.email,
    };
  }

  async list(): Promise<KeyListing[]> {
    const keys = await this.keys.list();
    return keys.map((k) => ({
      keyId: k.id,
      prefix: k.prefix,
      name: k.name,
      accountId: k.account.id,
      role: k.account.role,
      licences: k.account.licences,
      email: k.account.email,
      createdAt: k.createdAt.toISOString(),
      revokedAt: k.revokedAt?.toISOString() ?? null,
    }));
  }

  /**
   * Marks a key revoked; returns false when there is no such key (of `accountId`, when given)
   * or it was revoked already.
   */
  async revoke(keyId: string, at: Date, options: { accountId?: number; actor?: Actor; ip?: string } = {}): Promise<boolean> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(keyId)) return false;
    return this.keys.revoke(keyId, at, { accountId: options.accountId, actor: options.actor ?? 'cli', ip: options.ip });
  }
}

/** Keys a process remembers at most; the oldest are forgotten first. */
const KEY_CACHE_ENTRIES = 10_000;

/**
 * Finds the caller of a presented key, on the hot path of every keyed request. A lookup is
 * remembered for `cacheMs` (KEY_CACHE_SECONDS, 10 s by default), keyed by the key's hash, so a
 * revoked key stops working on every process within that time. Unknown keys are remembered
 * too, so a flood of bad keys does not reach the database either.
 */
export class KeyAuthenticator {
  private readonly cache = new Map<string, { caller: Caller | undefined; until: number }>();

  constructor(
    private readonly db: Queryable,
    private readonly cacheMs = 0,
    private readonly clock: Clock = systemClock,
    /** Told of every successful authentication (the dashboard's "last used", keys/last-used.repository.ts). */
    private readonly onUse?: (keyId: string) => void,
  ) {}

  /** The caller a key belongs to, or undefined for a malformed, unknown or revoked key. */
  async authenticate(key: string): Promise<Caller | undefined> {
    const caller = await this.find(key);
    if (caller) this.onUse?.(caller.keyId);
    return caller;
  }

  private async find(key: string): Promise<Caller | undefined> {
    if (!looksLikeKey(key)) return undefined;
    if (this.cacheMs <= 0) return this.lookup(hashKey(key));
    // The cache is keyed by the hash in base64, made in one call (no hash object, no Buffer):
    // the lookup on every keyed request.
    const id = hash(KEY_HASH, key, 'base64');
    const now = this.clock.now().getTime();
    const hit = this.cache.get(id);
    if (hit && hit.until > now) return hit.caller;
    const caller = await this.lookup(Buffer.from(id, 'base64'));
    this.cache.delete(id);
    if (this.cache.size >= KEY_CACHE_ENTRIES) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(id, { caller, until: now + this.cacheMs });
    return caller;
  }

  private async lookup(hash: Buffer): Promise<Caller | undefined> {
    const row = await findKeyByHash(this.db, hash);
    if (!row || !timingSafeEqual(row.hash, hash)) return undefined;
    return { keyId: row.keyId, keyName: row.name, accountId: row.accountId, role: row.role, licences: row.licences };
  }
}
