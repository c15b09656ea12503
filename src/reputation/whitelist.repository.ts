import type { Queryable } from '../db/pool.js';
import { normaliseRange, type WhitelistEntry } from './whitelist.js';

/**
 * The operator's whitelist: addresses and ranges that always score 0 and never appear on the
 * blacklist. Lookups test it in SQL (`range >>= ip`), so every process sees a change at once.
 */
export class Whitelist {
  constructor(private readonly db: Queryable) {}

  async add(input: string, note = ''): Promise<{ range: string; added: boolean }> {
    const range = normaliseRange(input);
    const { rowCount } = await this.db.query(
      'insert into whitelist (range, note) values ($1::cidr, $2) on conflict (range) do nothing',
      [range, note],
    );
    return { range, added: rowCount === 1 };
  }

  async remove(input: string): Promise<{ range: string; removed: boolean }> {
    const range = normaliseRange(input);
    const { rowCount } = await this.db.query('delete from whitelist where range = $1::cidr', [range]);
    return { range, removed: rowCount === 1 };
  }

  async list(): Promise<WhitelistEntry[]> {
    const { rows } = await this.db.query<{ range: string; note: string; created_at: Date }>(
      'select range::text as range, note, created_at from whitelist order by range',
    );
    return rows.map((r) => ({ range: r.range, note: r.note, createdAt: r.created_at.toISOString() }));
  }
}
