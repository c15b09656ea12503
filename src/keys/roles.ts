import type { Role } from '../db/entities.js';
import type { operations } from '../../generated/api.js';
import type { operations as abuseipdbOperations } from '../../generated/abuseipdb-api.js';

/**
 * The one table of who may do what and what it costs. Authentication, access checks, metering,
 * rate-limit headers and /verify-key all read it; no handler checks a role itself. It covers the
 * operations called with this server's API keys: /api/v2's and the AbuseIPDB adapter's, which
 * charge the same counters as their counterparts. (CrowdSec bouncers have keys of their own.)
 */
export type OperationId = keyof operations | keyof abuseipdbOperations;

export type Feature =
  | 'check'
  | 'report'
  | 'verify'
  | 'blacklist'
  | 'bulk_check'
  | 'trends'
  | 'reports_detail'
  | 'bulk_report'
  | 'relay'
  | 'feedback';

/** The daily counters. `public` is the per-source-IP allowance of callers without a key. */
export type Counter = 'check' | 'report' | 'public';

export interface OperationRule {
  /** undefined: public, a key is optional. Otherwise a key whose role has this feature. */
  feature?: Feature;
  /** What one call charges, with and without a key; undefined charges nothing. */
  chargeWithKey?: Exclude<Counter, 'public'>;
  chargeWithoutKey?: 'public';
  /** Refused with 429 once the caller's per-IP allowance is used up, though never charged. */
  gatedByPublicLimit?: boolean;
  /**
   * The handler charges, after its own checks, as many units as the request holds (reports,
   * valid IPs): nothing is charged for a request it refuses with 422.
   */
  chargedByHandler?: boolean;
  /** Relay operations answer without the envelope, with relay error codes. */
  relay?: boolean;
  /**
   * Whether the site a keyed request names (`X-Rip-Site`) is counted and bounded here (the
   * default for keyed envelope operations). /verify-key never refuses for it, so that a client
   * can read its `domains`; the relay bounds the `site_url` of its sends itself.
   */
  countsSite?: boolean;
}

const publicCharged: OperationRule = { chargeWithKey: 'check', chargeWithoutKey: 'public' };

export const OPERATIONS: Record<OperationId, OperationRule> = {
  checkIpPublic: publicCharged,
  getPublicStats: publicCharged,
  searchIpsPublic: publicCharged,
  getAttackMapData: publicCharged,
  listCategories: { chargeWithoutKey: 'public' },
  getStatistics: { gatedByPublicLimit: true },
  listBlacklistCategories: {},
  getBlacklistStats: {},
  checkIp: { feature: 'check', chargeWithKey: 'check' },
  checkBlock: { feature: 'check', chargeWithKey: 'check', chargedByHandler: true },
  submitWhitelistFeedback: { feature: 'feedback', chargeWithKey: 'report', chargedByHandler: true },
  getNotificationConfig: { feature: 'verify' },
  saveNotificationConfig: { feature: 'verify' },
  getRuleset: { feature: 'verify' },
  reportIp: { feature: 'report', chargeWithKey: 'report', chargedByHandler: true },
  verifyKey: { feature: 'verify', countsSite: false },
  getBlacklist: { feature: 'blacklist' },
  listReports: { feature: 'reports_detail' },
  getTrends: { feature: 'trends' },
  bulkCheckIps: { feature: 'bulk_check', chargeWithKey: 'check', chargedByHandler: true },
  bulkReportIps: { feature: 'bulk_report', chargeWithKey: 'report', chargedByHandler: true },
  getRelayQuota: { feature: 'relay', relay: true, countsSite: false },
  sendRelayMail: { feature: 'relay', relay: true, countsSite: false },
  sendRelaySms: { feature: 'relay', relay: true, countsSite: false },
  getBlacklistDetailed: { feature: 'blacklist' },
  getBlacklistCombined: { feature: 'blacklist' },
  exportBlacklistGit: { feature: 'blacklist' },
  // AbuseIPDB API v2 (src/abuseipdb/): the rules of the counterpart in /api/v2.
  abuseipdbCheck: { feature: 'check', chargeWithKey: 'check', countsSite: false },
  abuseipdbReport: { feature: 'report', chargeWithKey: 'report', chargedByHandler: true, countsSite: false },
  abuseipdbBlacklist: { feature: 'blacklist', countsSite: false },
  abuseipdbBulkReport: { feature: 'bulk_report', chargeWithKey: 'report', chargedByHandler: true, countsSite: false },
  abuseipdbCheckBlock: { feature: 'check', chargeWithKey: 'check', chargedByHandler: true, countsSite: false },
  abuseipdbClearAddress: { feature: 'report', countsSite: false },
};

