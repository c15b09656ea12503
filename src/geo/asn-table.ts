import { open } from 'node:fs/promises';
import { silentProgress, type Progress, type Step } from '../progress.js';

/**
 * In-memory IP-to-ASN table built from ip-location-db's `asn-ipv4-num.csv` / `asn-ipv6-num.csv`.
 *
 * Each line is `start,end,asn,org`: an inclusive range of addresses written as unsigned decimal
 * integers (128-bit for IPv6), the AS number, and the AS organisation name, quoted with `""`
 * escapes when it holds a comma or a quote. Lines are sorted by start and the ranges are
 * disjoint but for the odd overlap (one in the IPv4 file as shipped), where the range starting
 * later wins.
 *
 * An address is held as big-endian 32-bit words (1 for IPv4, 4 for IPv6), so both families
 * share one column layout: Uint32Arrays of starts, ends, ASNs and indexes into de-duplicated
 * organisation names (16 bytes per IPv4 row, 40 per IPv6 row), searched by binary search on the
 * starts. Neither loading nor lookups use BigInt, and loading allocates almost nothing per line.
 */

export interface AsnRecord {
  asn: number;
  /** The AS organisation name, or null when the data has none. */
  isp: string | null;
}

/**
 * Whether an AS number identifies a real network rather than a special-purpose one (IANA
 * "Special-Purpose AS Numbers": 0, AS_TRANS 23456, documentation, private use, and the reserved
 * 64496-131071 block). The data carries a few private ASNs seen in BGP (e.g. AS65002); they say
 * nothing about who runs the address, so they are treated as no data.
 */
export function isPublicAsn(asn: number): boolean {
  return Number.isInteger(asn) && asn > 0 && asn < 4_200_000_000 && asn !== 23456 && !(asn >= 64496 && asn <= 131071);
}

/** The first words of a table's binary image: 'TRSA' read as a little- or big-endian word, and the layout's version. */
const IMAGE_MAGIC = 0x41535254;
const IMAGE_VERSION = 1;

/** Marks a row without an organisation name in the `orgs` column. */
const NO_ORG = 0xffffffff;

/** Compares the `width`-word numbers at a[ai] and b[bi]: negative, zero or positive. */
function compareWords(a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number, width: number): number {
  for (let k = 0; k < width; k++) {
    const d = a[ai + k]! - b[bi + k]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** The ranges of one address family, `width` words per address, as parallel columns. */
class RangeSet {
  constructor(
    readonly width: number,
    readonly starts: Uint32Array,
    readonly ends: Uint32Array,
    readonly asns: Uint32Array,
    readonly orgs: Uint32Array,
  ) {}

  get length(): number {
    return this.asns.length;
  }

  /** The row whose range holds `address` (`width` words), or -1. */
  find(address: ArrayLike<number>): number {
    const { width, starts, ends } = this;
    // The last row starting at or before the address holds it if it also ends at or after it.
    let lo = 0;
    let hi = this.length - 1;
    let row = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compareWords(starts, mid * width, address, 0, width) <= 0) {
        row = mid;
        lo = mid + 1;
      } else {
        hi = mid - 1;
      }
    }
    return row >= 0 && compareWords(ends, row * width, address, 0, width) >= 0 ? row : -1;
  }
}

export class AsnTable {
  constructor(
    private readonly v4: RangeSet,
    private readonly v6: RangeSet,
    private readonly orgNames: readonly string[],
  ) {}

  /**
   * The table as one binary image (its columns as they are in memory, the names as JSON), which
   * {@link AsnTable.fromImage} reads back without parsing a line: the bundled CSVs take about a
   * second of CPU to parse, an image a few milliseconds to read.
   */
  toImage(): Buffer {
    const names = Buffer.from(JSON.stringify(this.orgNames));
    const columns = [this.v4, this.v6].flatMap((set) => [set.starts, set.ends, set.asns, set.orgs]);
    const header = new Uint32Array([IMAGE_MAGIC, IMAGE_VERSION, this.v4.length, this.v6.length, names.length]);
    return Buffer.concat([header, ...columns, names].map((part) => Buffer.from(part.buffer, part.byteOffset, part.byteLength)));
  }

