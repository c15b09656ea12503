import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { afterAll, describe, expect, it } from 'vitest';
import { AsnTable, loadAsnTable } from '../../src/geo/asn-table.js';
import { GEO_ATTRIBUTION, openGeoIp } from '../../src/geo/geoip.js';

const require = createRequire(import.meta.url);
const BUNDLED_COUNTRY_DB = require.resolve('@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb');
const NOTHING = { countryCode: null, asn: null, isp: null };

interface RefRow {
  start: bigint;
  end: bigint;
  asn: number;
  org: string;
}

const referenceCache = new Map<string, RefRow[]>();

/**
 * The address-text edition of the ASN data (`asn-ipv4.csv`: `1.1.1.0,1.1.1.255,13335,"Cloudflare, Inc."`),
 * parsed naively: an independent reference for the numeric files the module loads.
 */
function referenceRows(file: string): RefRow[] {
  const cached = referenceCache.get(file);
  if (cached) return cached;
  const rows = readFileSync(require.resolve(`@ip-location-db/asn/${file}`), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => {
      const m = /^([^,]+),([^,]+),(\d+),(?:"((?:[^"]|"")*)"|([^"]*))$/.exec(line);
      if (!m) throw new Error(`unexpected line ${line}`);
      const org = m[4]?.replaceAll('""', '"') ?? m[5]!;
      return { start: toBigInt(m[1]!), end: toBigInt(m[2]!), asn: Number(m[3]), org };
    });
  referenceCache.set(file, rows);
  return rows;
}

function toBigInt(address: string): bigint {
  return ipaddr.parse(address).toByteArray().reduce((n, byte) => (n << 8n) | BigInt(byte), 0n);
}

function toAddress(value: bigint, version: 4 | 6): string {
  const length = version === 4 ? 4 : 16;
  const bytes = Array.from({ length }, (_, i) => Number((value >> BigInt(8 * (length - 1 - i))) & 0xffn));
  return ipaddr.fromByteArray(bytes).toString();
}

const isUnicast = (address: string) => ipaddr.parse(address).range() === 'unicast';

/** Where the reference data has an answer worth checking: plain unicast, an ordinary public ASN. */
const checkable = (address: string, asn: number) => isUnicast(address) && asn > 0 && asn < 64496 && asn !== 23456;

const expected = (row: RefRow) => ({ asn: row.asn, isp: /^AS\d+$/.test(row.org) ? null : row.org });

// ---- A minimal MaxMind DB writer, to exercise the GeoLite2 record shapes without the real files.

type MmdbValue = string | number | { [key: string]: MmdbValue };

/** MaxMind DB data encoding, limited to maps, UTF-8 strings and uint32, all under 285 bytes or entries. */
function encode(value: MmdbValue): Buffer {
  const control = (type: number, size: number) =>
    Buffer.from(size < 29 ? [(type << 5) | size] : [(type << 5) | 29, size - 29]);
  if (typeof value === 'string') return Buffer.concat([control(2, Buffer.byteLength(value)), Buffer.from(value)]);
  if (typeof value === 'number') {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(value);
    return Buffer.concat([control(6, 4), bytes]);
  }
  const entries = Object.entries(value);
  return Buffer.concat([control(7, entries.length), ...entries.flatMap(([k, v]) => [encode(k), encode(v)])]);
}

/** Writes an mmdb (32-bit records) holding `networks`; IPv4 networks go under ::/96 in an IPv6 tree. */
function writeMmdb(file: string, ipVersion: 4 | 6, networks: Record<string, MmdbValue>): void {
  type Child = { node: number } | { data: number } | null;
  const nodes: [Child, Child][] = [[null, null]];
  const data: Buffer[] = [];
  let dataSize = 0;
  for (const [cidr, value] of Object.entries(networks)) {
    const [addr, length] = ipaddr.parseCIDR(cidr);
    const bytes = addr.toByteArray();
    const bits = ipVersion === 6 && bytes.length === 4 ? [...Array<number>(12).fill(0), ...bytes] : bytes;
    const prefix = length + (bits.length - bytes.length) * 8;
    let node = 0;
    for (let i = 0; i < prefix; i++) {
      const bit = (bits[i >> 3]! >> (7 - (i & 7))) & 1;
      if (i === prefix - 1) {
        nodes[node]![bit] = { data: dataSize };
      } else {
        const child = nodes[node]![bit];
        if (!child) nodes.push([null, null]);
        const next = child && 'node' in child ? child.node : nodes.length - 1;
        nodes[node]![bit] = { node: next };
        node = next;
      }
    }
    const encoded = encode(value);
    data.push(encoded);
    dataSize += encoded.length;
  }
  const nodeCount = nodes.length;
  const tree = Buffer.alloc(nodeCount * 8);
  nodes.forEach((pair, n) =>
    pair.forEach((child, side) => {
      const record = !child ? nodeCount : 'node' in child ? child.node : nodeCount + 16 + child.data;
      tree.writeUInt32BE(record, n * 8 + side * 4);
    }),
  );
  const metadata = encode({
    node_count: nodeCount,
    record_size: 32,
    ip_version: ipVersion,
    database_type: 'test',
    binary_format_major_version: 2,
    binary_format_minor_version: 0,
  });
  const marker = Buffer.from('abcdef4d61784d696e642e636f6d', 'hex');
  writeFileSync(file, Buffer.concat([tree, Buffer.alloc(16), ...data, marker, metadata]));
}