export interface RolePolicy {
  features: ReadonlySet<Feature>;
  /** Per UTC day and per licence; null is unlimited. */
  checksPerDay: number | null;
  reportsPerDay: number | null;
  /** Distinct sites (`site_url` host names) one key may be used for per UTC day, per licence; null is unlimited. */
  sitesPerDay: number | null;
}

const base: Feature[] = ['check', 'report', 'verify'];
const contributor: Feature[] = [...base, 'blacklist', 'feedback'];
const professional: Feature[] = [...contributor, 'bulk_check', 'trends', 'reports_detail', 'relay'];

export const ROLE_POLICIES: Record<Role, RolePolicy> = {
  free: { features: new Set(base), checksPerDay: 1_000, reportsPerDay: 50, sitesPerDay: 1 },
  contributor: { features: new Set(contributor), checksPerDay: 5_000, reportsPerDay: 200, sitesPerDay: 3 },
  professional: { features: new Set(professional), checksPerDay: 25_000, reportsPerDay: 1_000, sitesPerDay: 10 },
  business: { features: new Set(professional), checksPerDay: 100_000, reportsPerDay: 5_000, sitesPerDay: 25 },
  enterprise: { features: new Set([...professional, 'bulk_report']), checksPerDay: null, reportsPerDay: null, sitesPerDay: null },
  // Automated reporters: everything an enterprise key reads and reports, but no relay and no
  // positive feedback (a machine never unblocks an address a person looked at).
  honeypot: {
    features: new Set([...base, 'blacklist', 'bulk_check', 'trends', 'reports_detail', 'bulk_report']),
    checksPerDay: null,
    reportsPerDay: null,
    sitesPerDay: null,
  },
};

/** Callers without a key: this many charged calls per source IP (IPv6: per /64) per UTC day. */
export const PUBLIC_DAILY_LIMIT = 100;

/** The daily limit of a counter for a role and licence count; -1 means unlimited. */
export function dailyLimit(role: Role, licences: number, counter: Exclude<Counter, 'public'>): number {
  const policy = ROLE_POLICIES[role];
  const perLicence = counter === 'check' ? policy.checksPerDay : policy.reportsPerDay;
  return perLicence === null ? -1 : perLicence * (role === 'business' ? licences : 1);
}

/** Distinct sites a key may be used for per UTC day; -1 means unlimited. */
export function sitesPerDay(role: Role, licences: number): number {
  const perLicence = ROLE_POLICIES[role].sitesPerDay;
  return perLicence === null ? -1 : perLicence * (role === 'business' ? licences : 1);
}

export function hasFeature(role: Role, feature: Feature): boolean {
  return ROLE_POLICIES[role].features.has(feature);
}

/** The `permissions` object of /verify-key. */
export function permissionsOf(role: Role) {
  return {
    check: hasFeature(role, 'check'),
    report: hasFeature(role, 'report'),
    bulk_check: hasFeature(role, 'bulk_check'),
    bulk_report: hasFeature(role, 'bulk_report'),
    reports_detail: hasFeature(role, 'reports_detail'),
    trends: hasFeature(role, 'trends'),
  };
}