  /** Reads an image made by {@link AsnTable.toImage} on a machine of the same byte order; undefined if it is not one. */
  static fromImage(image: Buffer): AsnTable | undefined {
    // The columns are viewed in place, which needs 4-byte alignment: a copy when it is not.
    const bytes = image.byteOffset % 4 === 0 ? image : Buffer.from(image);
    const words = (offset: number, length: number) => new Uint32Array(bytes.buffer, bytes.byteOffset + offset, length);
    if (bytes.length < 20) return undefined;
    const [magic, version, v4Rows, v6Rows, namesLength] = words(0, 5);
    if (magic !== IMAGE_MAGIC || version !== IMAGE_VERSION) return undefined;
    let offset = 20;
    const set = (width: 1 | 4, rows: number) => {
      const take = (length: number) => {
        const column = words(offset, length);
        offset += length * 4;
        return column;
      };
      return new RangeSet(width, take(rows * width), take(rows * width), take(rows), take(rows));
    };
    if (bytes.length !== offset + (v4Rows! * 4 + v6Rows! * 10) * 4 + namesLength!) return undefined;
    const v4 = set(1, v4Rows!);
    const v6 = set(4, v6Rows!);
    const names = JSON.parse(bytes.toString('utf8', offset, offset + namesLength!)) as string[];
    return new AsnTable(v4, v6, names);
  }

  /** The ASN of an address given as 1 (IPv4) or 4 (IPv6) big-endian 32-bit words. */
  lookup(words: readonly number[]): AsnRecord | null {
    const ranges = words.length === 1 ? this.v4 : this.v6;
    const row = ranges.find(words);
    if (row < 0) return null;
    const org = ranges.orgs[row]!;
    return { asn: ranges.asns[row]!, isp: org === NO_ORG ? null : this.orgNames[org]! };
  }

  /**
   * What the table says of one AS: its organisation name and the ranges it holds, with the
   * number of IPv4 addresses in them; null when no range names it. A scan of the ASN columns (a
   * few milliseconds; an index of every AS would stall the first call for a third of a second),
   * its answers kept for the last ANNOUNCED_CACHE ASes asked for.
   */
  announced(asn: number): AsnAnnouncement | null {
    const cached = this.announcements.get(asn);
    if (cached !== undefined) return cached;
    let entry: AsnAnnouncement | null = null;
    for (const set of [this.v4, this.v6]) {
      const { asns, orgs } = set;
      for (let row = 0; row < asns.length; row++) {
        if (asns[row] !== asn) continue;
        entry ??= { asn, isp: null, ipv4Ranges: 0, ipv4Addresses: 0, ipv6Ranges: 0 };
        if (set.width === 1) {
          entry.ipv4Ranges++;
          entry.ipv4Addresses += set.ends[row]! - set.starts[row]! + 1;
        } else {
          entry.ipv6Ranges++;
        }
        if (entry.isp === null && orgs[row] !== NO_ORG) entry.isp = this.orgNames[orgs[row]!]!;
      }
    }
    if (this.announcements.size >= ANNOUNCED_CACHE) this.announcements.delete(this.announcements.keys().next().value!);
    this.announcements.set(asn, entry);
    return entry;
  }

  private readonly announcements = new Map<number, AsnAnnouncement | null>();
}

/** How many ASes' announcements are kept (the oldest asked for goes first). */
const ANNOUNCED_CACHE = 1024;

/** An AS as the table knows it: the ranges announced for it. */
export interface AsnAnnouncement extends AsnRecord {
  ipv4Ranges: number;
  /** Addresses in its IPv4 ranges (an IPv6 count would say nothing: every /64 holds 2^64). */
  ipv4Addresses: number;
  ipv6Ranges: number;
}

const QUOTE = 0x22;
const WELL_FORMED_QUOTED = /^"(?:[^"]|"")*"$/;
const PLACEHOLDER = /^AS\d+$/;