const scratch = mkdtempSync(path.join(tmpdir(), 'geo-test-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('openGeoIp with the bundled data', () => {
  it('knows well-known resolvers', async () => {
    const geo = await openGeoIp();
    expect(geo.lookup('1.1.1.1')).toEqual({ countryCode: 'AU', asn: 13335, isp: 'Cloudflare, Inc.' });
    expect(geo.lookup('8.8.8.8')).toEqual({ countryCode: 'US', asn: 15169, isp: 'Google LLC' });
    expect(geo.lookup('2606:4700:4700::1111')).toEqual({ countryCode: 'US', asn: 13335, isp: 'Cloudflare, Inc.' });
    expect(geo.lookup('2001:4860:4860::8888')).toEqual({ countryCode: 'US', asn: 15169, isp: 'Google LLC' });
  });

  it('answers from the first to the last address of a range, and not beyond', async () => {
    const geo = await openGeoIp();
    const cloudflare = { asn: 13335, isp: 'Cloudflare, Inc.' };
    // asn-ipv4.csv: 1.0.198.0,1.0.255.255,23969,... / 1.1.1.0,1.1.1.255,13335,... / 1.1.8.0,...
    expect(geo.lookup('1.1.1.0')).toMatchObject(cloudflare);
    expect(geo.lookup('1.1.1.255')).toMatchObject(cloudflare);
    expect(geo.lookup('1.1.0.255')).toMatchObject({ asn: null, isp: null });
    expect(geo.lookup('1.1.2.0')).toMatchObject({ asn: null, isp: null });
    expect(geo.lookup('1.0.255.255')).toMatchObject({ asn: 23969 });
    // asn-ipv6.csv: 2606:4700::,2606:4700:1:ffff:ffff:ffff:ffff:ffff,13335,... then 2606:4700:10::,...
    expect(geo.lookup('2606:4700::')).toMatchObject(cloudflare);
    expect(geo.lookup('2606:4700:1:ffff:ffff:ffff:ffff:ffff')).toMatchObject(cloudflare);
    expect(geo.lookup('2606:4700:2::')).toMatchObject({ asn: null, isp: null });
  });

  it('looks IPv4-mapped IPv6 up as IPv4', async () => {
    const geo = await openGeoIp();
    expect(geo.lookup('::ffff:8.8.8.8')).toEqual(geo.lookup('8.8.8.8'));
    expect(geo.lookup('::FFFF:0808:0808')).toEqual(geo.lookup('8.8.8.8'));
    expect(geo.lookup('::ffff:10.0.0.1')).toEqual(NOTHING);
  });

  it('gives nulls for invalid input and non-public addresses, without throwing', async () => {
    const geo = await openGeoIp();
    const inputs = [
      ...['', 'garbage', '8.8', '8.8.8', '8.8.8.8.8', '08.8.8.8', '256.8.8.8', ' 8.8.8.8', '8.8.8.8/32', '1:2:3'],
      ...['10.0.0.1', '127.0.0.1', '192.168.1.1', '100.64.0.1', '169.254.1.1', '192.0.2.1', '224.0.0.1'],
      ...['255.255.255.255', '0.0.0.0', '::', '::1', 'fe80::1', 'fe80::1%eth0', 'fc00::1', 'ff02::1'],
      ...['2001:db8::1', '2002:808:808::1', '2001:0:4136:e378::1'],
      ...([null, undefined, 42, {}] as unknown as string[]),
    ];
    for (const input of inputs) expect(geo.lookup(input), String(input)).toEqual(NOTHING);
  });

  it('reads the table back from its binary image, as the next process does', async () => {
    const v4 = require.resolve('@ip-location-db/asn/asn-ipv4-num.csv');
    const v6 = require.resolve('@ip-location-db/asn/asn-ipv6-num.csv');
    const table = await loadAsnTable(v4, v6);
    const image = table.toImage();
    const words = (ip: string) => {
      const bytes = ipaddr.parse(ip).toByteArray();
      return Array.from({ length: bytes.length / 4 }, (_, i) => ((bytes[4 * i]! << 24) | (bytes[4 * i + 1]! << 16) | (bytes[4 * i + 2]! << 8) | bytes[4 * i + 3]!) >>> 0);
    };
    // Read at an offset that is not a multiple of 4, as a Buffer from a pool may be.
    const shifted = Buffer.concat([Buffer.alloc(1), image]).subarray(1);
    for (const copy of [AsnTable.fromImage(image)!, AsnTable.fromImage(shifted)!]) {
      expect(copy).toBeInstanceOf(AsnTable);
      for (const ip of ['1.1.1.1', '8.8.8.8', '81.2.69.160', '2a03:2880:f10c:83:face:b00c:0:25de', '2001:4860:4860::8888', '10.0.0.1', '::2']) {
        expect(copy.lookup(words(ip)), ip).toEqual(table.lookup(words(ip)));
      }
    }
    expect(AsnTable.fromImage(image.subarray(0, image.length - 1))).toBeUndefined();
    expect(AsnTable.fromImage(Buffer.from('not a table at all, but long enough'))).toBeUndefined();
  });

  it('loads once per process', async () => {
    await openGeoIp();
    const started = performance.now();
    const [a, b] = await Promise.all([openGeoIp(), openGeoIp()]);
    expect(performance.now() - started).toBeLessThan(50);
    expect(a.lookup('1.1.1.1')).toEqual(b.lookup('1.1.1.1'));
  });

  it('gives upper-case ISO 3166-1 alpha-2 country codes', async () => {
    const geo = await openGeoIp();
    for (const ip of ['1.1.1.1', '8.8.8.8', '81.2.69.160', '2a03:2880:f10c:83:face:b00c:0:25de', '196.200.0.1']) {
      expect(geo.lookup(ip).countryCode).toMatch(/^[A-Z]{2}$/);
    }
  });

  describe.each([
    { version: 4 as const, file: 'asn-ipv4.csv' },
    { version: 6 as const, file: 'asn-ipv6.csv' },
  ])('against the IPv$version reference CSV', ({ version, file }) => {
    const rows = referenceRows(file);

    it('answers for the first and last address of ranges, and not just outside them', async () => {
      const geo = await openGeoIp();
      let checked = 0;
      for (let i = 1; i < rows.length - 1; i += 499) {
        const [prev, row, next] = [rows[i - 1]!, rows[i]!, rows[i + 1]!];
        const first = toAddress(row.start, version);
        const last = toAddress(row.end, version);
        if (!checkable(first, row.asn) || !checkable(last, row.asn) || next.start <= row.end) continue;
        expect(geo.lookup(first), first).toMatchObject(expected(row));
        expect(geo.lookup(last), last).toMatchObject(expected(row));
        const before = toAddress(row.start - 1n, version);
        if (prev.end < row.start - 1n && isUnicast(before)) {
          expect(geo.lookup(before), before).toMatchObject({ asn: null, isp: null });
        }
        const after = toAddress(row.end + 1n, version);
        if (next.start === row.end + 1n && checkable(after, next.asn)) {
          expect(geo.lookup(after), after).toMatchObject(expected(next));
        } else if (next.start > row.end + 1n && isUnicast(after)) {
          expect(geo.lookup(after), after).toMatchObject({ asn: null, isp: null });
        }
        checked++;
      }
      expect(checked).toBeGreaterThan(100);
    });

    // The data as shipped has overlaps in the IPv4 file only: the IPv6 file is said to have none.
    const overlaps = rows.flatMap((row, i) => (i > 0 && row.start <= rows[i - 1]!.end ? [[rows[i - 1]!, row] as const] : []));
    it.runIf(version === 4)('lets the later range win where two overlap', async () => {
      const geo = await openGeoIp();
      let checked = 0;
      for (const [prev, row] of overlaps) {
        const inBoth = toAddress(row.start, version);
        const inFirst = toAddress(row.start - 1n, version);
        if (checkable(inBoth, row.asn)) {
          expect(geo.lookup(inBoth)).toMatchObject(expected(row));
          checked++;
        }
        if (checkable(inFirst, prev.asn)) {
          expect(geo.lookup(inFirst)).toMatchObject(expected(prev));
          checked++;
        }
      }
      expect(checked).toBeGreaterThan(0);
    });
    it.runIf(version === 6)('has no overlapping ranges', () => {
      expect(overlaps).toEqual([]);
    });
  });

  it('reads quoted organisations with doubled quotes', async () => {
    const geo = await openGeoIp();
    const rows = referenceRows('asn-ipv4.csv');
    const row = rows.find((r) => r.org.includes('"') && checkable(toAddress(r.start, 4), r.asn));
    expect(row).toBeDefined();
    expect(geo.lookup(toAddress(row!.start, 4))).toMatchObject(expected(row!));
  });
});

