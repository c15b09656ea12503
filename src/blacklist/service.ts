import { createHash } from 'node:crypto';
import type { CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import { paid, type Payer, type Quota, type Usage } from '../keys/quota.js';
import { DomainError, sentence, within as inRange } from '../errors.js';
import { BlockAggregator, blockText, type Block } from '../address.js';
import { BLACKLIST_CATEGORIES } from './groups.js';
import { rbldnsdFile } from './dnsbl.js';
import { feedSource, mispEvent, mispEventUuid, mispManifest, stixBundle, type FeedEntry, type FeedSource } from './feeds.js';
import { FORMAT_FAMILY, NO_DELTA, writerFor, type Change, type FirewallFormat, type Heading, type Net } from './formats.js';
import { chunked, drain, type BlacklistSnapshots, type EntryFilter, type Selection, type SnapshotHead } from './repository.js';

/** Which endpoint asks: the list, one of the deprecated forms of it, or AbuseIPDB's. */
export type ListVariant = 'standard' | 'detailed' | 'combined' | 'git' | 'abuseipdb' | 'stix' | 'misp-manifest' | 'misp-event';
export type ListFormat = 'json' | 'txt' | 'csv' | 'rbldnsd' | FirewallFormat;

export interface ListParams {
  format?: ListFormat;
  source?: 'dynamic' | 'community';
  confidence?: number;
  confidenceMinimum?: number;
  confidence_minimum?: number;
  category?: string;
  limit?: number;
  aggregate?: boolean;
  since?: string;
  /** AbuseIPDB's filters: country codes, and one IP version. */
  onlyCountries?: string;
  exceptCountries?: string;
  ipVersion?: 4 | 6;
}

const countryList = (text: string | undefined) => (text ? [...new Set(text.toUpperCase().split(','))].sort() : undefined);

export const DEFAULT_CONFIDENCE = 75;
export const DEFAULT_LIMIT = 10_000;
export const LIMIT_MAX = 1_000_000;

const CONTENT_TYPES: Record<'json' | 'csv' | 'text', string> = {
  json: 'application/json; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
  text: 'text/plain; charset=utf-8',
};
const contentTypeOf = (format: ListFormat) => (format === 'json' || format === 'csv' ? CONTENT_TYPES[format] : CONTENT_TYPES.text);

const CSV_HEADER = 'ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories';

/**
 * A list as a request asks for it: its `ETag` (which the handler compares with If-None-Match
 * before anything is read) and the means to open its body.
 */
export interface ListAnswer {
  etag: string;
  /** The counter the request was metered on (charged, or only read), when a payer was given. */
  usage?: Usage;
  /** The body: rendered whole (a kept list) or as it is read. */
  open(): Promise<{ contentType: string; body: Buffer | AsyncGenerator<string> }>;
}

/**
 * Rendered lists by ETag, encoded once, up to `totalMax` bytes.
 * Firewalls poll the same few lists, so each is rendered once per snapshot and process; a list
 * over `entryMax` is always streamed and never held.
 */
class RenderedLists {
  private static readonly ENTRY_MAX = 4 * 1024 * 1024;
  readonly entryMax: number;
  private readonly lists = new Map<string, Buffer>();
  private size = 0;

  constructor(private readonly totalMax: number) {
    this.entryMax = Math.min(RenderedLists.ENTRY_MAX, totalMax);
  }

  get(etag: string): Buffer | undefined {
    const body = this.lists.get(etag);
    if (body !== undefined) {
      this.lists.delete(etag);
      this.lists.set(etag, body); // most recently used last
    }
    return body;
  }

  set(etag: string, body: Buffer): void {
    if (body.byteLength > this.entryMax || this.lists.has(etag)) return;
    this.lists.set(etag, body);
    this.size += body.length;
    for (const [oldest, old] of this.lists) {
      if (this.size <= this.totalMax) break;
      this.lists.delete(oldest);
      this.size -= old.length;
    }
  }
}

const EMPTY_HEAD: SnapshotHead = { id: 0, generatedAt: new Date(0), contentHash: 'empty', scorePositions: [] };

type Query = Awaited<ReturnType<BlacklistService['resolve']>>;

/** `"bl-…"` without the weak prefix a proxy may have added. */
const strong = (tag: string) => tag.trim().replace(/^W\//, '');

const refuseCombination = (name: string, message: string, detail: string) =>
  new DomainError('unprocessable', message, { code: 'invalid_combination', fields: [{ name, message: detail }] });

const single = (ip: string): Net => {
  const version = ip.includes(':') ? 6 : 4;
  return { version, address: ip, cidr: `${ip}/${version === 4 ? 32 : 128}` };
};
const fromBlock = (block: Block): Net => ({ version: block.version, address: blockText(block, true), cidr: blockText(block) });

/** The blocks covering exactly a list of addresses given in address order. */
async function* aggregated(ips: AsyncIterable<string>): AsyncGenerator<Net> {
  const aggregator = new BlockAggregator();
  for await (const ip of ips) for (const block of aggregator.add(ip)) yield fromBlock(block);
  for (const block of aggregator.end()) yield fromBlock(block);
}

export class BlacklistService {
  private readonly rendered: RenderedLists;

  /** `cacheBytes`: how much of the rendered lists this process keeps (BLACKLIST_CACHE_MB). */
  constructor(
    private readonly snapshots: BlacklistSnapshots,
    private readonly categories: CategoryService,
    private readonly clock: Clock,
    cacheBytes: number,
    private readonly quota?: Quota,
    /** PUBLIC_URL: the DNS blocklist's TXT says where to look an address up. */
    private readonly publicUrl?: string,
  ) {
    this.rendered = new RenderedLists(cacheBytes);
  }

  /**
   * The thematic categories for GET /blacklist-categories: each with the threat categories of
   * the catalogue this server has enabled (a group with none is left out), so that every id it
   * lists is a valid `category` filter.
   */
  async thematicCategories() {
    const enabled = await this.categories.severities();
    return BLACKLIST_CATEGORIES.map((c) => ({ ...c, categories: c.categories.filter((id) => enabled.has(id)) })).filter((c) => c.categories.length > 0);
  }

  /** Category ids of a filter (`18,22`), each checked against the catalogue. */
  async categoryFilter(text: string | undefined): Promise<number[] | undefined> {
    if (!text) return undefined;
    const categories = [...new Set(text.split(',').map(Number))].sort((a, b) => a - b);
    const known = await this.categories.severities();
    const unknown = categories.filter((id) => !known.has(id));
    if (unknown.length) {
      const message = `unknown threat-category id${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (see GET /categories)`;
      throw new DomainError('unprocessable', sentence(`Invalid category filter: ${message}`), { code: 'unknown_category', fields: [{ name: 'category', message }] });
    }
    return categories;
  }

  /** The query as the list reads it: aliases resolved, category ids checked, combinations refused. */
  private async resolve(params: ListParams, variant: ListVariant) {
    const confidence = inRange('confidence', params.confidence_minimum ?? params.confidenceMinimum ?? params.confidence ?? DEFAULT_CONFIDENCE, 0, 100);
    const limit = inRange('limit', params.limit ?? DEFAULT_LIMIT, 1, LIMIT_MAX);
    const categories = await this.categoryFilter(params.category);
    const format: ListFormat = variant === 'git' ? 'txt' : (params.format ?? 'json');
    const aggregate = params.aggregate ?? false;
    if (aggregate && (format === 'json' || format === 'csv' || format === 'rbldnsd')) {
      throw refuseCombination(
        'aggregate',
        `format=${format} lists each address with its score and cannot be aggregated; use format=cidr, txt or a firewall format.`,
        `not taken by format=${format}`,
      );
    }
    if (params.since !== undefined && NO_DELTA.has(format)) {
      throw refuseCombination('since', `format=${format} has no delta form; fetch the whole list without since.`, `not taken by format=${format}`);
    }
    const family = params.ipVersion ?? FORMAT_FAMILY[format as FirewallFormat];
    const countries = { only: countryList(params.onlyCountries), except: countryList(params.exceptCountries) };
    return { confidence, categories, format, limit, variant, aggregate, since: params.since, family, countries };
  }

  /** The tag of a list: the snapshot's content and every parameter that shapes the body. */
  private tag(head: SnapshotHead, query: Query): string {
    const shape = [head.contentHash, query.variant, query.format, query.confidence, query.categories?.join('|') ?? '', query.limit];
    if (query.aggregate) shape.push('aggregate');
    if (query.variant === 'abuseipdb') shape.push(query.family ?? '', query.countries.only?.join('|') ?? '', query.countries.except?.join('|') ?? '');
    return `"bl-${createHash('sha256').update(shape.join('/')).digest('hex').slice(0, 16)}"`;
  }

  /**
   * The list for a request. Its tag depends on the snapshot's content and on every parameter
   * that shapes the body, so it is the same on every process; nothing is read until `open`.
   * With `since`, the body is the delta from the kept snapshot whose list had that tag.
   * `payer`: the request's metering, run with the reading of the current snapshot.
   */
  async list(params: ListParams, variant: ListVariant, payer?: Payer): Promise<ListAnswer> {
    const query = await this.resolve(params, variant);
    const { head, usage } = await this.current(payer);
    const etag = this.tag(head, query);
    return {
      etag,
      usage,
      open: async () => {
        const base = query.since === undefined ? undefined : await this.baseOf(query, query.since);
        const key = base ? `${etag}<${base.id}` : etag;
        const contentType = contentTypeOf(query.format);
        const cached = head.id ? this.rendered.get(key) : undefined;
        if (cached !== undefined) return { contentType, body: cached };
        const body = chunked(base ? this.renderDelta(base, head, query, etag) : this.render(head, query));
        return { contentType, body: head.id ? this.keep(key, body) : body };
      },
    };
  }

  /** The current snapshot, read with the request's metering when a payer is given. */
  private async current(payer?: Payer): Promise<{ head: SnapshotHead; usage?: Usage }> {
    if (!payer) return { head: (await this.snapshots.head()) ?? EMPTY_HEAD };
    if (!this.quota) throw new Error('a metered list needs the quota');
    const { outcome, head } = await this.snapshots.headPaid({ quota: this.quota, payer, units: 1 });
    return { head: head ?? EMPTY_HEAD, usage: paid(outcome) };
  }

  /**
   * The list as a STIX 2.1 bundle (blacklist/feeds.ts): the same filters, snapshot and ETag
   * rules as the list itself, the body streamed and kept like the list's.
   */
  async stix(params: Pick<ListParams, 'confidence' | 'category' | 'limit'>, payer?: Payer): Promise<ListAnswer> {
    const query = await this.resolve({ ...params, format: 'json' }, 'stix');
    const { head, usage } = await this.current(payer);
    const etag = this.tag(head, query);
    return {
      etag,
      usage,
      open: async () => {
        const contentType = 'application/stix+json;version=2.1';
        const cached = head.id ? this.rendered.get(etag) : undefined;
        if (cached !== undefined) return { contentType, body: cached };
        const names = await this.categoryNames();
        const entries = this.feedEntries(await this.snapshots.select(head, this.filter(query)));
        const body = chunked(stixBundle(this.source, entries, names, etag));
        return { contentType, body: head.id ? this.keep(etag, body) : body };
      },
    };
  }

  /** The MISP feed's manifest: one event per UTC day of last reports of the list at the default confidence. */
  async mispManifest(payer?: Payer): Promise<ListAnswer> {
    const query = await this.resolve({ limit: LIMIT_MAX }, 'misp-manifest');
    const { head, usage } = await this.current(payer);
    const etag = this.tag(head, query);
    return {
      etag,
      usage,
      open: async () => {
        const manifest = mispManifest(this.source, query.confidence, await this.mispDays(head, query), this.heading(query, head).generatedAt);
        return { contentType: CONTENT_TYPES.json, body: Buffer.from(JSON.stringify(manifest)) };
      },
    };
  }

  /** One event of the MISP feed, by the uuid its manifest gave; not_found when the current list holds none. */
  async mispEvent(uuid: string, payer?: Payer): Promise<ListAnswer> {
    const query = await this.resolve({ limit: LIMIT_MAX }, 'misp-event');
    const { head, usage } = await this.current(payer);
    const day = (await this.mispDays(head, query)).find((d) => mispEventUuid(this.source, query.confidence, d) === uuid.toLowerCase());
    if (!day) {
      throw new DomainError('not_found', `The feed holds no event ${uuid} now; read the manifest again.`, {
        code: 'not_found',
        fields: [{ name: 'event', message: 'names no event of the current list' }],
      });
    }
    const etag = this.tag(head, query).replace(/"$/, `-${day}"`);
    return {
      etag,
      usage,
      open: async () => {
        const names = await this.categoryNames();
        const entries = this.feedEntries(await this.snapshots.select(head, { ...this.filter(query), reportedOn: day }));
        const generatedAt = this.heading(query, head).generatedAt;
        return { contentType: CONTENT_TYPES.json, body: chunked(mispEvent(this.source, query.confidence, day, entries, names, generatedAt)) };
      },
    };
  }

  /**
   * The MISP feed's days (its events) in a snapshot: read once per snapshot and process, not at
   * every event a MISP instance fetches (each fetch of the manifest's N events would otherwise
   * group the whole list N times).
   */
  private async mispDays(head: SnapshotHead, query: Query): Promise<string[]> {
    const key = `misp-days:${head.id}:${query.confidence}`;
    const kept = head.id ? this.rendered.get(key) : undefined;
    if (kept !== undefined) return JSON.parse(kept.toString()) as string[];
    const days = await this.snapshots.reportDays(await this.snapshots.select(head, this.filter(query)));
    if (head.id) this.rendered.set(key, Buffer.from(JSON.stringify(days)));
    return days;
  }

  private get source(): FeedSource {
    return (this.feed ??= feedSource(this.publicUrl));
  }
  private feed: FeedSource | undefined;

  private async categoryNames(): Promise<Map<number, string>> {
    return new Map((await this.categories.list()).map((c) => [c.id, c.name]));
  }

  /** A list's entries as the feeds read them, in the list's order. */
  private async *feedEntries(selection: Selection): AsyncGenerator<FeedEntry> {
    // A cursor's rows carry the time as PostgreSQL writes it.
    for await (const row of drain(await this.snapshots.stream(selection, { select: 'feed' }))) yield { ...row, lastReportedAt: new Date(row.lastReportedAt) };
  }

  /** The kept snapshot whose list (for these parameters) had the tag `since`. */
  private async baseOf(query: Query, since: string): Promise<SnapshotHead> {
    const wanted = strong(since);
    const base = (await this.snapshots.kept()).find((head) => this.tag(head, query) === wanted);
    if (base) return base;
    throw new DomainError('gone', `The list ${wanted} is no longer kept; fetch the whole list again without since.`, { code: 'snapshot_expired', fields: [{ name: 'since', message: 'names no list kept for these parameters' }] });
  }

  /** Passes the rendered chunks on, keeping a small list whole for the next request. */
  private async *keep(key: string, chunks: AsyncGenerator<string>): AsyncGenerator<string> {
    let kept: string[] | undefined = [];
    let size = 0;
    for await (const chunk of chunks) {
      if (kept) {
        size += chunk.length;
        if (size > this.rendered.entryMax) kept = undefined;
        else kept.push(chunk);
      }
      yield chunk;
    }
    if (kept) this.rendered.set(key, Buffer.from(kept.join('')));
  }

  private filter(query: Query): EntryFilter {
    return {
      minScore: query.confidence,
      categories: query.categories,
      limit: query.limit,
      family: query.family,
      onlyCountries: query.countries.only,
      exceptCountries: query.countries.except,
    };
  }

  private heading(query: Query, head: SnapshotHead, delta?: { since: string; etag: string }): Heading {
    return { confidence: query.confidence, categories: query.categories, generatedAt: head.id ? head.generatedAt : this.clock.now(), delta };
  }

  /** The entries of a list as networks: addresses in list order, or blocks in address order. */
  private async *networks(selection: Selection, aggregate: boolean): AsyncGenerator<Net> {
    const streamed = await this.snapshots.stream(selection, { select: 'ip', order: aggregate ? 'address' : 'list' });
    const ips = (async function* () {
      for await (const row of drain(streamed)) yield row.ip;
    })();
    if (aggregate) yield* aggregated(ips);
    else for await (const ip of ips) yield single(ip);
  }

  private async *render(head: SnapshotHead, query: Query): AsyncGenerator<string> {
    const selection = await this.snapshots.select(head, this.filter(query));
    if (query.format === 'rbldnsd') {
      const entries = drain(await this.snapshots.stream(selection, { select: 'dnsbl', order: 'address' }));
      yield* rbldnsdFile(entries, { publicUrl: this.publicUrl, confidence: query.confidence, generatedAt: this.heading(query, head).generatedAt, snapshotId: head.id });
      return;
    }
    if (query.format === 'json' || query.format === 'csv' || (query.format === 'txt' && !query.aggregate)) {
      yield* this.renderLines(selection, query, head);
      return;
    }
    const writer = writerFor(query.format, this.heading(query, head), query.aggregate);
    yield writer.begin();
    for await (const net of this.networks(selection, query.aggregate)) yield writer.write(net);
    yield writer.end();
  }

  /** json, csv and txt: lines PostgreSQL writes in their final form. */
  private async *renderLines(selection: Selection, query: Query, head: SnapshotHead): AsyncGenerator<string> {
    const json = query.format === 'json';
    const generatedAt = this.heading(query, head).generatedAt.toISOString();
    const abuseipdb = query.variant === 'abuseipdb';
    const shape = json ? (abuseipdb ? 'json-abuseipdb' : query.variant === 'detailed' ? 'json-detailed' : 'json') : query.format === 'csv' ? 'csv' : 'txt';
    let count = 0;
    // AbuseIPDB's `meta` (the time alone) comes first; this API's follows `data`, with the count.
    if (abuseipdb && json) yield `{"meta":${JSON.stringify({ generatedAt: generatedAt.replace(/\.\d{3}Z$/, '+00:00') })},"data":[`;
    else yield json ? '{"data":[' : query.format === 'csv' ? `${CSV_HEADER}\n` : '';
    for await (const { line } of drain(await this.snapshots.lines(selection, shape))) {
      yield json ? (count ? ',' : '') + line : line + '\n';
      count++;
    }
    if (abuseipdb && json) yield ']}';
    else if (json) {
      const meta = {
        generatedAt,
        confidence: String(query.confidence),
        confidenceMinimum: String(query.confidence),
        count,
        format: query.variant === 'git' ? 'standard' : query.variant,
      };
      yield `],"meta":${JSON.stringify(meta)}}`;
    }
  }

  /** What changed from the list of `base` to the current one, in the request's format. */
  private async *renderDelta(base: SnapshotHead, head: SnapshotHead, query: Query, etag: string): AsyncGenerator<string> {
    const filter = this.filter(query);
    const [from, to] = await Promise.all([this.snapshots.select(base, filter), this.snapshots.select(head, filter)]);
    const since = strong(query.since!);
    if (query.format === 'json' || query.format === 'csv') {
      yield* this.renderDeltaLines(from, to, query, head, since);
      return;
    }
    // resolve() refuses `since` for the formats without a delta (NO_DELTA).
    if (query.format === 'rbldnsd') throw new Error('format=rbldnsd has no delta form');
    const writer = writerFor(query.format, this.heading(query, head, { since, etag }), query.aggregate);
    yield writer.begin();
    for await (const { net, change } of query.aggregate ? this.blockChanges(from, to) : this.addressChanges(from, to)) {
      yield writer.write(net, change);
    }
    yield writer.end();
  }

  private async *addressChanges(from: Selection, to: Selection): AsyncGenerator<{ net: Net; change: Change }> {
    for await (const row of drain(await this.snapshots.changes(from, to, { select: 'ip' }))) {
      yield { net: single(row.ip), change: row.change };
    }
  }

  /** The blocks of two aggregated lists compared: removals first, each in address order. */
  private async *blockChanges(from: Selection, to: Selection): AsyncGenerator<{ net: Net; change: Change }> {
    const blocksOf = async (selection: Selection) => {
      const nets = new Map<string, Net>();
      for await (const net of this.networks(selection, true)) nets.set(net.cidr, net);
      return nets;
    };
    const [before, after] = [await blocksOf(from), await blocksOf(to)];
    for (const [cidr, net] of before) if (!after.has(cidr)) yield { net, change: 'removed' };
    for (const [cidr, net] of after) if (!before.has(cidr)) yield { net, change: 'added' };
  }

  private async *renderDeltaLines(from: Selection, to: Selection, query: Query, head: SnapshotHead, since: string): AsyncGenerator<string> {
    const json = query.format === 'json';
    const changes = await this.snapshots.changes(from, to, { select: json ? 'jsonLine' : 'csvLine' });
    const counts = { added: 0, removed: 0 };
    yield json ? '{"data":{"removed":[' : `change,${CSV_HEADER}\n`;
    for await (const row of drain(changes)) {
      if (!json) yield `${row.change},${row.line}\n`;
      else if (row.change === 'removed') yield (counts.removed ? ',' : '') + JSON.stringify({ ip: row.ip, ipAddress: row.ip });
      else yield (counts.added ? ',' : '],"added":[') + row.line;
      counts[row.change]++;
    }
    if (json) {
      const meta = {
        generatedAt: this.heading(query, head).generatedAt.toISOString(),
        since,
        confidence: String(query.confidence),
        confidenceMinimum: String(query.confidence),
        added: counts.added,
        removed: counts.removed,
        format: 'delta',
      };
      yield `${counts.added ? '' : '],"added":['}]},"meta":${JSON.stringify(meta)}}`;
    }
  }
}
