import { parseAddress } from '../address.js';

/**
 * The network view of a set of reported addresses (a CIDR network of /check-block, or the
 * addresses of an AS for /check-asn): how many are listed, what they are reported for, and the
 * IPv6 ones by /64, the unit an ISP hands one customer (one host rotates through its /64, so a
 * /64 is what an operator blocks). Pure: the addresses, their scores and which are listed are
 * given.
 */

/** At most this many categories are named, the most frequent first. */
export const TOP_CATEGORIES_MAX = 10;
/** At most this many /64 networks are named, the worst first. */
export const IPV6_NETWORKS_MAX = 100;

export interface ScoredAddress {
  ip: string;
  score: number;
  totalReports: number;
  lastReportedAt: Date;
  categories: number[];
}

export interface CategoryCount {
  id: number;
  /** Reported addresses carrying the category. */
  count: number;
}

export interface Ipv6Network {
  /** The /64 in canonical CIDR form. */
  network: string;
  reportedCount: number;
  listedCount: number;
  /** The highest score among its addresses. */
  abuseConfidencePercentage: number;
  /** Report submissions about its addresses, summed. */
  totalReports: number;
  lastReportedAt: string;
  categories: number[];
}

export interface NetworkSummary {
  listedCount: number;
  listedConfidence: number;
  /** Listed IPv4 addresses over the IPv4 addresses the network holds; only when that size is known. */
  listedShare?: number;
  topCategories: CategoryCount[];
  ipv6NetworkCount: number;
  ipv6Networks: Ipv6Network[];
}

const HEX4 = (n: number) => n.toString(16);

/** The /64 an IPv6 address lies in, canonical (`2001:db8:1:2::/64`); null for IPv4 or text that is no address. */
export function slash64(ip: string): string | null {
  const parsed = parseAddress(ip);
  if (!parsed || parsed.version !== 6) return null;
  const [w0, w1] = parsed.words as readonly number[];
  const groups = [w0! >>> 16, w0! & 0xffff, w1! >>> 16, w1! & 0xffff];
  // Canonical text (RFC 5952): trailing zero groups of the prefix fold into the `::` of the host part.
  let end = groups.length;
  while (end > 0 && groups[end - 1] === 0) end--;
  return `${groups.slice(0, end).map(HEX4).join(':')}::/64`;
}

/**
 * The summary of `addresses` (each reported at least once), `listed` naming those in the
 * current blacklist snapshot at `confidence`. `ipv4Size`: how many IPv4 addresses the network
 * holds, when known, for `listedShare`.
 */
export function summarise(
  addresses: readonly ScoredAddress[],
  listed: ReadonlySet<string>,
  confidence: number,
  ipv4Size?: number,
): NetworkSummary {
  const categories = new Map<number, number>();
  const networks = new Map<string, Ipv6Network & { last: number }>();
  let listedCount = 0;
  let listedV4 = 0;
  for (const address of addresses) {
    const isListed = listed.has(address.ip);
    if (isListed) listedCount++;
    for (const id of new Set(address.categories)) categories.set(id, (categories.get(id) ?? 0) + 1);
    const net = slash64(address.ip);
    if (net === null) {
      if (isListed) listedV4++;
      continue;
    }
    const last = address.lastReportedAt.getTime();
    const group = networks.get(net);
    if (!group) {
      networks.set(net, {
        network: net,
        reportedCount: 1,
        listedCount: isListed ? 1 : 0,
        abuseConfidencePercentage: address.score,
        totalReports: address.totalReports,
        lastReportedAt: address.lastReportedAt.toISOString(),
        categories: [...new Set(address.categories)].sort((a, b) => a - b),
        last,
      });
      continue;
    }
    group.reportedCount++;
    if (isListed) group.listedCount++;
    group.abuseConfidencePercentage = Math.max(group.abuseConfidencePercentage, address.score);
    group.totalReports += address.totalReports;
    if (last > group.last) {
      group.last = last;
      group.lastReportedAt = address.lastReportedAt.toISOString();
    }
    group.categories = [...new Set([...group.categories, ...address.categories])].sort((a, b) => a - b);
  }
  const topCategories = [...categories]
    .map(([id, count]) => ({ id, count }))
    .sort((a, b) => b.count - a.count || a.id - b.id)
    .slice(0, TOP_CATEGORIES_MAX);
  const ipv6Networks = [...networks.values()]
    .sort((a, b) => b.abuseConfidencePercentage - a.abuseConfidencePercentage || b.reportedCount - a.reportedCount || a.network.localeCompare(b.network))
    .slice(0, IPV6_NETWORKS_MAX)
    .map(({ last: _last, ...group }) => group);
  return {
    listedCount,
    listedConfidence: confidence,
    ...(ipv4Size !== undefined && ipv4Size > 0 ? { listedShare: listedV4 / ipv4Size } : {}),
    topCategories,
    ipv6NetworkCount: networks.size,
    ipv6Networks,
  };
}
