import { createHash } from 'node:crypto';

/**
 * The threat-intelligence feeds of the blacklist (issue 28): a STIX 2.1 bundle and a MISP feed
 * (manifest and events). Pure: the entries come in, text goes out. Every id is a UUID v5 of the
 * server (its public URL) and what it names, so a platform that pulls again recognises what it
 * already holds.
 */

/** What a feed says of a listed address. */
export interface FeedEntry {
  ip: string;
  score: number;
  categories: number[];
  lastReportedAt: Date;
}

/** The server as a feed names it: its name, and the namespace of its ids. */
export interface FeedSource {
  name: string;
  namespace: string;
}

/** RFC 4122's namespace for URLs. */
const URL_NAMESPACE = '6ba7b811-9dad-11d1-80b4-00c04fd430c8';

/** A name-based UUID (version 5, SHA-1), RFC 4122 section 4.3. */
export function uuidV5(namespace: string, name: string): string {
  const hash = createHash('sha1').update(Buffer.from(namespace.replace(/-/g, ''), 'hex')).update(name, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The feeds' source: named by PUBLIC_URL's host when set (ids then differ between servers). */
export function feedSource(publicUrl: string | undefined): FeedSource {
  const origin = publicUrl ? new URL(publicUrl).origin : 'urn:threat-reputation-server';
  const host = publicUrl ? new URL(publicUrl).host : undefined;
  return { name: host ? `Threat-Reputation Service (${host})` : 'Threat-Reputation Service', namespace: uuidV5(URL_NAMESPACE, origin) };
}

const seconds = (date: Date) => String(Math.floor(date.getTime() / 1000));
/** STIX timestamps: RFC 3339 in UTC with milliseconds. */
const stixTime = (date: Date) => date.toISOString();

/** A STIX pattern for one address. */
export function stixPattern(ip: string): string {
  return `[${ip.includes(':') ? 'ipv6' : 'ipv4'}-addr:value = '${ip}']`;
}

/**
 * The bundle, as text chunks: the server's identity, then one indicator per entry in the
 * order given. `bundleName` makes the bundle's id (the list's ETag: the same content, the same id).
 */
export async function* stixBundle(
  source: FeedSource,
  entries: AsyncIterable<FeedEntry>,
  categoryNames: ReadonlyMap<number, string>,
  bundleName: string,
): AsyncGenerator<string> {
  const identityId = `identity--${uuidV5(source.namespace, 'identity')}`;
  const epoch = new Date(Date.UTC(2026, 0, 1));
  const identity = {
    type: 'identity',
    spec_version: '2.1',
    id: identityId,
    created: stixTime(epoch),
    modified: stixTime(epoch),
    name: source.name,
    identity_class: 'system',
  };
  yield `{"type":"bundle","id":"bundle--${uuidV5(source.namespace, `bundle:${bundleName}`)}","objects":[${JSON.stringify(identity)}`;
  for await (const entry of entries) {
    const at = stixTime(entry.lastReportedAt);
    const indicator = {
      type: 'indicator',
      spec_version: '2.1',
      id: `indicator--${uuidV5(source.namespace, `indicator:${entry.ip}`)}`,
      created: at,
      modified: at,
      created_by_ref: identityId,
      name: entry.ip,
      pattern: stixPattern(entry.ip),
      pattern_type: 'stix',
      valid_from: at,
      indicator_types: ['malicious-activity'],
      confidence: entry.score,
      labels: labelsOf(entry.categories, categoryNames),
    };
    yield `,${JSON.stringify(indicator)}`;
  }
  yield ']}';
}

const labelsOf = (categories: number[], names: ReadonlyMap<number, string>) => categories.map((id) => names.get(id) ?? `category ${id}`);

/** The MISP feed's organisation: this server. */
function mispOrg(source: FeedSource) {
  return { name: source.name, uuid: uuidV5(source.namespace, 'misp:org') };
}

/** The uuid of the event of `day` (at `confidence`). */
export function mispEventUuid(source: FeedSource, confidence: number, day: string): string {
  return uuidV5(source.namespace, `misp:event:${confidence}:${day}`);
}

const mispInfo = (source: FeedSource, confidence: number, day: string) =>
  `${source.name}: addresses listed at confidence ${confidence} or more, last reported on ${day}`;

const FEED_TAGS = [{ name: 'tlp:white' }, { name: 'threat-reputation:feed="blacklist"' }];
const categoryTag = (name: string) => ({ name: `threat-reputation:category="${name.replace(/"/g, "'")}"` });

/**
 * The manifest: one event per UTC day of last reports, keyed by its uuid, with what MISP's feed
 * generator writes there. `timestamp`: the snapshot's time, so that MISP fetches an event again
 * whenever the list changed (an event also loses addresses that were reported again or left).
 */
export function mispManifest(source: FeedSource, confidence: number, days: readonly string[], generatedAt: Date) {
  const manifest: Record<string, unknown> = {};
  for (const day of days) {
    manifest[mispEventUuid(source, confidence, day)] = {
      info: mispInfo(source, confidence, day),
      date: day,
      timestamp: seconds(generatedAt),
      analysis: 2,
      threat_level_id: 2,
      Orgc: mispOrg(source),
      Tag: FEED_TAGS,
    };
  }
  return manifest;
}

/** One event, as text chunks: the entries last reported on `day`, each an `ip-src` attribute. */
export async function* mispEvent(
  source: FeedSource,
  confidence: number,
  day: string,
  entries: AsyncIterable<FeedEntry>,
  categoryNames: ReadonlyMap<number, string>,
  generatedAt: Date,
): AsyncGenerator<string> {
  const event = {
    uuid: mispEventUuid(source, confidence, day),
    info: mispInfo(source, confidence, day),
    date: day,
    timestamp: seconds(generatedAt),
    publish_timestamp: seconds(generatedAt),
    published: true,
    analysis: '2',
    threat_level_id: '2',
    Orgc: mispOrg(source),
    Tag: FEED_TAGS,
  };
  yield `{"Event":${JSON.stringify(event).slice(0, -1)},"Attribute":[`;
  let first = true;
  for await (const entry of entries) {
    const attribute = {
      uuid: uuidV5(source.namespace, `misp:attribute:${confidence}:${day}:${entry.ip}`),
      type: 'ip-src',
      category: 'Network activity',
      value: entry.ip,
      to_ids: true,
      comment: `score ${entry.score}`,
      timestamp: seconds(entry.lastReportedAt),
      deleted: false,
      disable_correlation: false,
      Tag: labelsOf(entry.categories, categoryNames).map(categoryTag),
    };
    yield (first ? '' : ',') + JSON.stringify(attribute);
    first = false;
  }
  yield ']}}';
}
