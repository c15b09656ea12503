import { utcDay, type Clock } from '../clock.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import type { Caller } from './service.js';
import { sitesPerDay } from '../roles.js';
import { firstShownSiteDay, type SiteUse } from './sites.js';

/** Sites a process remembers as taken, per key and day, so that repeat requests cost no I/O. */
const REMEMBERED_MAX = 50_000;

/**
 * The sites each key is used from per UTC day (the `domains` of /verify-key): counted from
 * `X-Rip-Site` on any request and `site_url` on relay sends and notification configurations,
 * and bounded by the role's number of sites per day. Taking a site is exact across processes
 * (an advisory lock per key); a site a process has seen taken today costs nothing more.
 *
 * A refusal for the limit is recorded once per key and day, whatever the number of hosts tried:
 * the first refused site gets a `refused` row, and every later refusal of the day only counts
 * on it (`refusals`). So the key's `domains` can say it was tried on more sites than it may be
 * used on (`used` = taken sites + 1), a refused site never counts against the limit, and a key
 * that names a new host in every request adds no rows.
 */
export class KeySites {
  private readonly remembered = new Set<string>();

  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
  ) {}

  /** Takes a site for the key today, in a transaction of its own. */
  async use(caller: Caller, site: string): Promise<SiteUse> {
    const limit = sitesPerDay(caller.role, caller.licences);
    const day = utcDay(this.clock.now());
    const memo = `${caller.keyId}|${day}|${site}`;
    if (this.remembered.has(memo)) return { allowed: true, used: -1, limit };
    const result = await transaction(this.pool, async (client) => {
      const use = await this.useIn(client, caller, site);
      if (!use.allowed) await this.recordRefusedIn(client, caller, site);
      return use;
    });
    if (result.allowed) {
      if (this.remembered.size >= REMEMBERED_MAX) this.remembered.clear();
      this.remembered.add(memo);
    }
    return result;
  }

  /** Takes a site for the key today inside the caller's transaction. */
  private async useIn(db: Queryable, caller: Caller, site: string): Promise<SiteUse> {
    const limit = sitesPerDay(caller.role, caller.licences);
    const now = this.clock.now();
    await db.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`key-sites:${caller.keyId}`]);
    const { rows } = await db.query<{ used: number; known: boolean | null }>(
      `select count(*) filter (where not refused)::int as used, bool_or(site = $3 and not refused) as known
         from key_sites where key_id = $1 and day = $2::date`,
      [caller.keyId, utcDay(now), site],
    );
    const { used, known } = rows[0]!;
    if (known) return { allowed: true, used, limit };
    if (limit >= 0 && used >= limit) return { allowed: false, used, limit };
    // The site refused earlier today is taken now (the key's role or licences were raised).
    await db.query(
      `insert into key_sites (key_id, day, site, first_seen) values ($1, $2::date, $3, $4)
       on conflict (key_id, day, site) do update set refused = false`,
      [caller.keyId, utcDay(now), site, now],
    );
    return { allowed: true, used: used + 1, limit };
  }

  /**
   * Records a refusal of the key today: the day's refused row (the first refused site) counts
   * it, so there is at most one such row per key and day (`key_sites_refused_idx`).
   */
  private async recordRefusedIn(db: Queryable, caller: Caller, site: string): Promise<void> {
    const now = this.clock.now();
    await db.query(
      `insert into key_sites (key_id, day, site, first_seen, refused, refusals) values ($1, $2::date, $3, $4, true, 1)
       on conflict (key_id, day) where refused do update set refusals = key_sites.refusals + 1`,
      [caller.keyId, utcDay(now), site, now],
    );
  }

  /**
   * The key's sites today and its limit: `used` counts every distinct site the key was used
   * from, and one more once a site was refused, so that it exceeds `limit` exactly when a site
   * was refused.
   */
  async today(caller: Caller): Promise<{ used: number; limit: number }> {
    const { rows } = await this.pool.query<{ used: number }>({
      name: 'key-sites-today',
      text: 'select count(*)::int as used from key_sites where key_id = $1 and day = $2::date',
      values: [caller.keyId, utcDay(this.clock.now())],
    });
    return { used: rows[0]!.used, limit: sitesPerDay(caller.role, caller.licences) };
  }

  /** Deletes the days the dashboard no longer shows; the number of rows deleted. */
  async purge(db: Queryable = this.pool): Promise<number> {
    const { rowCount } = await db.query('delete from key_sites where day < $1::date', [firstShownSiteDay(this.clock.now())]);
    return rowCount ?? 0;
  }
}
