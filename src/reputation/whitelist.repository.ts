import type { EntityManager } from '@mikro-orm/postgresql';
import { WhitelistRangeEntity } from '../db/entities/reputation.js';
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
    return ranges.map((r) => ({ range: r.range, note: r.note, createdAt: r.createdAt.toISOString() }));
  }
}
