import { describe, expect, it } from 'vitest';
import { feedSource, mispEventUuid, stixPattern, uuidV5 } from '../../src/blacklist/feeds.js';

describe('the feeds\' ids and patterns (blacklist/feeds.ts)', () => {
  it('makes RFC 4122 version 5 UUIDs (the test vector of Python\'s uuid5)', () => {
    expect(uuidV5('6ba7b810-9dad-11d1-80b4-00c04fd430c8', 'python.org')).toBe('886313e1-3b8a-5372-9b90-0c9aee199e5d');
  });

  it('names events and indicators per server: another PUBLIC_URL, other ids', () => {
    const a = feedSource('https://a.example');
    const b = feedSource('https://b.example');
    expect(mispEventUuid(a, 75, '2026-11-28')).not.toBe(mispEventUuid(b, 75, '2026-11-28'));
    expect(mispEventUuid(a, 75, '2026-11-28')).not.toBe(mispEventUuid(a, 90, '2026-11-28'));
    expect(feedSource('https://a.example/path').namespace).toBe(a.namespace);
  });

  it('writes STIX patterns for both families', () => {
    expect(stixPattern('203.0.113.7')).toBe("[ipv4-addr:value = '203.0.113.7']");
    expect(stixPattern('2001:db8::7')).toBe("[ipv6-addr:value = '2001:db8::7']");
  });
});
