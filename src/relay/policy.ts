import type { Role } from '../keys/roles.js';
import { ROLE_POLICIES, type Channel, type RelayAllowance } from '../keys/roles.js';

export type { Channel };

/** The relay allowance of an eligible role, named by the role (the ReportedIP plugins read it as their tier id). */
export interface RelayTier extends RelayAllowance {
  id: Role;
}

/** The relay tier of a role, from the role table; undefined where the role has no relay. */
export function relayTierOf(role: Role): RelayTier | undefined {
  const relay = ROLE_POLICIES[role]?.relay;
  return relay ? { id: role, ...relay } : undefined;
}

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