/** FNV-1a over the char codes of text[from, to). */
function fnv1a(text: string, from: number, to: number): number {
  let hash = 0x811c9dc5;
  for (let i = from; i < to; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash >>> 0;
}

/**
 * Organisation names, de-duplicated: the tables store an index into `names`.
 *
 * Fields are matched by their raw text in place, through an open-addressing hash table, so the
 * common case of a name seen before allocates nothing (a Map would need a string per lookup and
 * was the slowest part of loading). A field is decoded and unescaped only when first seen.
 */
class OrgNames {
  readonly names: string[] = [];
  /** Each distinct raw field (quotes and all), its hash, and the name index it stands for. */
  private readonly raws: string[] = [];
  private readonly hashes: number[] = [];
  private readonly indexes: number[] = [];
  /** 1 + an index into `raws`, or 0 for a free slot; kept at most half full. */
  private slots = new Uint32Array(1 << 18);

  /**
   * The index of the org field at [from, to) of the latin1 `text` (equally, of the `bytes` it
   * was decoded from), or NO_ORG for an empty one or for the `AS<number>` placeholder the data
   * uses when it has no name. Throws on a badly quoted field.
   */
  intern(text: string, bytes: Buffer, from: number, to: number): number {
    const hash = fnv1a(text, from, to);
    const mask = this.slots.length - 1;
    let slot = hash & mask;
    for (let entry = this.slots[slot]!; entry !== 0; entry = this.slots[slot]!) {
      const raw = this.raws[entry - 1]!;
      if (raw.length === to - from && text.startsWith(raw, from)) return this.indexes[entry - 1]!;
      slot = (slot + 1) & mask;
    }

    let name = bytes.toString('utf8', from, to);
    if (bytes[from] === QUOTE) {
      if (!WELL_FORMED_QUOTED.test(name)) throw new Error('badly quoted organisation');
      name = name.slice(1, -1).replaceAll('""', '"');
    }
    const index = name === '' || PLACEHOLDER.test(name) ? NO_ORG : this.names.push(name) - 1;
    // A fresh copy: a slice of `text` would pin the whole chunk in memory.
    this.raws.push(bytes.toString('latin1', from, to));
    this.hashes.push(hash);
    this.indexes.push(index);
    this.slots[slot] = this.raws.length;
    if (this.raws.length * 2 > this.slots.length) this.grow();
    return index;
  }

  private grow(): void {
    this.slots = new Uint32Array(this.slots.length * 2);
    const mask = this.slots.length - 1;
    this.hashes.forEach((hash, i) => {
      let slot = hash & mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
      this.slots[slot] = i + 1;
    });
  }
}

/** The decimal integer at [from, to) of `text` if it is below 2^32, else NaN. */
function parseUint32(text: string, from: number, to: number): number {
  if (to <= from || to - from > 10) return NaN;
  let value = 0;
  for (let i = from; i < to; i++) {
    const digit = text.charCodeAt(i) - 0x30;
    if (digit < 0 || digit > 9) return NaN;
    value = value * 10 + digit;
  }
  return value <= 0xffffffff ? value : NaN;
}

/** Scratch space for parseUint128: 128 bits as eight 16-bit limbs, most significant first. */
const LIMBS = new Float64Array(8);

/**
 * Parses the decimal integer at [from, to) of `text` into `out` as four big-endian 32-bit
 * words. False if it is not a plain decimal below 2^128.
 */
function parseUint128(text: string, from: number, to: number, out: Uint32Array): boolean {
  if (to <= from || to - from > 39) return false;
  LIMBS.fill(0);
  // Multiply-and-add 9 digits at a time: limb * 10^9 + carry stays well below 2^53.
  for (let i = from; i < to; ) {
    const chunkEnd = Math.min(i + 9, to);
    let carry = 0;
    let scale = 1;
    for (; i < chunkEnd; i++) {
      const digit = text.charCodeAt(i) - 0x30;
      if (digit < 0 || digit > 9) return false;
      carry = carry * 10 + digit;
      scale *= 10;
    }
    for (let k = 7; k >= 0; k--) {
      const v = LIMBS[k]! * scale + carry;
      carry = Math.floor(v / 0x10000);
      LIMBS[k] = v - carry * 0x10000;
    }
    if (carry !== 0) return false;
  }
  for (let k = 0; k < 4; k++) out[k] = LIMBS[2 * k]! * 0x10000 + LIMBS[2 * k + 1]!;
  return true;
}

/** Parses an address number of `out.length` words (1 or 4) into `out`. */
function parseAddress(text: string, from: number, to: number, out: Uint32Array): boolean {
  if (out.length === 4) return parseUint128(text, from, to, out);
  const value = parseUint32(text, from, to);
  out[0] = value;
  return !Number.isNaN(value);
}

/**
 * Read size. It keeps each chunk's latin1 text below Node's threshold (about 1 MB) for making
 * external strings, whose memory the allocator tends to keep after they are freed.
 */
const CHUNK_SIZE = 1 << 19;

/**
 * Reads `file` through one reused buffer, handing `onLines` each run of whole lines: a view
 * that ends just after a newline, or at the end of the file. The view is overwritten by the
 * next read, so nothing may keep it.
 */
async function forEachChunk(file: string, onLines: (bytes: Buffer) => void): Promise<void> {
  const handle = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK_SIZE);
    let filled = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buf, filled, buf.length - filled, null);
      const end = filled + bytesRead;
      const cut = bytesRead === 0 ? end : buf.lastIndexOf(10, end - 1) + 1;
      if (cut === 0 && end === buf.length) throw new Error(`${file}: a line is longer than ${CHUNK_SIZE} bytes`);
      if (cut > 0) onLines(buf.subarray(0, cut));
      if (bytesRead === 0) return;
      buf.copyWithin(0, cut, end);
      filled = end - cut;
    }
  } finally {
    await handle.close();
  }
}

