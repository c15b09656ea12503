import { createHash } from 'node:crypto';
import type { CategoryService } from '../categories/categories.js';
import type { Clock } from '../clock.js';
import { unprocessable } from '../http/errors.js';
import type { BlacklistSnapshots, EntryRow, SnapshotHead } from './snapshots.js';

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

const CONTENT_TYPES: Record<ListFormat, string> = {
  json: 'application/json; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  csv: 'text/csv; charset=utf-8',
};

export type ListResponse =
  | { status: 304; etag: string }
  | { status: 200; etag: string; contentType: string; body: AsyncGenerator<string> };

/** Does an If-None-Match header name this tag (a list of tags, weak or strong, or `*`)? */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

const EMPTY_HEAD: SnapshotHead = { id: 0, generatedAt: new Date(0), contentHash: 'empty', scorePositions: [] };

export class BlacklistService {
  constructor(
    private readonly snapshots: BlacklistSnapshots,
    private readonly categories: CategoryService,
    private readonly clock: Clock,
  ) {}

  /** The query as the list reads it: aliases resolved, category ids checked against the catalogue. */
  private async resolve(params: ListParams, variant: ListVariant) {
    const confidence = params.confidence_minimum ?? params.confidenceMinimum ?? params.confidence ?? DEFAULT_CONFIDENCE;
    let categories: number[] | undefined;
    if (params.category) {
      categories = [...new Set(params.category.split(',').map(Number))].sort((a, b) => a - b);
      const known = await this.categories.severities();
      const unknown = categories.filter((id) => !known.has(id));
      if (unknown.length) {
        const message = `unknown threat-category id${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')} (see GET /categories)`;
        throw unprocessable(`Invalid category filter: ${message}.`, [{ location: 'query', name: 'category', message }]);
      }
    }
    const format: ListFormat = variant === 'git' ? 'txt' : (params.format ?? 'json');
    return { confidence, categories, format, limit: params.limit ?? DEFAULT_LIMIT, variant };
  }

  /**
   * The list for a request: 304 when `If-None-Match` names the current tag (the list is not
   * read), else the entries streamed in the requested format. The tag depends on the snapshot's
   * content and on every parameter that shapes the body, so it is the same on every process.
   */
  async list(params: ListParams, variant: ListVariant, ifNoneMatch: string | undefined): Promise<ListResponse> {
    const query = await this.resolve(params, variant);
    const head = (await this.snapshots.head()) ?? EMPTY_HEAD;
    const shape = [head.contentHash, query.variant, query.format, query.confidence, query.categories?.join('|') ?? '', query.limit];
    const etag = `"bl-${createHash('sha256').update(shape.join('/')).digest('hex').slice(0, 16)}"`;
    if (matches(ifNoneMatch, etag)) return { status: 304, etag };
    const generatedAt = head.id ? head.generatedAt : this.clock.now();
    return {
      status: 200,
      etag,
      contentType: CONTENT_TYPES[query.format],
      body: this.render(head, query, generatedAt),
    };
  }

  private async *render(
    head: SnapshotHead,
    query: Awaited<ReturnType<BlacklistService['resolve']>>,
    generatedAt: Date,
  ): AsyncGenerator<string> {
    const stream = head.id
      ? await this.snapshots.stream(head, { minScore: query.confidence, categories: query.categories, limit: query.limit })
      : { rows: (async function* () {})() as AsyncIterable<EntryRow>, release: () => undefined };
    try {
      if (query.format === 'txt') {
        for await (const row of stream.rows) yield row.ip + '\n';
        return;
      }
      if (query.format === 'csv') {
        yield 'ip,abuseConfidencePercentage,lastReportedAt,totalReports,categories\n';
        for await (const row of stream.rows) {
          yield `${row.ip},${row.score},${row.last_reported_at.toISOString()},${row.total_reports},${row.categories.join('|')}\n`;
        }
        return;
      }
      // JSON: `data` streams first and `meta` follows, once the count is known.
      const detailed = query.variant === 'detailed';
      let count = 0;
      let buffer = '{"data":[';
      for await (const row of stream.rows) {
        const entry: Record<string, unknown> = {
          ip: row.ip,
          ipAddress: row.ip,
          abuseConfidencePercentage: row.score,
          lastReportedAt: row.last_reported_at.toISOString(),
        };
        if (detailed) {
          entry.categories = row.categories;
          entry.countryCode = row.country_code ?? 'ZZ';
        }
        buffer += (count++ ? ',' : '') + JSON.stringify(entry);
        if (buffer.length >= 64 * 1024) {
          yield buffer;
          buffer = '';
        }
      }
      const meta = {
        generatedAt: generatedAt.toISOString(),
        confidence: String(query.confidence),
        confidenceMinimum: String(query.confidence),
        count,
        format: query.variant === 'git' ? 'standard' : query.variant,
      };
      yield `${buffer}],"meta":${JSON.stringify(meta)}}`;
    } finally {
      stream.release();
    }
  }
}
