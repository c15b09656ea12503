import type { Role } from '../roles.js';
import type { Pool } from '../db/pool.js';

export interface AccountRow {
  id: number;
  email: string;
  role: Role;
  licences: number;
  sender_name: string | null;
}

export interface KeyRow {
  id: string;
  prefix: string;
  name: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/** The dashboard's reads of an account's own rows (its account, keys, sites and reports). */
export class DashboardReads {
  constructor(private readonly pool: Pool) {}

  /** A verified account. */
  async account(accountId: number): Promise<AccountRow | undefined> {
    const { rows } = await this.pool.query<AccountRow>(
      'select id, email, role, licences, sender_name from accounts where id = $1 and email_verified_at is not null',
      [accountId],
    );
    return rows[0];
  }

  /** Its keys, active ones first, newest first. */
  async keys(accountId: number): Promise<KeyRow[]> {
    const { rows } = await this.pool.query<KeyRow>(
      `select id, prefix, name, created_at, last_used_at, revoked_at from api_keys where account_id = $1
        order by revoked_at is not null, created_at desc limit 100`,
      [accountId],
    );
    return rows;
  }

  /** The sites its keys were used from since the day `since`, most recent first. */
  async sites(accountId: number, since: string) {
    const { rows } = await this.pool.query<{ prefix: string; name: string; site: string; last_day: string; days: number }>(
      `select k.prefix, k.name, s.site, max(s.day)::text as last_day, count(*)::int as days
         from key_sites s join api_keys k on k.id = s.key_id
        where k.account_id = $1 and s.day >= $2::date and not s.refused
        group by k.prefix, k.name, s.site order by last_day desc, s.site limit 100`,
      [accountId, since],
    );
    return rows;
  }

  /** Its 20 latest reports. */
  async reports(accountId: number) {
    const { rows } = await this.pool.query<{ ip: string; categories: number[]; comment: string; reported_at: Date; aggregation_count: number }>(
      `select ip, categories, comment, reported_at, aggregation_count from reports
        where account_id = $1 order by reported_at desc limit 20`,
      [accountId],
    );
    return rows;
  }
}
