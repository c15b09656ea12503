/**
 * The roles of accounts and keys. This module imports nothing, so that what needs only the names
 * (the configuration, read before anything heavy is loaded; the entities' types) loads nothing
 * else with them.
 */
export const ROLES = ['free', 'contributor', 'professional', 'business', 'enterprise', 'honeypot'] as const;
export type Role = (typeof ROLES)[number];

/**
 * The role table: what each role may do and how much, per day and per month. It is the one
 * statement of it: access checks, metering, /verify-key, the relay and the published reference
 * (whose role and relay tables `npm run generate` writes from it) all read it. Which feature
 * an operation needs and which counter it charges is said by the operation itself, in the
 * OpenAPI document (`x-access`, `x-charge`; read by src/http/access.ts).
 */

export const FEATURES = [
  'check',
  'report',
  'verify',
  'blacklist',
  'bulk_check',
  'trends',
  'reports_detail',
  'bulk_report',
  'relay',
  'feedback',
  'audit_trail',
  'white_label',
  'webhooks',
] as const;
export type Feature = (typeof FEATURES)[number];

/**
 * The daily counters of a key's account. `feedback` counts positive feedback (POST
 * /whitelist) apart from reports, so that a site that used its reports up can still say it
 * unblocked an address.
 */
export const KEY_COUNTERS = ['check', 'report', 'feedback'] as const;
export type KeyCounter = (typeof KEY_COUNTERS)[number];
/** With `public`: the per-source-address allowance of callers without a key. */
export type Counter = KeyCounter | 'public';

export type Channel = 'mail' | 'sms';

/** The relay of a role: inclusive messages per calendar month, and whether bundles top it up. */
export interface RelayAllowance {
  /** `null`: fair-use unlimited, up to the operator's ceiling. */
  inclusive: Record<Channel, number | null>;
  bundleEligible: boolean;
}

export interface RolePolicy {
  features: ReadonlySet<Feature>;
  /** Per UTC day and per licence; null is unlimited. */
  checksPerDay: number | null;
  reportsPerDay: number | null;
  /** Distinct sites (`site_url` host names) one key may be used for per UTC day, per licence; null is unlimited. */
  sitesPerDay: number | null;
  /** The relay, for the roles that have the `relay` feature. */
  relay: RelayAllowance | null;
  /** Whether the daily limits and sites are per licence (2 to 20 licences). */
  licensed: boolean;
}

const base: Feature[] = ['check', 'report', 'verify'];
const contributor: Feature[] = [...base, 'blacklist', 'feedback'];
const professional: Feature[] = [...contributor, 'bulk_check', 'trends', 'reports_detail', 'relay'];

const business: Feature[] = [...professional, 'audit_trail', 'white_label', 'webhooks'];

export const ROLE_POLICIES: Record<Role, RolePolicy> = {
  free: { features: new Set(base), checksPerDay: 1_000, reportsPerDay: 50, sitesPerDay: 1, relay: null, licensed: false },
  contributor: { features: new Set(contributor), checksPerDay: 5_000, reportsPerDay: 200, sitesPerDay: 3, relay: null, licensed: false },
  professional: {
    features: new Set(professional),
    checksPerDay: 25_000,
    reportsPerDay: 1_000,
    sitesPerDay: 10,
    relay: { inclusive: { mail: 500, sms: 25 }, bundleEligible: true },
    licensed: false,
  },
  business: {
    features: new Set(business),
    checksPerDay: 100_000,
    reportsPerDay: 5_000,
    sitesPerDay: 25,
    relay: { inclusive: { mail: 2_500, sms: 75 }, bundleEligible: true },
    licensed: true,
  },
  enterprise: {
    features: new Set([...business, 'bulk_report']),
    checksPerDay: null,
    reportsPerDay: null,
    sitesPerDay: null,
    relay: { inclusive: { mail: null, sms: null }, bundleEligible: false },
    licensed: false,
  },
  // Automated reporters: everything an enterprise key reads and reports, but no relay and no
  // positive feedback (a machine never unblocks an address a person looked at).
  honeypot: {
    features: new Set([...base, 'blacklist', 'bulk_check', 'trends', 'reports_detail', 'bulk_report']),
    checksPerDay: null,
    reportsPerDay: null,
    sitesPerDay: null,
    relay: null,
    licensed: false,
  },
};

/** Licences a licensed role (Business) holds: its daily limits and sites are per licence. */
export const LICENCES = { min: 2, max: 20 } as const;

/** Callers without a key: this many charged calls per source IP (IPv6: per /64) per UTC day. */
export const PUBLIC_DAILY_LIMIT = 100;

/**
 * The daily limit of a counter for a role and licence count; -1 means unlimited. Positive
 * feedback may be given as often as the role may report, on its own counter.
 */
export function dailyLimit(role: Role, licences: number, counter: KeyCounter): number {
  const policy = ROLE_POLICIES[role];
  const perLicence = counter === 'check' ? policy.checksPerDay : policy.reportsPerDay;
  return perLicence === null ? -1 : perLicence * (policy.licensed ? licences : 1);
}

/** Distinct sites a key may be used for per UTC day; -1 means unlimited. */
export function sitesPerDay(role: Role, licences: number): number {
  const policy = ROLE_POLICIES[role];
  return policy.sitesPerDay === null ? -1 : policy.sitesPerDay * (policy.licensed ? licences : 1);
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

/** The least role that has a feature (in the order of ROLES), for the reference and tests. */
export function leastRoleWith(feature: Feature): Role | undefined {
  return ROLES.find((role) => hasFeature(role, feature));
}

/** The public limits: per source address (/64), and in aggregate per wider IPv6 prefix. */
export interface PublicLimits {
  perAddress: number;
  /** Prefix length of the aggregate (e.g. 48: one site's allocation holds 65,536 /64s). */
  v6AggregatePrefix: number;
  v6AggregateLimit: number;
}

export const DEFAULT_PUBLIC_LIMITS: PublicLimits = { perAddress: PUBLIC_DAILY_LIMIT, v6AggregatePrefix: 48, v6AggregateLimit: 1_000 };

export interface Bundle {
  channel: Channel;
  credits: number;
}

/** The prepaid bundles of the specification: channel and credits. */
export const BUNDLES: Readonly<Record<string, Bundle>> = {
  svc_mail_bundle_1000: { channel: 'mail', credits: 1_000 },
  svc_mail_bundle_5000: { channel: 'mail', credits: 5_000 },
  svc_mail_bundle_25000: { channel: 'mail', credits: 25_000 },
  svc_sms_bundle_50: { channel: 'sms', credits: 50 },
  svc_sms_bundle_200: { channel: 'sms', credits: 200 },
  svc_sms_bundle_500: { channel: 'sms', credits: 500 },
};

/** A bundle by its id; ids come from outside (payment events), so only own entries count. */
export function bundleOf(id: string): Bundle | undefined {
  return Object.hasOwn(BUNDLES, id) ? BUNDLES[id] : undefined;
}