/**
 * The lines of `file`. Each chunk is decoded as latin1, so string offsets are byte offsets and
 * fields can be cut from either `text` or `bytes`; `\r\n` is accepted.
 */
function forEachLine(
  file: string,
  onLine: (text: string, bytes: Buffer, start: number, end: number) => void,
): Promise<void> {
  return forEachChunk(file, (bytes) => {
    const text = bytes.toString('latin1');
    for (let start = 0; start < text.length; ) {
      let nl = text.indexOf('\n', start);
      if (nl === -1) nl = text.length;
      onLine(text, bytes, start, nl > start && text.charCodeAt(nl - 1) === 0x0d ? nl - 1 : nl);
      start = nl + 1;
    }
  });
}

/** An upper bound on the number of lines in `file`. */
async function countLines(file: string): Promise<number> {
  let lines = 1;
  await forEachChunk(file, (bytes) => {
    for (let nl = bytes.indexOf(10); nl !== -1; nl = bytes.indexOf(10, nl + 1)) lines++;
  });
  return lines;
}

/**
 * Reads one family's `start,end,asn,org` CSV. Rows with a special-purpose ASN are dropped.
 * Throws, naming the file and line, on a malformed line or if the starts are not in ascending
 * order (the binary search depends on it).
 *
 * The lines are counted first so that each column is allocated once at its final size: growing
 * them as rows arrive leaves tens of megabytes of freed buffers that the allocator keeps.
 */
/** Lines between two progress reports while a range file is read. */
const PROGRESS_EVERY = 10_000;

async function readRanges(file: string, width: 1 | 4, orgs: OrgNames, capacity: number, step: Step): Promise<RangeSet> {
  const starts = new Uint32Array(capacity * width);
  const ends = new Uint32Array(capacity * width);
  const asns = new Uint32Array(capacity);
  const orgIndexes = new Uint32Array(capacity);
  let rows = 0;
  const start = new Uint32Array(width);
  const end = new Uint32Array(width);
  const previousStart = new Uint32Array(width);
  let line = 0;

  await forEachLine(file, (text, bytes, from, to) => {
    line++;
    if (line % PROGRESS_EVERY === 0) step.update(line);
    if (from === to) return;
    try {
      const c1 = text.indexOf(',', from);
      const c2 = c1 === -1 ? -1 : text.indexOf(',', c1 + 1);
      const c3 = c2 === -1 ? -1 : text.indexOf(',', c2 + 1);
      if (c3 === -1 || c3 >= to) throw new Error('expected 4 fields');
      if (!parseAddress(text, from, c1, start) || !parseAddress(text, c1 + 1, c2, end)) {
        throw new Error('bad address number');
      }
      const asn = parseUint32(text, c2 + 1, c3);
      if (Number.isNaN(asn)) throw new Error('bad AS number');
      if (compareWords(start, 0, previousStart, 0, width) < 0 || compareWords(end, 0, start, 0, width) < 0) {
        throw new Error('range out of order');
      }
      previousStart.set(start);
      if (!isPublicAsn(asn)) return;
      if (rows === capacity) throw new Error('file grew while being read');
      starts.set(start, rows * width);
      ends.set(end, rows * width);
      asns[rows] = asn;
      orgIndexes[rows] = orgs.intern(text, bytes, c3 + 1, to);
      rows++;
    } catch (err) {
      throw new Error(`${file}:${line}: ${(err as Error).message}: ${bytes.toString('utf8', from, to)}`);
    }
  });

  return new RangeSet(
    width,
    starts.subarray(0, rows * width),
    ends.subarray(0, rows * width),
    asns.subarray(0, rows),
    orgIndexes.subarray(0, rows),
  );
}

/** Builds the table from the IPv4 and IPv6 CSV files. */
export async function loadAsnTable(ipv4Csv: string, ipv6Csv: string, progress: Progress = silentProgress): Promise<AsnTable> {
  const orgs = new OrgNames();
  const ranges = async (file: string, width: 1 | 4, name: string) => {
    const lines = await countLines(file);
    const step = progress.step(name, lines);
    const set = await readRanges(file, width, orgs, lines, step);
    step.done({ file });
    return set;
  };
  const v4 = await ranges(ipv4Csv, 1, 'GeoIP: IPv4 ASN ranges');
  const v6 = await ranges(ipv6Csv, 4, 'GeoIP: IPv6 ASN ranges');
  return new AsnTable(v4, v6, orgs.names);
}
