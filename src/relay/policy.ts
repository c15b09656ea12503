import type { Role } from '../roles.js';
import { ROLE_POLICIES, type Channel, type RelayAllowance } from '../roles.js';

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

export { BUNDLES, bundleOf, type Bundle } from '../roles.js';
