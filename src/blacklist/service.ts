import { createHash } from 'node:crypto';
import type { CategoryService } from '../categories/categories.js';
import type { Clock } from '../clock.js';
import { unprocessable, within } from '../errors.js';
import { BLACKLIST_CATEGORIES } from './categories.js';
import type { BlacklistSnapshots, SnapshotHead } from './snapshots.js';

/** Which endpoint asks: the list, or one of the deprecated forms of it. */
export type ListVariant = 'standard' | 'detailed' | 'combined' | 'git';
export type ListFormat = 'json' | 'txt' | 'csv';

export interface ListParams {
  format?: ListFormat;
  source?: 'dynamic' | 'community';
  confidence?: number;
  confidenceMinimum?: number;
  confidence_minimum?: number;
  category?: string;
  limit?: number;
}

export const DEFAULT_CONFIDENCE = 75;
export const DEFAULT_LIMIT = 10_000;
export const LIMIT_MAX = 1_000_000;

const CONTENT_TYPES: Record<ListFormat, string> = {
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

export type ListResponse =
  | { status: 304; etag: string }
  | { status: 200; etag: string; contentType: string; body: AsyncGenerator<string> };

/**
 * Rendered lists by ETag. Firewalls poll the same few lists, so each is rendered once per
 * snapshot and process; lists over ENTRY_MAX are always streamed and never held.
 */
class RenderedLists {
  private static readonly TOTAL_MAX = 64 * 1024 * 1024;
  static readonly ENTRY_MAX = 4 * 1024 * 1024;
  private readonly lists = new Map<string, string>();
  private size = 0;

  get(etag: string): string | undefined {
    const body = this.lists.get(etag);
    if (body !== undefined) {
      this.lists.delete(etag);
      this.lists.set(etag, body); // most recently used last
    }
    return body;
  }

  set(etag: string, body: string): void {
    if (body.length > RenderedLists.ENTRY_MAX || this.lists.has(etag)) return;
    this.lists.set(etag, body);
    this.size += body.length;
    for (const [oldest, old] of this.lists) {
      if (this.size <= RenderedLists.TOTAL_MAX) break;
      this.lists.delete(oldest);
      this.size -= old.length;
    }
  }
}

const EMPTY_HEAD: SnapshotHead = { id: 0, generatedAt: new Date(0), contentHash: 'empty', scorePositions: [] };

export class BlacklistService {
  private readonly rendered = new RenderedLists();

  constructor(
    private readonly snapshots: BlacklistSnapshots,
    private readonly categories: CategoryService,
    private readonly clock: Clock,
  ) {}

  /**
   * The thematic categories for GET /blacklist-categories: each with the threat categories of
   * the catalogue this server has enabled (a group with none is left out), so that every id it
   * lists is a valid `category` filter.
   */
  async thematicCategories() {
    const enabled = await this.categories.severities();
    return BLACKLIST_CATEGORIES.map((c) => ({ ...c, categories: c.categories.filter((id) => enabled.has(id)) })).filter((c) => c.categories.length > 0);
  }

  /** The query as the list reads it: aliases resolved, category ids checked against the catalogue. */
  private async resolve(params: ListParams, variant: ListVariant) {
    const confidence = within('query', 'confidence', params.confidence_minimum ?? params.confidenceMinimum ?? params.confidence ?? DEFAULT_CONFIDENCE, 0, 100);
    const limit = within('query', 'limit', params.limit ?? DEFAULT_LIMIT, 1, LIMIT_MAX);
    let categories: number[] | undefined;
    if (params.category) {
      categories = [...new Set(params.category.split(',').map(Number))].sort((a, b) => a - b);
      const known = await this.categories.severities();
      const unknown = categories.filter((id) => !known.has(id));
      if (unknown.length) {
        const message = `unknown threat-category id${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (see GET /categories)`;
        throw unprocessable(`Invalid category filter: ${message}.`, [{ location: 'query', name: 'category', message }], 'unknown_category');
      }
    }
    const format: ListFormat = variant === 'git' ? 'txt' : (params.format ?? 'json');
    return { confidence, categories, format, limit, variant };
  }

  /**
   * The list for a request: not modified when the caller holds the current tag (`holds`: the
   * request's If-None-Match names it; the list is not read), else the entries streamed in the
   * requested format. The tag depends on the snapshot's
   * content and on every parameter that shapes the body, so it is the same on every process.
   */
  async list(params: ListParams, variant: ListVariant, holds: (etag: string) => boolean): Promise<ListResponse> {
    const query = await this.resolve(params, variant);
    const head = (await this.snapshots.head()) ?? EMPTY_HEAD;
    const shape = [head.contentHash, query.variant, query.format, query.confidence, query.categories?.join('|') ?? '', query.limit];
    const etag = `"bl-${createHash('sha256').update(shape.join('/')).digest('hex').slice(0, 16)}"`;
    if (holds(etag)) return { status: 304, etag };
    const contentType = CONTENT_TYPES[query.format];
    const cached = head.id ? this.rendered.get(etag) : undefined;
    if (cached !== undefined) return { status: 200, etag, contentType, body: (async function* () { yield cached; })() };
    const generatedAt = head.id ? head.generatedAt : this.clock.now();
    const body = this.render(head, query, generatedAt);
    return { status: 200, etag, contentType, body: head.id ? this.keep(etag, body) : body };
  }

  /** Passes the rendered chunks on, keeping a small list whole for the next request. */
  private async *keep(etag: string, chunks: AsyncGenerator<string>): AsyncGenerator<string> {
    let kept: string[] | undefined = [];
    let size = 0;
    for await (const chunk of chunks) {
      if (kept) {
        size += chunk.length;
        if (size > RenderedLists.ENTRY_MAX) kept = undefined;
        else kept.push(chunk);
      }
      yield chunk;
    }
    if (kept) this.rendered.set(etag, kept.join(''));
  }

  private async *render(
    head: SnapshotHead,
    query: Awaited<ReturnType<BlacklistService['resolve']>>,
    generatedAt: Date,
  ): AsyncGenerator<string> {
    const shape = query.format === 'json' ? (query.variant === 'detailed' ? 'json-detailed' : 'json') : query.format;
    const stream = head.id
      ? await this.snapshots.stream(head, { minScore: query.confidence, categories: query.categories, limit: query.limit }, shape)
      : { rows: (async function* () {})() as AsyncIterable<{ line: string }>, release: () => undefined };
    try {
      const json = query.format === 'json';
      let count = 0;
      let buffer = json ? '{"data":[' : query.format === 'csv' ? 'ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories\n' : '';
      for await (const { line } of stream.rows) {
        buffer += json ? (count ? ',' : '') + line : line + '\n';
        count++;
        if (buffer.length >= 64 * 1024) {
          yield buffer;
          buffer = '';
        }
      }
      if (json) {
        // `data` streams first and `meta` follows, once the count is known.
        const meta = {
          generatedAt: generatedAt.toISOString(),
          confidence: String(query.confidence),
          confidenceMinimum: String(query.confidence),
          count,
          format: query.variant === 'git' ? 'standard' : query.variant,
        };
        buffer += `],"meta":${JSON.stringify(meta)}}`;
      }
      if (buffer) yield buffer;
    } finally {
      stream.release();
    }
  }
}
