import type { Clock } from '../clock.js';
import type { Role } from '../db/entities.js';
import type { Pool } from '../db/pool.js';
import type { Caller } from '../keys/keys.js';
import { dailyLimit, hasFeature, sitesPerDay } from '../keys/roles.js';
import { firstShownSiteDay } from '../keys/sites.js';
import type { UsageReader } from '../keys/usage.js';
import { relayTierOf } from '../relay/policy.js';
import type { RelayService } from '../relay/service.js';
import type { AuditRow, AuditTrail } from './audit.js';

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

/** Keys an account may hold at once from the dashboard; the operator's CLI is not bound by it. */
export const ACTIVE_KEYS_MAX = 20;

/** Business and up see their audit trail (the role table's promise). */
export const hasAuditTrail = (role: Role) => hasFeature(role, 'audit_trail');

/** The account as the API sees it, for the services that take a caller. */
export const callerOf = (account: AccountRow): Caller => ({
  keyId: '',
  keyName: '',
  accountId: account.id,
  role: account.role,
  licences: account.licences,
});

/**
 * What the dashboard shows, read from the same services and tables the API uses: the daily
 * counters, the relay's quota blocks and ledger, key_sites, reports, the audit trail.
 */
export class Dashboard {
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly usage: UsageReader,
    private readonly relay: RelayService,
    private readonly audit: AuditTrail,
  ) {}

  async account(accountId: number): Promise<AccountRow | undefined> {
    const { rows } = await this.pool.query<AccountRow>(
      'select id, email, role, licences, sender_name from accounts where id = $1 and email_verified_at is not null',
      [accountId],
    );
    return rows[0];
  }

  async keys(accountId: number): Promise<KeyRow[]> {
    const { rows } = await this.pool.query<KeyRow>(
      `select id, prefix, name, created_at, last_used_at, revoked_at from api_keys where account_id = $1
        order by revoked_at is not null, created_at desc limit 100`,
      [accountId],
    );
    return rows;
  }

  async overview(account: AccountRow) {
    const caller = callerOf(account);
    const since = firstShownSiteDay(this.clock.now());
    const relayTier = relayTierOf(account.role);
    const [today, keys, sites, reports, relay, audit] = await Promise.all([
      this.usage.today(caller),
      this.keys(account.id),
      this.pool.query<{ prefix: string; name: string; site: string; last_day: string; days: number }>(
        `select k.prefix, k.name, s.site, max(s.day)::text as last_day, count(*)::int as days
           from key_sites s join api_keys k on k.id = s.key_id
          where k.account_id = $1 and s.day >= $2::date and not s.refused
          group by k.prefix, k.name, s.site order by last_day desc, s.site limit 100`,
        [account.id, since],
      ),
      this.pool.query<{ ip: string; categories: number[]; comment: string; reported_at: Date; aggregation_count: number }>(
        `select ip, categories, comment, reported_at, aggregation_count from reports
          where account_id = $1 order by reported_at desc limit 20`,
        [account.id],
      ),
      relayTier ? this.relay.quota(caller, relayTier) : Promise.resolve(undefined),
      hasAuditTrail(account.role) ? this.audit.list(account.id, { limit: 20 }) : Promise.resolve([] as AuditRow[]),
    ]);
    return {
      limits: {
        checks: dailyLimit(account.role, account.licences, 'check'),
        reports: dailyLimit(account.role, account.licences, 'report'),
        sites: sitesPerDay(account.role, account.licences),
      },
      today,
      keys,
      sites: sites.rows,
      reports: reports.rows,
      relay,
      bundleEligible: relayTier?.bundleEligible ?? false,
      audit,
      hasAudit: hasAuditTrail(account.role),
    };
  }
}
