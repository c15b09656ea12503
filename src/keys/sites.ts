import { before, DAY_MS, utcDay, type Clock } from '../clock.js';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import { DomainError } from '../errors.js';
import type { Caller } from './service.js';
import { sitesPerDay } from './roles.js';

/** The longest host name DNS allows; a URL with a longer one names no site. */
export const SITE_HOST_MAX = 253;

/** What a `site_url` must be, for the services that refuse one that is not (422). */
export const SITE_URL_RULE = `site_url must be an absolute http or https URL whose host name has at most ${SITE_HOST_MAX} characters`;

/** The days of sites key_sites keeps: the dashboard shows the last 30 days; older rows are purged. */
export const KEY_SITES_DAYS = 30;

/** The first day of sites the dashboard shows at `now` (`YYYY-MM-DD`); older days are purged. */
export const firstShownSiteDay = (now: Date): string => utcDay(before(now, KEY_SITES_DAYS * DAY_MS));

/**
 * The site a request is made for, from a URL (`X-Rip-Site`, `site_url`): its host name in
 * lower case without `www.`, so that every spelling of one site counts once; undefined when
 * the text is not an absolute http(s) URL or its host name is longer than DNS allows.
 */
export function siteHost(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.hostname === '') return undefined;
  if (parsed.hostname.length > SITE_HOST_MAX) return undefined;
  return parsed.hostname.toLowerCase().replace(/^www\./, '');
}

export interface SiteUse {
  /** The site was taken (known today, or new and within the limit). */
  allowed: boolean;
  /** Distinct sites the key was taken for today, this one included when it was taken. */
  used: number;
  /** -1: unlimited. */
  limit: number;
}

/** The refusal of a new site past the key's limit (403 `domain_limit_exceeded`). */
export function siteRefused(caller: Caller, site: string, use: SiteUse): DomainError {
  return new DomainError(
    'forbidden',
    `This key has been used from ${use.used} sites today, the most its ${caller.role} role allows; ${site} was not taken. More sites can be used tomorrow (UTC).`,
    { code: 'domain_limit_exceeded' },
  );
}

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
