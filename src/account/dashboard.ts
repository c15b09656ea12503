import type { Clock } from '../clock.js';
import type { Role } from '../roles.js';
import type { Pool } from '../db/pool.js';
import type { Caller } from '../keys/service.js';
import { dailyLimit, hasFeature, sitesPerDay } from '../roles.js';
import { firstShownSiteDay } from '../keys/sites.js';
import type { UsageReader } from '../keys/usage.repository.js';
import { relayTierOf } from '../relay/policy.js';
import type { RelayService } from '../relay/service.js';
import type { AuditRow } from '../audit/trail.js';
import type { AuditTrail } from '../audit/repository.js';
import { DashboardReads, type AccountRow, type KeyRow } from './dashboard.repository.js';

export type { AccountRow, KeyRow };

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
  private readonly reads: DashboardReads;

  constructor(
    pool: Pool,
    private readonly clock: Clock,
    private readonly usage: UsageReader,
    private readonly relay: RelayService,
    private readonly audit: AuditTrail,
  ) {
    this.reads = new DashboardReads(pool);
  }

  account(accountId: number): Promise<AccountRow | undefined> {
    return this.reads.account(accountId);
  }

  keys(accountId: number): Promise<KeyRow[]> {
    return this.reads.keys(accountId);
  }

  async overview(account: AccountRow) {
    const caller = callerOf(account);
    const since = firstShownSiteDay(this.clock.now());
    const relayTier = relayTierOf(account.role);
    const [today, keys, sites, reports, relay, audit] = await Promise.all([
      this.usage.today(caller),
      this.keys(account.id),
      this.reads.sites(account.id, since),
      this.reads.reports(account.id),
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
      sites,
      reports,
      relay,
      bundleEligible: relayTier?.bundleEligible ?? false,
      audit,
      hasAudit: hasAuditTrail(account.role),
    };
  }
}
