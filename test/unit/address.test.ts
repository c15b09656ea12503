import { describe, expect, it } from 'vitest';
import { isPublic, isTunnel, networkOf, nonPublicReason, parseAddress, parseNetwork, parsePublicAddress } from '../../src/address.js';

describe('parseAddress', () => {
  it('takes strict dotted quads and IPv6, and gives the canonical text', () => {
    expect(parseAddress('203.0.113.9')).toEqual({ version: 4, text: '203.0.113.9', words: [0xcb007109] });
    expect(parseAddress('2001:DB8:0:0:0:0:0:1')?.text).toBe('2001:db8::1');
    expect(parseAddress('2001:db8::0:1')?.text).toBe('2001:db8::1');
    // IPv4-mapped IPv6 is its IPv4 address, in either spelling.
    expect(parseAddress('::ffff:45.155.205.233')?.text).toBe('45.155.205.233');
    expect(parseAddress('::ffff:2d9b:cde9')).toMatchObject({ version: 4, text: '45.155.205.233' });
  });

  it('refuses shorthand, leading zeros, zones, whitespace and junk', () => {
    for (const bad of ['10.1', '0x7f.0.0.1', '010.0.0.1', '1.2.3.256', '1.2.3.4.5', 'fe80::1%eth0', ' 1.2.3.4', '1.2.3.4\n', '', 'example.com', '::g']) {
      expect(parseAddress(bad), bad).toBeUndefined();
    }
  });
});

describe('one definition of public', () => {
  it('names the special-purpose block of an address that is not public', () => {
    const reason = (text: string) => nonPublicReason(parseAddress(text)!);
    expect(reason('10.1.2.3')).toBe('a private (RFC 1918) address');
    expect(reason('100.64.0.1')).toBe('a carrier-grade NAT address');
    expect(reason('127.0.0.1')).toBe('a loopback address');
    expect(reason('192.0.2.10')).toBe('a documentation address');
    expect(reason('198.18.0.1')).toBe('a benchmarking address');
    expect(reason('239.1.1.1')).toBe('a multicast address');
    expect(reason('255.255.255.255')).toBe('a reserved address');
    expect(reason('::1')).toBe('a loopback address');
    expect(reason('fe80::1')).toBe('a link-local address');
    expect(reason('fd00::1')).toBe('a unique local address');
    expect(reason('2001:db8::1')).toBe('a documentation address');
    expect(reason('2001:2::1')).toBe('a benchmarking address');
    expect(reason('::ffff:192.168.1.1')).toBe('a private (RFC 1918) address');
  });

  it('counts routed unicast as public, Teredo and 6to4 included', () => {
    for (const ok of ['45.155.205.233', '8.8.8.8', '2a0d:5600:24::1', '2001:0:4136:e378::1', '2002:cb00:7109::1']) {
      expect(isPublic(parseAddress(ok)!), ok).toBe(true);
    }
    expect(isTunnel(parseAddress('2002:cb00:7109::1')!)).toBe(true);
    expect(isTunnel(parseAddress('2001:0:4136:e378::1')!)).toBe(true);
    expect(isTunnel(parseAddress('2a0d:5600:24::1')!)).toBe(false);
    expect(parsePublicAddress('10.0.0.1')).toBeUndefined();
    expect(parsePublicAddress('8.8.8.8')?.text).toBe('8.8.8.8');
  });
});

describe('networks', () => {
  it('gives the network around an address', () => {
    expect(networkOf(parseAddress('2001:db8:1:2:ffff::1')!, 64)).toBe('2001:db8:1:2::/64');
    expect(networkOf(parseAddress('2001:db8:1:2:ffff::1')!, 48)).toBe('2001:db8:1::/48');
    expect(networkOf(parseAddress('203.0.113.77')!, 24)).toBe('203.0.113.0/24');
  });

  it('parses a CIDR or a single address, clearing host bits', () => {
    expect(parseNetwork('203.0.113.9')?.text).toBe('203.0.113.9/32');
    expect(parseNetwork('203.0.113.9/24')?.text).toBe('203.0.113.0/24');
    expect(parseNetwork('2001:db8::1/48')?.text).toBe('2001:db8::/48');
    expect(parseNetwork('::ffff:203.0.113.9/120')?.text).toBe('203.0.113.0/24');
    for (const bad of ['203.0.113.9/33', '2001:db8::/129', '1.2.3.4/', '1.2.3.4/x', '10.1/8', 'x/8']) expect(parseNetwork(bad), bad).toBeUndefined();
  });
});
