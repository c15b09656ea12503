import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { writerFor, type FirewallFormat, type Net } from '../../src/blacklist/formats.js';
import { addressToBigInt, bigIntToAddress, BlockAggregator, blockText, parseNetwork, rangeToBlocks } from '../../src/address.js';
import { loadApiArtifacts } from '../../src/openapi.js';

const examples = (loadApiArtifacts().document as any).components.examples as Record<string, { value: unknown }>;

const net = (ip: string): Net => ({ version: ip.includes(':') ? 6 : 4, address: ip, cidr: `${ip}/${ip.includes(':') ? 128 : 32}` });
const LIST = ['203.0.113.7', '2001:db8:85a3::8a2e:370:7334', '198.51.100.23'];
const heading = { confidence: 90, categories: undefined, generatedAt: new Date('2026-11-20T14:30:00Z') };

function write(format: FirewallFormat, ips: string[]): string {
  const writer = writerFor(format, heading, false);
  return writer.begin() + ips.map((ip) => writer.write(net(ip))).join('') + writer.end();
}

describe('the firewall formats are what the document shows', () => {
  it.each([
    ['nftables', 'BlacklistNftables', LIST],
    ['ipset', 'BlacklistIpset', LIST],
    ['iptables', 'BlacklistIptables', LIST.filter((ip) => !ip.includes(':'))],
    ['nginx', 'BlacklistNginx', LIST],
  ] as const)('%s', (format, example, ips) => {
    expect(write(format, ips)).toBe(examples[example]!.value);
  });

  it('nftables deltas write every removal before any addition, 500 elements a statement', () => {
    const writer = writerFor('nftables', { ...heading, delta: { since: '"bl-a"', etag: '"bl-b"' } }, false);
    let out = writer.begin();
    for (let i = 0; i < 501; i++) out += writer.write(net(`10.0.${i >> 8}.${i & 255}`), 'removed');
    out += writer.write(net('2001:db8::1'), 'removed');
    out += writer.write(net('10.9.9.9'), 'added');
    out += writer.end();
    const statements = out.split('\n').filter((line) => !line.startsWith('#') && line);
    expect(statements.map((line) => line.replace(/ \{.*/, ''))).toEqual([
      'delete element inet trs v4',
      'delete element inet trs v4',
      'delete element inet trs v6',
      'add element inet trs v4',
    ]);
    expect(statements[0]!.split(',')).toHaveLength(500);
  });
});

describe('lossless aggregation', () => {
  const v4 = fc.integer({ min: 0, max: 2 ** 32 - 1 });

  it('covers exactly the addresses given, with blocks no other set of fewer blocks could replace', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 0, max: 300 }), { maxLength: 120 }), fc.integer({ min: 0, max: 2 ** 32 - 512 }), (offsets, base) => {
        const sorted = offsets.map((o) => base + o).sort((a, b) => a - b);
        const aggregator = new BlockAggregator();
        const blocks = [...sorted.flatMap((n) => aggregator.add(bigIntToAddress(BigInt(n), 4))), ...aggregator.end()];
        const covered = blocks.flatMap((b) => Array.from({ length: 2 ** (32 - b.prefix) }, (_, i) => Number(b.start) + i));
        expect(covered).toEqual(sorted);
        // Minimal: no two blocks are the two halves of one aligned block.
        for (let i = 1; i < blocks.length; i++) {
          const [a, b] = [blocks[i - 1]!, blocks[i]!];
          const size = 2n ** BigInt(32 - a.prefix);
          const merges = a.prefix === b.prefix && a.start + size === b.start && a.start % (size * 2n) === 0n;
          expect(merges).toBe(false);
        }
      }),
    );
  });

  it('takes IPv4 before IPv6, each ascending, and refuses anything else', () => {
    const aggregator = new BlockAggregator();
    const out = [...aggregator.add('45.155.205.4'), ...aggregator.add('45.155.205.5'), ...aggregator.add('2a0d::'), ...aggregator.end()];
    expect(out.map((b) => blockText(b, true))).toEqual(['45.155.205.4/31', '2a0d::']);
    const backwards = new BlockAggregator();
    backwards.add('45.155.205.5');
    expect(() => backwards.add('45.155.205.4')).toThrow(/ascending/);
  });

  it('turns any range into blocks that tile it', () => {
    fc.assert(
      fc.property(v4, v4, (a, b) => {
        const [first, last] = a <= b ? [a, b] : [b, a];
        const blocks = rangeToBlocks(BigInt(first), BigInt(last), 4);
        let next = BigInt(first);
        for (const block of blocks) {
          expect(block.start).toBe(next);
          next += 2n ** BigInt(32 - block.prefix);
        }
        expect(next).toBe(BigInt(last) + 1n);
        expect(blocks.length).toBeLessThanOrEqual(62);
      }),
    );
  });

  it('parses networks in CIDR notation, clearing host bits', () => {
    expect(parseNetwork('198.51.100.77/24')).toMatchObject({ text: '198.51.100.0/24', firstAddress: '198.51.100.0', lastAddress: '198.51.100.255', netmask: '255.255.255.0' });
    expect(parseNetwork('2001:DB8::1/48')).toMatchObject({ text: '2001:db8::/48', lastAddress: '2001:db8:0:ffff:ffff:ffff:ffff:ffff' });
    for (const bad of ['1.2.3.4', '1.2.3.4/33', '1.2.3/24', '1.2.3.4/ 24', '2001:db8::/129', '1.2.3.4/-1']) {
      expect(parseNetwork(bad, { prefixRequired: true }), bad).toBeUndefined();
    }
    // An IPv4-mapped network is its IPv4 network.
    expect(parseNetwork('::ffff:1.2.3.4/120', { prefixRequired: true })?.text).toBe('1.2.3.0/24');
    expect(addressToBigInt('255.255.255.255')).toBe(2n ** 32n - 1n);
  });
});