describe('openGeoIp with MaxMind databases', () => {
  it('reads the country from a configured database', async () => {
    const geo = await openGeoIp({ countryDb: BUNDLED_COUNTRY_DB });
    expect(geo.lookup('8.8.8.8')).toEqual({ countryCode: 'US', asn: 15169, isp: 'Google LLC' });
  });

  it('reads GeoLite2-Country and GeoLite2-ASN shaped records', async () => {
    const countryDb = path.join(scratch, 'country.mmdb');
    const asnDb = path.join(scratch, 'asn.mmdb');
    writeMmdb(countryDb, 6, {
      '81.2.69.0/24': { country: { iso_code: 'GB' }, registered_country: { iso_code: 'GB' } },
      '5.6.7.0/24': { registered_country: { iso_code: 'fr' } },
      '2a02:8000::/20': { country: { iso_code: 'DE' } },
    });
    writeMmdb(asnDb, 4, {
      '81.2.69.0/24': { autonomous_system_number: 20712, autonomous_system_organization: 'Andrews & Arnold Ltd' },
      '5.6.7.0/24': { autonomous_system_number: 65000, autonomous_system_organization: 'AS65000' },
      '42.2.0.0/16': { autonomous_system_number: 4760, autonomous_system_organization: 'HKT Limited' },
    });
    const geo = await openGeoIp({ countryDb, asnDb });
    expect(geo.lookup('81.2.69.160')).toEqual({ countryCode: 'GB', asn: 20712, isp: 'Andrews & Arnold Ltd' });
    expect(geo.lookup('::ffff:81.2.69.160')).toEqual(geo.lookup('81.2.69.160'));
    // registered_country stands in for a missing country; private ASNs are no data.
    expect(geo.lookup('5.6.7.8')).toEqual({ countryCode: 'FR', asn: null, isp: null });
    // An IPv4-only database has no answer for IPv6, though 2a02:8001:: would read as 42.2.128.1.
    expect(geo.lookup('2a02:8001::1')).toEqual({ countryCode: 'DE', asn: null, isp: null });
    expect(geo.lookup('9.9.9.9')).toEqual(NOTHING);
  });

  it('fails fast, naming the file, when a database is missing or not an mmdb', async () => {
    const missing = path.join(scratch, 'missing.mmdb');
    await expect(openGeoIp({ countryDb: missing })).rejects.toThrow(
      `GeoIP: cannot open the country database ${missing}: ENOENT`,
    );
    const bogus = path.join(scratch, 'bogus.mmdb');
    writeFileSync(bogus, 'not a database');
    await expect(openGeoIp({ asnDb: bogus })).rejects.toThrow(
      `GeoIP: cannot open the ASN database ${bogus}: not a MaxMind database`,
    );
  });
});

