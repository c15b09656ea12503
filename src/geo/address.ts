import ipaddr from 'ipaddr.js';

/**
 * Address parsing for the GeoIP hot path: validates, unwraps IPv4-mapped IPv6 and rejects
 * addresses that are not publicly routed, returning the numeric form the lookups need. IPv4 is
 * parsed by hand and special ranges are tested arithmetically: ipaddr.js's parse and range()
 * would cost several times the lookup itself.
 */

export interface PublicAddress {
  version: 4 | 6;
  /** The address as big-endian 32-bit words: 1 for IPv4, 4 for IPv6. */
  words: number[];
  /** The canonical text form (IPv4-mapped addresses as IPv4), which is what mmdb readers take. */
  text: string;
}

/** A CIDR prefix as a test on the top `bits` bits of an address held in a double. */
interface Prefix {
  divisor: number;
  quotient: number;
}

/** `cidrs` as tests on the top `bits` (at most 48, so values stay exact in a double) bits. */
function prefixes(cidrs: readonly string[], bits: 32 | 48): Prefix[] {
  return cidrs.map((cidr) => {
    const [addr, length] = ipaddr.parseCIDR(cidr);
    if (length > bits) throw new Error(`${cidr} is longer than /${bits}`);
    const top = addr.toByteArray().slice(0, bits / 8).reduce((n, byte) => n * 256 + byte, 0);
    const divisor = 2 ** (bits - length);
    return { divisor, quotient: Math.floor(top / divisor) };
  });
}

function inAny(top: number, list: readonly Prefix[]): boolean {
  for (const p of list) if (Math.floor(top / p.divisor) === p.quotient) return true;
  return false;
}

/** IPv4 space that is not globally routed unicast (IANA special-purpose registry, RFC 6890). */
const NON_PUBLIC_V4 = prefixes(
  [
    '0.0.0.0/8', // "this network"
    '10.0.0.0/8', // private, RFC 1918
    '100.64.0.0/10', // carrier-grade NAT, RFC 6598
    '127.0.0.0/8', // loopback
    '169.254.0.0/16', // link-local
    '172.16.0.0/12', // private
    '192.0.0.0/24', // IETF protocol assignments
    '192.0.2.0/24', // documentation (TEST-NET-1)
    '192.88.99.0/24', // deprecated 6to4 relay anycast, RFC 7526
    '192.168.0.0/16', // private
    '198.18.0.0/15', // benchmarking
    '198.51.100.0/24', // documentation (TEST-NET-2)
    '203.0.113.0/24', // documentation (TEST-NET-3)
    '224.0.0.0/3', // multicast 224/4, reserved 240/4 and broadcast
  ],
  32,
);

/** Global unicast IPv6 is 2000::/3 (RFC 4291) ... */
const GLOBAL_V6 = prefixes(['2000::/3'], 48);
/** ... less these special-purpose blocks within it, whose owner the data does not tell. */
const NON_PUBLIC_V6 = prefixes(
  [
    '2001::/32', // Teredo
    '2001:2::/48', // benchmarking
    '2001:db8::/32', // documentation
    '2002::/16', // 6to4
    '3fff::/20', // documentation, RFC 9637
  ],
  48,
);

/**
 * A strict dotted quad (four decimal octets, no leading zeros, no shorthand such as `10.1`)
 * as an unsigned 32-bit integer, or -1.
 */
function parseDottedQuad(text: string): number {
  let value = 0;
  let octet = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x2e) {
      if (digits === 0 || ++dots > 3) return -1;
      value = value * 256 + octet;
      octet = 0;
      digits = 0;
    } else if (c >= 0x30 && c <= 0x39) {
      if (digits === 1 && octet === 0) return -1;
      octet = octet * 10 + (c - 0x30);
      if (++digits > 3 || octet > 255) return -1;
    } else {
      return -1;
    }
  }
  return dots === 3 && digits > 0 ? value * 256 + octet : -1;
}

function publicV4(value: number, text: string): PublicAddress | null {
  return inAny(value, NON_PUBLIC_V4) ? null : { version: 4, words: [value], text };
}

/** The address if it is a valid, publicly routed IPv4 or IPv6 address, else null. Never throws. */
export function parsePublicAddress(input: string): PublicAddress | null {
  if (typeof input !== 'string') return null; // untyped callers
  if (!input.includes(':')) {
    const value = parseDottedQuad(input);
    return value < 0 ? null : publicV4(value, input);
  }
  if (input.includes('%')) return null; // a zone index only qualifies link-local addresses
  let addr: ipaddr.IPv6;
  try {
    addr = ipaddr.IPv6.parse(input);
  } catch {
    return null;
  }
  const p = addr.parts as [number, number, number, number, number, number, number, number];
  // ::ffff:0:0/96, tested directly: ipaddr's isIPv4MappedAddress() walks every special range.
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0xffff) {
    return publicV4(p[6] * 0x10000 + p[7], addr.toIPv4Address().toString());
  }
  const top48 = (p[0] * 0x10000 + p[1]) * 0x10000 + p[2];
  if (!inAny(top48, GLOBAL_V6) || inAny(top48, NON_PUBLIC_V6)) return null;
  const words = [p[0] * 0x10000 + p[1], p[2] * 0x10000 + p[3], p[4] * 0x10000 + p[5], p[6] * 0x10000 + p[7]];
  return { version: 6, words, text: addr.toString() };
}
