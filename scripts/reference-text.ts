/**
 * The parts of the published reference that are written from the code's own tables, so that
 * the reference cannot say otherwise than the server does: the role table and the relay tiers
 * (from src/roles.ts), and each operation's access and cost (from
 * its `x-access` and `x-charge`, read as src/http/access.ts reads them).
 */
import { ROLES, type Role } from '../src/roles.js';
import type { AccessRule } from '../src/http/access.js';
import { FEATURES, LICENCES, PUBLIC_DAILY_LIMIT, ROLE_POLICIES, type Feature } from '../src/roles.js';
import { BUNDLES } from '../src/relay/policy.js';

const ROLE_NAMES: Record<Role, string> = {
  free: 'Free',
  contributor: 'Contributor',
  professional: 'Professional',
  business: 'Business',
  enterprise: 'Enterprise',
  honeypot: 'Honeypot',
};

const FEATURE_NAMES: Record<Feature, string> = {
  check: 'check',
  report: 'report',
  verify: 'verify key',
  blacklist: 'blacklist',
  feedback: 'positive feedback',
  bulk_check: 'bulk check',
  trends: 'trends',
  reports_detail: 'report details',
  relay: 'relay',
  bulk_report: 'bulk report',
  audit_trail: 'audit trail',
  white_label: 'white-label relay',
  webhooks: 'webhooks',
};

const number = (n: number) => n.toLocaleString('en-US');
const list = (items: string[]) => (items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`);

/** The roles of the table that have a feature, as the reference names them. */
const rolesWith = (feature: Feature) => ROLES.filter((role) => ROLE_POLICIES[role].features.has(feature));

export function rolesTable(): string {
  const perDay = (value: number | null, licensed: boolean) => (value === null ? 'unlimited' : `${number(value)}${licensed ? ' per licence' : ''}`);
  const rows = ROLES.map((role) => {
    const p = ROLE_POLICIES[role];
    const features = FEATURES.filter((f) => p.features.has(f)).map((f) => FEATURE_NAMES[f]);
    return `| ${ROLE_NAMES[role]} (\`${role}\`) | ${perDay(p.checksPerDay, p.licensed)} | ${perDay(p.reportsPerDay, p.licensed)} | ${perDay(p.sitesPerDay, p.licensed)} | ${features.join(', ')} |`;
  });
  const licensed = ROLES.filter((role) => ROLE_POLICIES[role].licensed).map((role) => ROLE_NAMES[role]);
  return [
    '| Role (identifier) | Checks/day | Reports/day | Sites/day | Features |',
    '|---|---|---|---|---|',
    `| Public (no key) | ${PUBLIC_DAILY_LIMIT} per source address | none | | public operations |`,
    ...rows,
    '',
    `${list(licensed)} quotas and sites are multiplied by the licence count (${LICENCES.min} to ${LICENCES.max}). ` +
      'Sites/day is the number of different sites (the host of `X-Rip-Site` or of a relay send\'s `site_url`) one key may be used for in a UTC day.',
  ].join('\n');
}

export function relayTiersTable(): string {
  const inclusive = (value: number | null) => (value === null ? 'fair-use unlimited' : number(value));
  const rows = ROLES.flatMap((role) => {
    const relay = ROLE_POLICIES[role].relay;
    return relay ? [`| ${ROLE_NAMES[role]} | ${inclusive(relay.inclusive.mail)} | ${inclusive(relay.inclusive.sms)} | ${relay.bundleEligible ? 'yes' : 'no'} |`] : [];
  });
  const ids = (channel: 'mail' | 'sms') => list(Object.entries(BUNDLES).filter(([, b]) => b.channel === channel).map(([id]) => `\`${id}\``));
  return [
    '| Tier | Inclusive mails/month | Inclusive SMS/month | Bundles |',
    '|---|---|---|---|',
    ...rows,
    '',
    `Mail bundles: ${ids('mail')}. SMS bundles: ${ids('sms')}.`,
  ].join('\n');
}

/** The documentation-only fields of `x-charge`. */
export interface ChargeNotes {
  per?: string;
  monthly?: 'mail' | 'sms';
}

/** The operation's access and cost, as two bullets. */
export function accessBullets(rule: AccessRule, notes: ChargeNotes): string {
  let access: string;
  if (!rule.feature) access = 'public, no key needed. A key that is sent must be valid.';
  else {
    const allowed = rolesWith(rule.feature);
    const refused = ROLES.filter((role) => !allowed.includes(role));
    access =
      refused.length === 0
        ? 'any valid key (every role).'
        : `keys of the roles ${list(allowed.map((r) => `\`${r}\``))}; ${list(refused.map((r) => ROLE_NAMES[r]))} keys get 403${rule.relay ? ' `tier_forbidden`' : ''}.`;
  }
  let quota: string;
  const daily = (counter: string) => (counter === 'check' ? 'daily check quota' : `daily ${counter} quota`);
  if (notes.monthly) {
    quota = `the monthly relay ${notes.monthly === 'sms' ? 'SMS' : 'mail'} quota, then the ${notes.monthly === 'sms' ? 'SMS' : 'mail'} bundle balance; no daily counter. Refused requests are not charged.`;
  } else if (rule.chargedByHandler && rule.chargeWithKey) {
    quota =
      `+N on the ${daily(rule.chargeWithKey)}, one per ${notes.per ?? 'unit'}, charged after the request's own checks: ` +
      'a refused request is not charged, and when N exceeds what is left of the quota the request is refused with 429 and nothing is charged.';
  } else if (rule.chargeWithKey && rule.chargeWithoutKey) {
    quota = `without a key, +1 on the per-IP public limit; with a key, +1 on the key's ${daily(rule.chargeWithKey)}.`;
  } else if (rule.chargeWithoutKey) {
    quota = 'without a key, +1 on the per-IP public limit; with a key, none.';
  } else if (rule.chargeWithKey) {
    quota = `+1 on the ${daily(rule.chargeWithKey)}.`;
  } else if (rule.gatedByPublicLimit) {
    quota =
      'none, but without a key it is rate-limited per source address like the other public operations: while the ' +
      'per-IP public limit of the calling address is used up, it answers 429. With a key it is never refused.';
  } else {
    quota = rule.feature ? 'none. The rate-limit headers describe the check quota.' : 'none.';
  }
  return `- **Access:** ${access}\n- **Quota:** ${quota}`;
}
