import ipaddr from 'ipaddr.js';

export type ParsedIp = { ip: string; version: 4 | 6 };

/**
 * Parses an address the way every operation stores and compares it: IPv4 as a dotted quad,
 * IPv4-mapped IPv6 as its IPv4 address, IPv6 in the canonical compressed form of RFC 5952.
 * Shorthand such as `10.1` or `0x7f.1`, which ipaddr.js would accept, is refused.
 */
export function parseIp(input: string): ParsedIp | undefined {
  const text = input.trim();
  if (text.includes(':')) {
    if (!ipaddr.IPv6.isValid(text) || text.includes('%')) return undefined;
    const v6 = ipaddr.IPv6.parse(text);
    if (v6.isIPv4MappedAddress()) return { ip: v6.toIPv4Address().toString(), version: 4 };
    return { ip: v6.toRFC5952String(), version: 6 };
  }
  if (!ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
  return { ip: ipaddr.IPv4.parse(text).toString(), version: 4 };
}

const V6_REPORTABLE = new Set(['unicast', '6to4', 'teredo']);
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];

const RANGE_NAMES: Record<string, string> = {
  private: 'a private (RFC 1918) address',
  uniqueLocal: 'a unique local address',
  loopback: 'a loopback address',
  linkLocal: 'a link-local address',
  multicast: 'a multicast address',
  broadcast: 'the broadcast address',
  unspecified: 'the unspecified address',
  carrierGradeNat: 'a carrier-grade NAT address',
  reserved: 'a reserved or documentation address',
  benchmarking: 'a benchmarking address',
};

/**
 * Why an address cannot be reported (it is not a globally routable unicast address), or
 * undefined when it can be.
 */
export function unreportableReason(parsed: ParsedIp): string | undefined {
  const addr = ipaddr.parse(parsed.ip);
  const range = addr.range();
  const reportable =
    parsed.version === 4
      ? range === 'unicast'
      : V6_REPORTABLE.has(range) && (addr as ipaddr.IPv6).match(GLOBAL_UNICAST_V6);
  if (reportable) return undefined;
  return `${parsed.ip} is ${RANGE_NAMES[range] ?? `not a globally routable address (${range})`} and cannot be reported.`;
}