describe('GEO_ATTRIBUTION', () => {
  it('credits every source, with the licence', () => {
    for (const needle of ['ip-location-db', 'CC BY 4.0', 'db-ip.com', 'routeviews.org', 'nro.net']) {
      expect(GEO_ATTRIBUTION).toContain(needle);
    }
    expect(GEO_ATTRIBUTION).not.toContain('\n');
  });
});

describe('announced ranges of an AS (bundled data)', () => {
  it('names the organisation and counts the IPv4 space; null for an AS the data does not name or a special-purpose one', async () => {
    const geo = await openGeoIp();
    const google = geo.announced!(15169);
    expect(google).toMatchObject({ asn: 15169, isp: 'Google LLC' });
    expect(google!.ipv4Ranges).toBeGreaterThan(0);
    expect(google!.ipv6Ranges).toBeGreaterThan(0);
    expect(google!.ipv4Addresses).toBeGreaterThanOrEqual(256 * google!.ipv4Ranges);
    // The address space it counts holds the addresses GeoIP places in the AS.
    expect(geo.lookup('8.8.8.8').asn).toBe(15169);
    expect(geo.announced!(4199999999)).toBeNull();
    expect(geo.announced!(64512)).toBeNull();
    expect(geo.announced!(15169)).toBe(google);
  });
});
