import ipaddr from 'ipaddr.js';

/**
 * IP addresses: the one place that parses, normalises and classifies them. Every operation
 * stores and compares an address in its canonical text (IPv4 as a dotted quad, IPv4-mapped IPv6
 * as its IPv4 address, IPv6 in RFC 5952's compressed form), and "public" has one definition:
 * not in a special-purpose block of the IANA registries (RFC 6890 and its updates) and, for
 * IPv6, within global unicast 2000::/3. Reports, lookups, GeoIP and the public allowance all
 * ask here.
 *
 * IPv4 is parsed by hand and blocks are tested arithmetically: ipaddr.js's parse and range()
 * cost several times a GeoIP lookup, and this runs on every request.
 */
export interface Address {
  version: 4 | 6;
  /** The canonical text form. */
  text: string;
  /** The address as big-endian 32-bit words: one for IPv4, four for IPv6. */
  words: number[];
}

/** A block as a test on the top `bits` (at most 48, so values stay exact in a double) bits. */
interface SpecialBlock {
  divisor: number;
  quotient: number;
  name: string;
}

function blocks(list: readonly [cidr: string, name: string][], bits: 32 | 48): SpecialBlock[] {
  return list.map(([cidr, name]) => {
    const [addr, length] = ipaddr.parseCIDR(cidr);
    if (length > bits) throw new Error(`${cidr} is longer than /${bits}`);
    const top = addr.toByteArray().slice(0, bits / 8).reduce((n, byte) => n * 256 + byte, 0);
    const divisor = 2 ** (bits - length);
    return { divisor, quotient: Math.floor(top / divisor), name };
  });
}

function blockOf(top: number, list: readonly SpecialBlock[]): SpecialBlock | undefined {
  for (const block of list) if (Math.floor(top / block.divisor) === block.quotient) return block;
  return undefined;
}

/** IPv4 space that is not globally routed unicast (IANA IPv4 special-purpose registry). */
const SPECIAL_V4 = blocks(
  [
    ['0.0.0.0/8', 'the "this network" block'],
    ['10.0.0.0/8', 'a private (RFC 1918) address'],
    ['100.64.0.0/10', 'a carrier-grade NAT address'],
    ['127.0.0.0/8', 'a loopback address'],
    ['169.254.0.0/16', 'a link-local address'],
    ['172.16.0.0/12', 'a private (RFC 1918) address'],
    ['192.0.0.0/24', 'an IETF protocol assignment'],
    ['192.0.2.0/24', 'a documentation address'],
    ['192.88.99.0/24', 'a deprecated 6to4 relay anycast address'],
    ['192.168.0.0/16', 'a private (RFC 1918) address'],
    ['198.18.0.0/15', 'a benchmarking address'],
    ['198.51.100.0/24', 'a documentation address'],
    ['203.0.113.0/24', 'a documentation address'],
    ['224.0.0.0/4', 'a multicast address'],
    ['240.0.0.0/4', 'a reserved address'],
  ],
  32,
);

/** Global unicast IPv6 is 2000::/3 (RFC 4291) ... */
const GLOBAL_V6 = blocks([['2000::/3', 'global unicast']], 48);
/**
 * ... less these special-purpose blocks within it that are not globally reachable (IANA IPv6
 * special-purpose registry). Teredo (2001::/32) and 6to4 (2002::/16) carry real traffic from
 * real hosts and stay public: abuse from them is reported like any other.
 */
const SPECIAL_V6 = blocks(
  [
    ['2001:2::/48', 'a benchmarking address'],
    ['2001:db8::/32', 'a documentation address'],
    ['3fff::/20', 'a documentation address'],
  ],
  48,
);
/** The tunnelling prefixes: Teredo and 6to4 carry another host's traffic inside them. */
const TUNNELS_V6 = blocks(
  [
    ['2001::/32', 'Teredo'],
    ['2002::/16', '6to4'],
  ],
  48,
);

/** Names of the IPv6 space outside 2000::/3, for the sentence that refuses it. */
const OUTSIDE_GLOBAL_V6: [cidr: string, name: string][] = [
  ['::/128', 'the unspecified address'],
  ['::1/128', 'a loopback address'],
  ['fc00::/7', 'a unique local address'],
  ['fe80::/10', 'a link-local address'],
  ['ff00::/8', 'a multicast address'],
];

