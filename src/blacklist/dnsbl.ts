import { open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { drain, type BlacklistSnapshots, type SnapshotHead } from './repository.js';

/**
 * The blacklist as a DNS blocklist: a data file for rbldnsd (Debian's `rbldnsd`), one
 * `combined` dataset with the IPv4 entries in an `ip4set` and the IPv6 entries in an
 * `ip6trie`. A listed address answers `127.0.0.2`, with a TXT that names its score and
 * categories and, with PUBLIC_URL, where to look it up (`$` is the queried address). The
 * RFC 5782 test entries are in it: 127.0.0.2 and ::FFFF:7F00:2 listed, 127.0.0.1 and
 * ::FFFF:7F00:1 not. Served by rbldnsd, never by Node: `rbldnsd -b ADDR/PORT ZONE:combined:FILE`.
 */

/** The answer of a listed address (RFC 5782 §2.1: 127.0.0.2 is "listed"). */
export const LISTED = '127.0.0.2';

export interface DnsblEntry {
  ip: string;
  score: number;
  categories: number[];
}

export interface DnsblOptions {
  /** The zone rbldnsd serves (e.g. `bl.example.com`): with it the file carries the zone's SOA. */
  zone?: string | undefined;
  /** The server's PUBLIC_URL: the TXT then says where to look an address up. */
  publicUrl?: string | undefined;
  confidence: number;
  generatedAt: Date;
  /** The snapshot the file was written from (the SOA's serial). */
  snapshotId: number;
}

/** A zone name as DNS takes it: labels of letters, digits and hyphens, dots between them. */
const ZONE = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

export function checkZone(zone: string): string {
  const name = zone.replace(/\.$/, '');
  if (!ZONE.test(name)) throw new Error(`not a DNS zone name: ${JSON.stringify(zone)} (labels of letters, digits and hyphens, dots between them)`);
  return name.toLowerCase();
}

/** The TXT of an entry: plain printable ASCII, no `:` (rbldnsd's separator), under 255 bytes. */
function txt(entry: DnsblEntry, lookup: string | undefined): string {
  const categories = entry.categories.length ? `, categories ${entry.categories.join(' ')}` : '';
  return `Listed, abuse confidence ${entry.score}${categories}${lookup ?? ''}`;
}

/**
 * The data file, line by line. `entries` in address order: every IPv4 entry before the first
 * IPv6 one (BlacklistSnapshots' `address` order).
 */
export async function* rbldnsdFile(entries: AsyncIterable<DnsblEntry>, options: DnsblOptions): AsyncGenerator<string> {
  // rbldnsd substitutes `$` in a TXT with the queried address.
  const lookup = options.publicUrl ? ` - see ${options.publicUrl.replace(/\/$/, '')}/lookup?ip=$` : undefined;
  yield `# Threat-Reputation Service blacklist as an rbldnsd data file (combined dataset)\n`;
  yield `# snapshot ${options.snapshotId}, generated ${options.generatedAt.toISOString()}, confidence >= ${options.confidence}\n`;
  yield `# serve: rbldnsd -b ADDRESS/PORT ${options.zone ?? 'ZONE'}:combined:FILE\n`;
  if (options.zone) {
    const zone = checkZone(options.zone);
    // serial: the snapshot; refresh 10m, retry 5m, expire 1d, negative answers cached 5m
    yield `$SOA 5m ${zone}. hostmaster.${zone}. ${options.snapshotId} 10m 5m 1d 5m\n`;
    yield `$NS 1d ${zone}.\n`;
  }
  yield `$DATASET ip4set:trs-v4 @\n$TTL 5m\n:${LISTED}:Listed by the Threat-Reputation Service\n`;
  yield `# RFC 5782 test entries: 127.0.0.2 listed, 127.0.0.1 not\n127.0.0.2 :${LISTED}:RFC 5782 test entry\n`;
  let v6 = false;
  for await (const entry of entries) {
    if (!v6 && entry.ip.includes(':')) {
      v6 = true;
      yield* v6Header();
    }
    yield `${entry.ip} :${LISTED}:${txt(entry, lookup)}\n`;
  }
  if (!v6) yield* v6Header();
}

function* v6Header(): Generator<string> {
  yield `$DATASET ip6trie:trs-v6 @\n$TTL 5m\n:${LISTED}:Listed by the Threat-Reputation Service\n`;
  yield `# RFC 5782 test entries: ::FFFF:7F00:2 listed, ::FFFF:7F00:1 not\n::ffff:7f00:2 :${LISTED}:RFC 5782 test entry\n`;
}

/** The current snapshot's entries from `confidence` up, in address order, as DNSBL entries. */
export async function* dnsblEntries(snapshots: BlacklistSnapshots, head: SnapshotHead, confidence: number): AsyncGenerator<DnsblEntry> {
  const selection = await snapshots.select(head, { minScore: confidence, limit: Number.MAX_SAFE_INTEGER });
  yield* drain(await snapshots.stream(selection, { select: 'dnsbl', order: 'address' }));
}

/**
 * Writes the current snapshot's DNS blocklist to `file` whole or not at all: into a temporary
 * file beside it, synced, then renamed over it, so rbldnsd (which reloads a changed file) never
 * reads half a list. Returns the number of listed entries.
 */
export async function writeDnsblFile(
  snapshots: BlacklistSnapshots,
  file: string,
  options: Omit<DnsblOptions, 'generatedAt' | 'snapshotId'>,
): Promise<{ entries: number; snapshotId: number }> {
  if (options.zone) checkZone(options.zone);
  const head = await snapshots.head();
  const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  let entries = 0;
  const counted = async function* (source: AsyncIterable<DnsblEntry>) {
    for await (const entry of source) {
      entries++;
      yield entry;
    }
  };
  const handle = await open(temporary, 'w', 0o644);
  try {
    const source = head ? counted(dnsblEntries(snapshots, head, options.confidence)) : (async function* () {})();
    let buffered = '';
    for await (const piece of rbldnsdFile(source, { ...options, generatedAt: head?.generatedAt ?? new Date(0), snapshotId: head?.id ?? 0 })) {
      buffered += piece;
      if (buffered.length >= 1 << 16) {
        await handle.write(buffered);
        buffered = '';
      }
    }
    await handle.write(buffered);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(temporary, { force: true });
    throw err;
  }
  await handle.close();
  await rename(temporary, file);
  return { entries, snapshotId: head?.id ?? 0 };
}
