import type { EntityManager } from '@mikro-orm/postgresql';
import { WhitelistRangeEntity } from '../db/entities/reputation.js';
import type { Queryable } from '../db/pool.js';
import { normaliseRange, type WhitelistEntry } from './whitelist.js';

/**
 * The operator's whitelist, over its entity: addresses and ranges that always score 0 and never
 * appear on the blacklist. Lookups test it in SQL (`range >>= ip`, reputation/repository.ts), so
 * every process sees a change at once.
 */
export class Whitelist {
  constructor(private readonly em: EntityManager) {}

  async add(input: string, note = ''): Promise<{ range: string; added: boolean }> {
    const range = normaliseRange(input);
    const inserted = await this.em.fork().createQueryBuilder(WhitelistRangeEntity).insert({ range, note }).onConflict('range').ignore().execute('run');
    return { range, added: inserted.affectedRows === 1 };
  }

  async remove(input: string): Promise<{ range: string; removed: boolean }> {
    const range = normaliseRange(input);
    const removed = await this.em.fork().nativeDelete(WhitelistRangeEntity, { range });
    return { range, removed: removed === 1 };
  }

  async list(): Promise<WhitelistEntry[]> {
    const ranges = await this.em.fork().find(WhitelistRangeEntity, {}, { orderBy: { range: 'asc' } });
    return ranges.map((r) => ({ range: r.range, note: r.note, createdAt: r.createdAt.toISOString(), expiresAt: r.expiresAt ? r.expiresAt.toISOString() : null }));
  }
}

/**
 * Whitelists a range until `until` (an approved delisting), on the caller's transaction. An entry
 * the operator made without an end keeps having none; one with an end keeps the later of the two.
 */
export async function whitelistUntil(db: Queryable, range: string, note: string, until: Date): Promise<void> {
  await db.query(
    `insert into whitelist (range, note, expires_at) values ($1::cidr, $2, $3)
     on conflict (range) do update
       set note = excluded.note,
           expires_at = case when whitelist.expires_at is null then null else greatest(whitelist.expires_at, excluded.expires_at) end`,
    [range, note, until],
  );
}

/** Deletes the entries whose time is over (the hourly purge); their addresses are listed again at the next regeneration if still reported. */
export async function purgeExpiredWhitelist(db: Queryable, now: Date): Promise<number> {
  const { rowCount } = await db.query('delete from whitelist where expires_at is not null and expires_at <= $1', [now]);
  return rowCount ?? 0;
}
