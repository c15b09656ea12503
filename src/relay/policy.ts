import type { Role } from '../db/entities.js';

export type Channel = 'mail' | 'sms';

/** Monthly inclusive messages per tier; `null`: fair-use unlimited up to the configured ceiling. */
export interface RelayTier {
  /** The tier's identifier, the lower-case role name (the ReportedIP plugins read it as their tier id). */
  id: 'professional' | 'business' | 'enterprise';
  inclusive: Record<Channel, number | null>;
  /** Whether the tier tops up with prepaid bundles once its inclusive quota is used. */
  bundleEligible: boolean;
}

export const RELAY_TIERS: Partial<Record<Role, RelayTier>> = {
  professional: { id: 'professional', inclusive: { mail: 500, sms: 25 }, bundleEligible: true },
  business: { id: 'business', inclusive: { mail: 2_500, sms: 75 }, bundleEligible: true },
  enterprise: { id: 'enterprise', inclusive: { mail: null, sms: null }, bundleEligible: false },
};

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
