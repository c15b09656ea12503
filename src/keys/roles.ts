import type { Role } from '../db/entities.js';
import type { operations } from '../../generated/api.js';

/**
 * The one table of who may do what and what it costs. Authentication, access checks, metering,
 * rate-limit headers and /verify-key all read it; no handler checks a role itself.
 */
export type OperationId = keyof operations;

export type Feature =
  | 'check'
  | 'report'
  | 'verify'
  | 'blacklist'
  | 'bulk_check'
  | 'trends'
  | 'reports_detail'
  | 'bulk_report'
  | 'relay';

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
  reportIp: { feature: 'report', chargeWithKey: 'report', chargedByHandler: true },
  verifyKey: { feature: 'verify' },
  getBlacklist: { feature: 'blacklist' },
  listReports: { feature: 'reports_detail' },
  getTrends: { feature: 'trends' },
  bulkCheckIps: { feature: 'bulk_check', chargeWithKey: 'check', chargedByHandler: true },
  bulkReportIps: { feature: 'bulk_report', chargeWithKey: 'report', chargedByHandler: true },
  getRelayQuota: { feature: 'relay', relay: true },
  sendRelayMail: { feature: 'relay', relay: true },
  sendRelaySms: { feature: 'relay', relay: true },
  getBlacklistDetailed: { feature: 'blacklist' },
  getBlacklistCombined: { feature: 'blacklist' },
  exportBlacklistGit: { feature: 'blacklist' },
};

export interface RolePolicy {
  features: ReadonlySet<Feature>;
  /** Per UTC day and per licence; null is unlimited. */
  checksPerDay: number | null;
  reportsPerDay: number | null;
}

const base: Feature[] = ['check', 'report', 'verify'];
const contributor: Feature[] = [...base, 'blacklist'];
const professional: Feature[] = [...contributor, 'bulk_check', 'trends', 'reports_detail', 'relay'];

export const ROLE_POLICIES: Record<Role, RolePolicy> = {
  free: { features: new Set(base), checksPerDay: 1_000, reportsPerDay: 50 },
  contributor: { features: new Set(contributor), checksPerDay: 5_000, reportsPerDay: 200 },
  professional: { features: new Set(professional), checksPerDay: 25_000, reportsPerDay: 1_000 },
  business: { features: new Set(professional), checksPerDay: 100_000, reportsPerDay: 5_000 },
  enterprise: { features: new Set([...professional, 'bulk_report']), checksPerDay: null, reportsPerDay: null },
  // Automated reporters: everything an enterprise key reads and reports, but no relay.
  honeypot: {
    features: new Set([...contributor, 'bulk_check', 'trends', 'reports_detail', 'bulk_report']),
    checksPerDay: null,
    reportsPerDay: null,
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