/**
 * A strict dotted quad (four decimal octets, no leading zeros, no shorthand such as `10.1` or
 * `0x7f.1`, which ipaddr.js would accept) as an unsigned 32-bit integer, or -1.
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

const v4Text = (value: number) => `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;

/**
 * The address in `input`, canonical, or undefined when it is not one: a strict dotted quad or
 * an IPv6 address without a zone; IPv4-mapped IPv6 is its IPv4 address. Never throws.
 */
export function parseAddress(input: string): Address | undefined {
  if (typeof input !== 'string') return undefined; // untyped callers
  if (!input.includes(':')) {
    const value = parseDottedQuad(input);
    return value < 0 ? undefined : { version: 4, text: input, words: [value] };
  }
  if (input.includes('%') || !ipaddr.IPv6.isValid(input)) return undefined; // a zone only qualifies link-local
  const addr = ipaddr.IPv6.parse(input);
  const p = addr.parts as [number, number, number, number, number, number, number, number];
  // ::ffff:0:0/96, tested directly: ipaddr's isIPv4MappedAddress() walks every special range.
  if (p[0] === 0 && p[1] === 0 && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0xffff) {
    const value = p[6] * 0x10000 + p[7];
    return { version: 4, text: v4Text(value), words: [value] };
  }
  const words = [p[0] * 0x10000 + p[1], p[2] * 0x10000 + p[3], p[4] * 0x10000 + p[5], p[6] * 0x10000 + p[7]];
  return { version: 6, text: addr.toRFC5952String(), words };
}

/** The top 48 bits of an IPv6 address, exact in a double. */
const top48 = (a: Address) => a.words[0]! * 0x10000 + Math.floor(a.words[1]! / 0x10000);

/**
 * Why an address is not public (the special-purpose block it falls in, as a phrase: "a private
 * (RFC 1918) address"), or undefined for a public one.
 */
export function nonPublicReason(a: Address): string | undefined {
  if (a.version === 4) return blockOf(a.words[0]!, SPECIAL_V4)?.name;
  const top = top48(a);
  if (!blockOf(top, GLOBAL_V6)) {
    const named = OUTSIDE_GLOBAL_V6.find(([cidr]) => ipaddr.IPv6.parse(a.text).match(ipaddr.parseCIDR(cidr) as [ipaddr.IPv6, number]));
    return named?.[1] ?? 'not a global unicast address';
  }
  return blockOf(top, SPECIAL_V6)?.name;
}

export const isPublic = (a: Address): boolean => nonPublicReason(a) === undefined;

/**
 * Whether an address is a tunnel's (Teredo, 6to4): public, but what registries and GeoIP data
 * say of it describes the relay, not the host behind it.
 */
export const isTunnel = (a: Address): boolean => a.version === 6 && blockOf(top48(a), TUNNELS_V6) !== undefined;

/** The address if `input` is a valid, public one, else undefined: the GeoIP hot path. */
export function parsePublicAddress(input: string): Address | undefined {
  const a = parseAddress(input);
  return a && isPublic(a) ? a : undefined;
}

/**
 * The network of `bits` around an address, as canonical CIDR text (`2001:db8:1::/48`): the
 * public allowance counts IPv6 per /64 and per a wider prefix.
 */
export function networkOf(a: Address, bits: number): string {
  const bytes = a.words.flatMap((w) => [w >>> 24, (w >>> 16) & 255, (w >>> 8) & 255, w & 255]);
  const masked = bytes.map((b, i) => (i * 8 >= bits ? 0 : i * 8 + 8 <= bits ? b : b & (0xff << (8 - (bits - i * 8)))));
  return `${ipaddr.fromByteArray(masked).toString()}/${bits}`;
}

const BITS = { 4: 32, 6: 128 } as const;

/** An address as an unsigned integer (IPv4: 32 bits, IPv6: 128 bits). */
export function addressToBigInt(text: string): bigint {
  let n = 0n;
  for (const byte of ipaddr.parse(text).toByteArray()) n = (n << 8n) | BigInt(byte);
  return n;
}

/** The canonical text of an unsigned integer address. */
export function bigIntToAddress(n: bigint, version: 4 | 6): string {
  const bytes: number[] = [];
  for (let i = BITS[version] / 8 - 1; i >= 0; i--) bytes.push(Number((n >> BigInt(i * 8)) & 0xffn));
  const addr = ipaddr.fromByteArray(bytes);
  return version === 4 ? addr.toString() : (addr as ipaddr.IPv6).toRFC5952String();
}

