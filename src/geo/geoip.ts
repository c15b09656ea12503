import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import maxmind, { type Reader, type Response } from 'maxmind';
import { type Address, isTunnel, parsePublicAddress } from '../address.js';
import { type AsnAnnouncement, type AsnRecord, AsnTable, isPublicAsn, loadAsnTable } from './asn-table.js';

export type { AsnAnnouncement } from './asn-table.js';
import { silentProgress, type Progress } from '../progress.js';

/**
 * GeoIP enrichment: country, ASN and ISP (AS organisation name) of an address, read from local
 * files only. By default it uses the openly licensed ip-location-db data shipped as npm packages
 * (see GEO_ATTRIBUTION); an operator can point it at MaxMind-format databases instead.
 */

export interface GeoInfo {
  /** ISO 3166-1 alpha-2, upper case. */
  countryCode: string | null;
  asn: number | null;
  /** The AS organisation name. */
  isp: string | null;
}

export interface GeoIp {
  /**
   * Synchronous and allocation-light. Never throws: invalid input, non-public addresses
   * (private, loopback, documentation, ...), tunnels (Teredo, 6to4: the data describes their
   * relays) and addresses missing from the data give nulls.
   * IPv4-mapped IPv6 (`::ffff:1.2.3.4`) is looked up as IPv4.
   */
  lookup(ip: string): GeoInfo;
  /**
   * The organisation and announced ranges of an AS, from the bundled table; null when the table
   * does not name it, or when an ASN database was configured instead (it maps addresses to ASNs
   * and cannot list an AS's ranges).
   */
  announced?(asn: number): AsnAnnouncement | null;
}

export interface GeoIpOptions {
  /** A MaxMind-format country database (GeoLite2-Country or compatible) replacing the bundled one. */
  countryDb?: string;
  /** A MaxMind-format ASN database (GeoLite2-ASN or compatible) replacing the bundled CSVs. */
  asnDb?: string;
  /** Reports the loading steps (a bar on a terminal, a log line per step otherwise). */
  progress?: Progress;
}

/**
 * Attribution for the bundled data, as a Markdown paragraph (the CC BY 4.0 sources require it).
 * Databases configured through GeoIpOptions carry their own licence terms.
 */
export const GEO_ATTRIBUTION =
  'IP geolocation data from [ip-location-db](https://github.com/sapics/ip-location-db) by sapics. ' +
  'Country data (`geo-whois-asn-country`, published as CC0 1.0) is derived from RIR statistics and WHOIS data ' +
  'by the [Number Resource Organization](https://www.nro.net/) (CC BY 4.0) and public geofeeds. ' +
  'ASN and ISP data (`asn`) is licensed under [CC BY 4.0](https://creativecommons.org/licenses/by/4.0/) ' +
  'and combines data by [RouteViews](https://www.routeviews.org/), the [NRO](https://www.nro.net/) and ' +
  "[IP Geolocation by DB-IP](https://db-ip.com) (IP to ASN Lite), merged by ip-location-db; this server " +
  'further drops special-purpose AS numbers and placeholder organisation names.';

/** The fields read from MaxMind (GeoLite2 / GeoIP2) records and ip-location-db's flat ones. */
interface MmdbRecord {
  country?: { iso_code?: unknown };
  registered_country?: { iso_code?: unknown };
  country_code?: unknown;
  autonomous_system_number?: unknown;
  autonomous_system_organization?: unknown;
}

/**
 * The record for an address, or null. An IPv4-only database cannot answer for IPv6: its tree
 * would match the address's first 32 bits as if they were an IPv4 address.
 */
function mmdbRecord(reader: Reader<Response>, addr: Address): MmdbRecord | null {
  if (addr.version === 6 && reader.metadata.ipVersion === 4) return null;
  try {
    return reader.get(addr.text) as MmdbRecord | null;
  } catch {
    return null; // a corrupt data section; lookups must not throw
  }
}

const COUNTRY_CODE = /^[A-Za-z]{2}$/;

/** GeoLite2's `country`, else `registered_country` (set alone for some anycast ranges), else `country_code`. */
function countryOf(record: MmdbRecord | null): string | null {
  const code = record?.country?.iso_code ?? record?.registered_country?.iso_code ?? record?.country_code;
  return typeof code === 'string' && COUNTRY_CODE.test(code) ? code.toUpperCase() : null;
}

function asnOf(record: MmdbRecord | null): AsnRecord | null {
  const asn = record?.autonomous_system_number;
  if (typeof asn !== 'number' || !isPublicAsn(asn)) return null;
  const org = record?.autonomous_system_organization;
  return { asn, isp: typeof org === 'string' && org !== '' ? org : null };
}

