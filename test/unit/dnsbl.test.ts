import { describe, expect, it } from 'vitest';
import { checkZone, rbldnsdFile, type DnsblEntry } from '../../src/blacklist/dnsbl.js';

const render = async (entries: DnsblEntry[], zone?: string, publicUrl?: string) => {
  let out = '';
  for await (const piece of rbldnsdFile((async function* () { yield* entries; })(), { zone, publicUrl, confidence: 90, generatedAt: new Date('2026-11-26T12:00:00Z'), snapshotId: 7 })) out += piece;
  return out;
};

describe('the rbldnsd data file', () => {
  it('puts IPv4 entries in the ip4set and IPv6 ones in the ip6trie, each with its TXT', async () => {
    const text = await render(
      [
        { ip: '45.155.205.4', score: 97, categories: [18, 22] },
        { ip: '2a0d:5600:24::2', score: 91, categories: [] },
      ],
      'bl.example.com',
      'https://trs.example.com/',
    );
    const lines = text.split('\n');
    const v6 = lines.indexOf('$DATASET ip6trie:trs-v6 @');
    expect(lines.indexOf('$DATASET ip4set:trs-v4 @')).toBeLessThan(lines.indexOf('45.155.205.4 :127.0.0.2:Listed, abuse confidence 97, categories 18 22 - see https://trs.example.com/lookup?ip=$'));
    expect(lines.indexOf('2a0d:5600:24::2 :127.0.0.2:Listed, abuse confidence 91 - see https://trs.example.com/lookup?ip=$')).toBeGreaterThan(v6);
    expect(lines).toContain('$SOA 5m bl.example.com. hostmaster.bl.example.com. 7 10m 5m 1d 5m');
    expect(lines).toContain('127.0.0.2 :127.0.0.2:RFC 5782 test entry');
    expect(lines).toContain('::ffff:7f00:2 :127.0.0.2:RFC 5782 test entry');
    expect(lines.filter((l) => l.startsWith('$DATASET'))).toHaveLength(2);
  });

  it('keeps both datasets and the test entries when the list is empty or IPv4 only, and no SOA without a zone', async () => {
    const text = await render([{ ip: '45.155.205.4', score: 97, categories: [18] }]);
    expect(text).not.toContain('$SOA');
    expect(text).toContain('$DATASET ip6trie:trs-v6 @\n');
    expect(text).toContain('::ffff:7f00:2 :127.0.0.2:');
    expect(await render([])).toContain('127.0.0.2 :127.0.0.2:RFC 5782 test entry');
  });

  it('takes only DNS names as the zone', () => {
    expect(checkZone('BL.Example.com.')).toBe('bl.example.com');
    for (const bad of ['', 'bl..example.com', 'bl.example.com\n$SOA 0 a. b. 1 1 1 1 1', 'bl example.com', '-bl.example.com', `${'a'.repeat(64)}.com`, 'bl.example.com:combined']) {
      expect(() => checkZone(bad), JSON.stringify(bad)).toThrow(/not a DNS zone name/);
    }
  });
});