/** A network (CIDR) in canonical form: host bits cleared, IPv4-mapped as IPv4. */
export interface Network {
  version: 4 | 6;
  /** The prefix length. */
  bits: number;
  /** `203.0.113.0/24`, `2001:db8::/48`. */
  text: string;
  first: bigint;
  last: bigint;
  firstAddress: string;
  lastAddress: string;
  netmask: string;
  /** ipaddr.js's name of the network's address space (`unicast`, `private`, …), for descriptions. */
  range: string;
}

/**
 * `input` as a network: a CIDR (`203.0.113.9/24` is `203.0.113.0/24`), or, unless `prefixRequired`,
 * a single address (`/32`, `/128`); undefined otherwise. An IPv4-mapped IPv6 network
 * (`::ffff:203.0.113.0/120`) is its IPv4 network.
 */
export function parseNetwork(input: string, options: { prefixRequired?: boolean } = {}): Network | undefined {
  const text = input.trim();
  const slash = text.indexOf('/');
  if (slash < 0 && options.prefixRequired) return undefined;
  const a = parseAddress(slash < 0 ? text : text.slice(0, slash));
  if (!a) return undefined;
  const max = BITS[a.version];
  let bits: number = max;
  if (slash >= 0) {
    const length = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(length)) return undefined;
    bits = Number(length);
    // A mapped address's prefix counts its 96 leading bits.
    if (a.version === 4 && text.slice(0, slash).includes(':')) bits -= 96;
    if (bits < 0 || bits > max) return undefined;
  }
  const hostBits = BigInt(max - bits);
  const mask = ((1n << BigInt(max)) - 1n) ^ ((1n << hostBits) - 1n);
  const first = addressToBigInt(a.text) & mask;
  const last = first | ((1n << hostBits) - 1n);
  const firstAddress = bigIntToAddress(first, a.version);
  return {
    version: a.version,
    bits,
    text: `${firstAddress}/${bits}`,
    first,
    last,
    firstAddress,
    lastAddress: bigIntToAddress(last, a.version),
    netmask: bigIntToAddress(mask, a.version),
    range: ipaddr.parse(firstAddress).range(),
  };
}

/** A CIDR block: its first address as an integer and its prefix length. */
export interface Block {
  version: 4 | 6;
  start: bigint;
  prefix: number;
}

/** `198.51.100.0/24`; a single address keeps its length (`/32`, `/128`) unless `bare`. */
export function blockText(block: Block, bare = false): string {
  const address = bigIntToAddress(block.start, block.version);
  return bare && block.prefix === BITS[block.version] ? address : `${address}/${block.prefix}`;
}

/** The fewest CIDR blocks that cover exactly the addresses `first`..`last` (inclusive). */
export function rangeToBlocks(first: bigint, last: bigint, version: 4 | 6): Block[] {
  const bits = BITS[version];
  const blocks: Block[] = [];
  let start = first;
  while (start <= last) {
    // The largest aligned block starting at `start` that ends within the range.
    let size = 0;
    while (size < bits && (start & ((1n << BigInt(size + 1)) - 1n)) === 0n && start + (1n << BigInt(size + 1)) - 1n <= last) size++;
    blocks.push({ version, start, prefix: bits - size });
    start += 1n << BigInt(size);
  }
  return blocks;
}

/**
 * Lossless aggregation: fed addresses in ascending order (IPv4 before IPv6, each once), it
 * returns the fewest CIDR blocks that cover exactly them. Addresses merge only when together
 * they fill a whole aligned block (`.4` and `.5` make a /31; `.5` and `.6` do not). Runs of
 * consecutive addresses are held, never the list.
 */
export class BlockAggregator {
  private run: { version: 4 | 6; first: bigint; last: bigint } | undefined;

  /** Takes the next address; returns the blocks of the run it ended, if any. */
  add(ip: string): Block[] {
    const version = ip.includes(':') ? 6 : 4;
    const n = addressToBigInt(ip);
    if (this.run && this.run.version === version && n === this.run.last + 1n) {
      this.run.last = n;
      return [];
    }
    if (this.run && this.run.version === version && n <= this.run.last) {
      throw new Error(`addresses must come in ascending order: ${ip} after ${bigIntToAddress(this.run.last, version)}`);
    }
    const done = this.end();
    this.run = { version, first: n, last: n };
    return done;
  }

  /** The blocks of the last run. */
  end(): Block[] {
    const run = this.run;
    this.run = undefined;
    return run ? rangeToBlocks(run.first, run.last, run.version) : [];
  }
}