const require = createRequire(import.meta.url);

/** Per-process caches, so every openGeoIp() shares one copy of the data. Failed loads are forgotten. */
let bundledAsn: Promise<AsnTable> | undefined;
const readers = new Map<string, Promise<Reader<Response>>>();

/**
 * Where a parsed copy of the bundled ASN table is kept between processes: npm's conventional
 * cache folder inside the `node_modules` the data came from (owned by whoever installed it, so
 * no other user can plant a table there). Named by the data files' size and time, so an update
 * of the package makes a new one.
 */
async function asnImagePath(files: string[]): Promise<string> {
  const stats = await Promise.all(files.map((file) => stat(file)));
  const key = createHash('sha256')
    .update(JSON.stringify([files, stats.map((s) => [s.size, s.mtimeMs])]))
    .digest('hex')
    .slice(0, 16);
  const nodeModules = path.resolve(path.dirname(require.resolve('@ip-location-db/asn/package.json')), '..', '..');
  return path.join(nodeModules, '.cache', 'trs', `asn-${key}.bin`);
}

/**
 * The bundled ASN table: read from its image when one was made (a few milliseconds), else
 * parsed from the CSVs (about a second of CPU) and its image written for the next process. An
 * image that cannot be written (a read-only install) only costs the parse.
 */
async function readBundledAsn(progress: Progress): Promise<AsnTable> {
  const files = [require.resolve('@ip-location-db/asn/asn-ipv4-num.csv'), require.resolve('@ip-location-db/asn/asn-ipv6-num.csv')];
  const image = await asnImagePath(files).catch(() => undefined);
  const cached = image ? await readFile(image).then(AsnTable.fromImage, () => undefined) : undefined;
  if (cached) return cached;
  const table = await loadAsnTable(files[0]!, files[1]!, progress);
  if (image) {
    const partial = `${image}.${process.pid}.tmp`;
    await mkdir(path.dirname(image), { recursive: true })
      .then(() => writeFile(partial, table.toImage()))
      .then(() => rename(partial, image))
      .catch(() => unlink(partial).catch(() => undefined));
  }
  return table;
}

function bundledAsnTable(progress: Progress): Promise<AsnTable> {
  bundledAsn ??= readBundledAsn(progress).catch((err: unknown) => {
    bundledAsn = undefined;
    throw new Error(`GeoIP: cannot load the bundled ASN data: ${(err as Error).message}`, { cause: err });
  });
  return bundledAsn;
}

function openMmdb(file: string, what: string, progress: Progress): Promise<Reader<Response>> {
  const key = path.resolve(file);
  let reader = readers.get(key);
  if (!reader) {
    const step = progress.step(`GeoIP: ${what} database`);
    reader = maxmind.open<Response>(key).then((opened) => {
      step.done({ file: key });
      return opened;
    }).catch((err: unknown) => {
      readers.delete(key);
      // Errors without a code come from parsing the file rather than reading it.
      const { code, message } = err as NodeJS.ErrnoException;
      const reason = code ? message : `not a MaxMind database (${message})`;
      throw new Error(`GeoIP: cannot open the ${what} database ${key}: ${reason}`, { cause: err });
    });
    readers.set(key, reader);
  }
  return reader;
}

/**
 * Loads the data (once per process) and returns the lookup. Rejects with an error naming the
 * file if a configured database is missing or is not a MaxMind database.
 */
export async function openGeoIp(options: GeoIpOptions = {}): Promise<GeoIp> {
  const progress = options.progress ?? silentProgress;
  // One after the other, so that a terminal shows one bar at a time.
  const countryReader = await openMmdb(
    options.countryDb ?? require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb'),
    'country',
    progress,
  );
  const table = options.asnDb ? undefined : await bundledAsnTable(progress);
  const asnOfAddress: (addr: Address) => AsnRecord | null = table
    ? (addr) => table.lookup(addr.words)
    : await openMmdb(options.asnDb!, 'ASN', progress).then((reader) => (addr) => asnOf(mmdbRecord(reader, addr)));

  return {
    lookup(ip: string): GeoInfo {
      const addr = parsePublicAddress(ip);
      // A tunnel's data names its relay, not the host behind it.
      if (!addr || isTunnel(addr)) return { countryCode: null, asn: null, isp: null };
      const asn = asnOfAddress(addr);
      return { countryCode: countryOf(mmdbRecord(countryReader, addr)), asn: asn?.asn ?? null, isp: asn?.isp ?? null };
    },
    announced(asn: number): AsnAnnouncement | null {
      return table && isPublicAsn(asn) ? table.announced(asn) : null;
    },
  };
}
