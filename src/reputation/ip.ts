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

const BITS = { 4: 32, 6: 128 } as const;

/** An address as an unsigned integer (IPv4: 32 bits, IPv6: 128 bits). */
export function addressToBigInt(ip: string): bigint {
  let n = 0n;
  for (const byte of ipaddr.parse(ip).toByteArray()) n = (n << 8n) | BigInt(byte);
  return n;
}

/** The address of an unsigned integer, in the canonical form of parseIp. */
export function bigIntToAddress(n: bigint, version: 4 | 6): string {
  const bytes: number[] = [];
  for (let i = BITS[version] / 8 - 1; i >= 0; i--) bytes.push(Number((n >> BigInt(i * 8)) & 0xffn));
  const addr = ipaddr.fromByteArray(bytes);
  return version === 4 ? addr.toString() : (addr as ipaddr.IPv6).toRFC5952String();
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

/** A network as given in CIDR notation, its host bits cleared. */
export interface ParsedNetwork {
  version: 4 | 6;
  prefix: number;
  /** Canonical CIDR: `198.51.100.0/24`. */
  cidr: string;
  first: bigint;
  last: bigint;
  firstAddress: string;
  lastAddress: string;
  netmask: string;
  /** ipaddr.js's name of its address space (`unicast`, `private`, `loopback`, ...). */
  range: string;
}

/** Parses `198.51.100.7/24` or `2001:db8::/48` (plain dotted quads only), or undefined. */
export function parseNetwork(text: string): ParsedNetwork | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const parsed = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!parsed || !/^[0-9]{1,3}$/.test(prefixText) || text.slice(0, slash).trim() !== text.slice(0, slash)) return undefined;
  const version = parsed.version;
  const bits = BITS[version];
  const prefix = Number(prefixText);
  // An IPv4-mapped IPv6 network (`::ffff:1.2.3.0/120`) is not taken: parseIp made it IPv4.
  if (prefix > bits || (version === 4 && text.includes(':'))) return undefined;
  const hostBits = BigInt(bits - prefix);
  const mask = ((1n << BigInt(bits)) - 1n) ^ ((1n << hostBits) - 1n);
  const first = addressToBigInt(parsed.ip) & mask;
  const last = first | ((1n << hostBits) - 1n);
  const firstAddress = bigIntToAddress(first, version);
  return {
    version,
    prefix,
    cidr: `${firstAddress}/${prefix}`,
    first,
    last,
    firstAddress,
    lastAddress: bigIntToAddress(last, version),
    netmask: bigIntToAddress(mask, version),
    range: ipaddr.parse(firstAddress).range(),
  };
}
