import { parseNetwork } from '../address.js';

export interface WhitelistEntry {
  range: string;
  note: string;
  createdAt: string;
  /** Until when it holds (an approved delisting); null: until removed. */
  expiresAt: string | null;
}

export class WhitelistError extends Error {}

/** `203.0.113.9` -> `203.0.113.9/32`; `2001:db8::1/48` -> `2001:db8::/48` (host bits cleared). */
export function normaliseRange(input: string): string {
  const network = parseNetwork(input);
  if (!network) throw new WhitelistError(`${input} is not an IP address or CIDR range`);
  return network.text;
}
