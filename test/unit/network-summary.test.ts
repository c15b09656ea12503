import { describe, expect, it } from 'vitest';
import { IPV6_NETWORKS_MAX, TOP_CATEGORIES_MAX, slash64, summarise, type ScoredAddress } from '../../src/reputation/network.js';

const at = (iso: string) => new Date(iso);
const addr = (ip: string, score: number, categories: number[], totalReports = 1, last = '2026-11-20T00:00:00Z'): ScoredAddress => ({
  ip,
  score,
  categories,
  totalReports,
  lastReportedAt: at(last),
});

describe('slash64', () => {
  it('gives the canonical /64 of an IPv6 address, null for IPv4 and non-addresses', () => {
    expect(slash64('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(slash64('2001:0DB8:0001:0002::1')).toBe('2001:db8:1:2::/64');
    expect(slash64('2001:db8::1')).toBe('2001:db8::/64');
    expect(slash64('2001:0:0:1::9')).toBe('2001:0:0:1::/64');
    expect(slash64('::1')).toBe('::/64');
    expect(slash64('203.0.113.7')).toBeNull();
    expect(slash64('not an address')).toBeNull();
  });
});

describe('summarise', () => {
  it('counts listed addresses, the IPv4 share and the categories by address', () => {
    const addresses = [addr('198.51.100.1', 90, [18, 22]), addr('198.51.100.2', 40, [22, 22]), addr('198.51.100.3', 80, [14])];
    const summary = summarise(addresses, new Set(['198.51.100.1', '198.51.100.3', '192.0.2.1']), 75, 256);
    expect(summary).toEqual({
      listedCount: 2,
      listedConfidence: 75,
      listedShare: 2 / 256,
      topCategories: [
        { id: 22, count: 2 },
        { id: 14, count: 1 },
        { id: 18, count: 1 },
      ],
      ipv6NetworkCount: 0,
      ipv6Networks: [],
    });
  });

  it('leaves the share out when the size is unknown or zero, and answers for nothing', () => {
    expect(summarise([addr('198.51.100.1', 90, [18])], new Set(), 75).listedShare).toBeUndefined();
    expect(summarise([addr('198.51.100.1', 90, [18])], new Set(), 75, 0).listedShare).toBeUndefined();
    expect(summarise([], new Set(), 75, 256)).toEqual({ listedCount: 0, listedConfidence: 75, listedShare: 0, topCategories: [], ipv6NetworkCount: 0, ipv6Networks: [] });
  });

  it('groups IPv6 addresses by /64: counts, highest score, summed reports, last time, categories; the worst first', () => {
    const addresses = [
      addr('2001:db8:1:2::1', 30, [22], 2, '2026-11-18T00:00:00Z'),
      addr('2001:db8:1:2::ffff', 95, [18], 5, '2026-11-19T00:00:00Z'),
      addr('2001:db8:1:2:8000::1', 10, [21, 22], 1, '2026-11-17T00:00:00Z'),
      addr('2001:db8:9::1', 99, [14], 1, '2026-11-10T00:00:00Z'),
      addr('198.51.100.9', 100, [4]),
    ];
    const summary = summarise(addresses, new Set(['2001:db8:1:2::ffff', '198.51.100.9']), 75, 1024);
    expect(summary.listedCount).toBe(2);
    // Only listed IPv4 addresses count towards the IPv4 share.
    expect(summary.listedShare).toBe(1 / 1024);
    expect(summary.ipv6NetworkCount).toBe(2);
    expect(summary.ipv6Networks).toEqual([
      { network: '2001:db8:9::/64', reportedCount: 1, listedCount: 0, abuseConfidencePercentage: 99, totalReports: 1, lastReportedAt: '2026-11-10T00:00:00.000Z', categories: [14] },
      { network: '2001:db8:1:2::/64', reportedCount: 3, listedCount: 1, abuseConfidencePercentage: 95, totalReports: 8, lastReportedAt: '2026-11-19T00:00:00.000Z', categories: [18, 21, 22] },
    ]);
  });

  it('orders /64s of equal score by their number of addresses, then by text', () => {
    const addresses = [addr('2001:db8:b::1', 50, [1]), addr('2001:db8:a::1', 50, [1]), addr('2001:db8:c::1', 50, [1]), addr('2001:db8:c::2', 20, [1])];
    expect(summarise(addresses, new Set(), 75).ipv6Networks.map((n) => n.network)).toEqual(['2001:db8:c::/64', '2001:db8:a::/64', '2001:db8:b::/64']);
  });

  it('names at most TOP_CATEGORIES_MAX categories and IPV6_NETWORKS_MAX networks, counting them all', () => {
    const addresses: ScoredAddress[] = [];
    for (let i = 0; i < IPV6_NETWORKS_MAX + 5; i++) addresses.push(addr(`2001:db8:${i.toString(16)}::1`, i % 100, [1 + (i % (TOP_CATEGORIES_MAX + 3))]));
    const summary = summarise(addresses, new Set(), 75);
    expect(summary.topCategories).toHaveLength(TOP_CATEGORIES_MAX);
    expect(summary.ipv6NetworkCount).toBe(IPV6_NETWORKS_MAX + 5);
    expect(summary.ipv6Networks).toHaveLength(IPV6_NETWORKS_MAX);
    const scores = summary.ipv6Networks.map((n) => n.abuseConfidencePercentage);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });
});
