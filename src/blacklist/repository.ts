import type { QueryResultRow } from 'pg';
import QueryStream from 'pg-query-stream';
import type { Clock } from '../clock.js';
import type { BlacklistEntry } from '../db/entities/blacklist.js';
import type { IpStats } from '../db/entities/reputation.js';
import { readerOf, transaction, withClient, type Connection, type Pool, type Queryable, type Read } from '../db/pool.js';
import type { ReplicaPool } from '../db/replicas.js';
import { sql } from '../db/sql.js';
import type { Outcome, Payer, Quota } from '../keys/quota.js';

type HeadRow = { id: number; generated_at: Date; content_hash: string; score_positions: number[] };
const HEAD = {
  name: 'blacklist-head',
  query: sql`select id, generated_at, content_hash, score_positions from blacklist_snapshots order by id desc limit 1`,
};
const toHead = (row: HeadRow | undefined): SnapshotHead | undefined =>
  row && { id: row.id, generatedAt: row.generated_at, contentHash: row.content_hash, scorePositions: row.score_positions };
import { silentProgress, type Progress } from '../progress.js';
import type { IpAggregate } from '../reputation/repository.js';
import { scoreAggregate } from '../reputation/score.js';
import { BLACKLIST_CATEGORIES } from './groups.js';

/** Any stable 64-bit number: the lock that lets one process at a time regenerate on schedule. */
const REGENERATION_LOCK = 7_260_112_005;

/** The current snapshot's identity: what an ETag is made of. */
export interface SnapshotHead {
  id: number;
  generatedAt: Date;
  contentHash: string;
  /** scorePositions[s]: how many entries score s or more (entries are ordered by score). */
  scorePositions: number[];
}

export interface BlacklistStats {
  total: number;
  community: number;
  byConfidence: { '90-100': number; '75-89': number; '50-74': number; '25-49': number };
  byCategory: { name: string; count: number }[];
}

/** Per country of the listed addresses: how many, and their average score (for the attack map). */
export type CountryThreat = Record<string, { ips: number; avgScore: number }>;

/** How one entry is written: an address per line, a CSV line, or a JSON object. */
export type LineShape = 'txt' | 'csv' | 'json' | 'json-detailed' | 'json-abuseipdb';

/** Rows read through a cursor; `release` gives the connection back (also when not read to the end). */
export interface Streamed<T> {
  rows: AsyncIterable<T>;
  release: () => void;
}

/** The rows of a cursor, the cursor released however the reading ends. */
export async function* drain<T>(streamed: Streamed<T>): AsyncGenerator<T> {
  try {
    yield* streamed.rows;
  } finally {
    streamed.release();
  }
}

/** Text is handed on in pieces of about this size. */
const CHUNK = 64 * 1024;

/** Joins small pieces of text into chunks of about CHUNK characters. */
export async function* chunked(pieces: AsyncIterable<string>): AsyncGenerator<string> {
  let buffer = '';
  for await (const piece of pieces) {
    buffer += piece;
    if (buffer.length >= CHUNK) {
      yield buffer;
      buffer = '';
    }
  }
  if (buffer) yield buffer;
}

const ISO_TIME = `to_char(last_reported_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
/** AbuseIPDB writes times with an offset: `2026-11-20T13:58:41+00:00`. */
const OFFSET_TIME = `to_char(last_reported_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"+00:00"')`;
/** Each line shape as an SQL expression over an entry. */
const LINE_SQL: Record<LineShape, string> = {
  txt: 'ip',
  csv: `ip || ',' || score || ',' || ${ISO_TIME} || ',' || total_reports || ',' || array_to_string(categories, '|')`,
  json: `json_build_object('ip', ip, 'ipAddress', ip, 'abuseConfidencePercentage', score, 'lastReportedAt', ${ISO_TIME})::text`,
  'json-detailed': `json_build_object('ip', ip, 'ipAddress', ip, 'abuseConfidencePercentage', score, 'lastReportedAt', ${ISO_TIME},
                      'categories', categories, 'countryCode', coalesce(country_code, 'ZZ'))::text`,
  'json-abuseipdb': `json_build_object('ipAddress', ip, 'countryCode', country_code, 'abuseConfidenceScore', score,
                       'lastReportedAt', ${OFFSET_TIME})::text`,
};

/** Which entries of a snapshot a list holds: its filters, cut after `limit` entries. */
export interface EntryFilter {
  minScore: number;
  categories?: number[] | undefined;
  limit: number;
  family?: 4 | 6 | undefined;
  onlyCountries?: string[] | undefined;
  exceptCountries?: string[] | undefined;
}

/**
 * A list in a snapshot: the entries at positions up to `cutoff` that pass the filter. Entries
 * are ordered by score, so "the first `limit` entries that pass" is "those up to the position
 * of the `limit`-th one": every query of a list is a range of positions.
 */
export interface Selection {
  head: SnapshotHead;
  filter: EntryFilter;
  cutoff: number;
}

/**
 * What a read of entries returns, by name: the repository owns the SQL of each, and the rows are
 * typed by the entity's properties. `ip`: the address alone; `decision`: what a CrowdSec
 * decision is made of; `dnsbl`: what a DNS blocklist entry says (blacklist/dnsbl.ts); `csvLine`/`jsonLine`: a delta's line in the list's format, with its address.
 */
const ENTRY_COLUMNS = {
  ip: 'e.ip',
  decision: 'e.ip, e.categories, e.refresh_phase as "refreshPhase"',
  dnsbl: 'e.ip, e.score, e.categories',
  csvLine: `${LINE_SQL.csv} as line, e.ip`,
  jsonLine: `${LINE_SQL.json} as line, e.ip`,
} as const;
export interface EntryRows {
  ip: Pick<BlacklistEntry, 'ip'>;
  decision: Pick<BlacklistEntry, 'ip' | 'categories' | 'refreshPhase'>;
  dnsbl: Pick<BlacklistEntry, 'ip' | 'score' | 'categories'>;
  csvLine: Pick<BlacklistEntry, 'ip'> & { line: string };
  jsonLine: Pick<BlacklistEntry, 'ip'> & { line: string };
}
export type EntryColumns = keyof EntryRows;

/** What a query reads of each entry, and in which order. */
export interface Columns<K extends EntryColumns = EntryColumns> {
  select: K;
  /** `list`: by position; `address`: IPv4 before IPv6, each ascending. */
  order?: 'list' | 'address';
}

/** A renewal window: the refresh phases (seconds of the 12-hour cycle) it covers, as ranges. */
export type PhaseRanges = [number, number][];

export const REFRESH_CYCLE_SECONDS = 43_200;

const narrowed = (f: EntryFilter) => !!(f.categories?.length || f.family || f.onlyCountries?.length || f.exceptCountries?.length);

/** The filter as SQL conditions on the entries of alias `t`, its values numbered from `$first`. */
function filterSql(filter: EntryFilter, first: number, t = 'e'): { sql: string; values: unknown[] } {
  const values: unknown[] = [];
  const param = (value: unknown) => {
    values.push(value);
    return `$${first + values.length - 1}`;
  };
  const parts: string[] = [];
  if (filter.categories?.length) parts.push(`${t}.categories && ${param(filter.categories)}::smallint[]`);
  if (filter.family) parts.push(`strpos(${t}.ip, ':') ${filter.family === 6 ? '>' : '='} 0`);
  if (filter.onlyCountries?.length) parts.push(`${t}.country_code = any(${param(filter.onlyCountries)}::text[])`);
  if (filter.exceptCountries?.length) parts.push(`coalesce(${t}.country_code <> all(${param(filter.exceptCountries)}::text[]), true)`);
  return { sql: parts.map((part) => ` and ${part}`).join(''), values };
}

/** `snapshot_id = $n and position <= $n+1 and …` for a selection, on alias `t`. */
function selectionSql(selection: Selection, first: number, t = 'e'): { sql: string; values: unknown[] } {
  const filter = filterSql(selection.filter, first + 2, t);
  return {
    sql: `${t}.snapshot_id = $${first} and ${t}.position <= $${first + 1}${filter.sql}`,
    values: [selection.head.id, selection.cutoff, ...filter.values],
  };
}

const ORDER = { list: 'position', address: 'ip::inet' } as const;

export interface RegenerationResult {
  snapshotId: number;
  changed: boolean;
  entries: number;
  generatedAt: Date;
}

const BATCH = 10_000;

export function emptyStats(): BlacklistStats {
  return {
    total: 0,
    community: 0,
    byConfidence: { '90-100': 0, '75-89': 0, '50-74': 0, '25-49': 0 },
    byCategory: BLACKLIST_CATEGORIES.map((c) => ({ name: c.name, count: 0 })),
  };
}
/** The score from which an address counts on the community list of /blacklist-stats. */
const COMMUNITY_MIN = 25;

/** An address's aggregate as the regeneration scores it: the entity's properties. */
type AggregateRow = Pick<IpStats, 'ip' | 'totalReports' | 'reportRows' | 'uniqueReporters' | 'honeypotReports' | 'lastReportedAt' | 'categories' | 'maxSeverity' | 'decaySum' | 'countryCode' | 'asn' | 'isp' | 'positiveFeedback'>;

/**
 * The blacklist as snapshots in PostgreSQL: the scheduled job scores every reported address
 * (the whitelist left out) into a new snapshot, so that every process serves the same list
 * and the same ETag. A regeneration whose content equals the current snapshot keeps it (and
 * its ETag), only noting when it was checked.
 */
export class BlacklistSnapshots {
  private readonly read: Read;
  constructor(
    private readonly pool: Pool,
    private readonly clock: Clock,
    private readonly scoreOf: (aggregate: IpAggregate) => number,
    /** Earlier snapshots kept beside the current one (BLACKLIST_HISTORY), for deltas. */
    private readonly history = DEFAULT_HISTORY,
    /**
     * Where the entries of a snapshot are read (the read replicas, DATABASE_REPLICA_URL): a
     * snapshot is written in one transaction, so a replica that has its row has all its entries;
     * one that lags behind the snapshot a request names is not asked, the primary is.
     */
    private readonly reads: Pool = pool,
  ) {
    this.read = readerOf(pool);
  }

  /**
   * A connection that holds the snapshots `ids`: a read replica's once it has replayed them (a
   * snapshot is written in one transaction: its row means all its entries), else the primary's.
   */
  private holding(ids: number[]): Promise<Connection> {
    const reads = this.reads as Pool & Partial<Pick<ReplicaPool, 'connectWhere'>>;
    if (reads === this.pool || !reads.connectWhere) return this.pool.connect();
    const unique = [...new Set(ids)];
    return reads.connectWhere({ text: 'select count(*) = $2 as ok from blacklist_snapshots where id = any($1::int[])', values: [unique, unique.length] });
  }

  /** `work` on a connection that holds the snapshots `ids` (see `holding`). */
  private readHolding<T>(ids: number[], work: (client: Connection) => Promise<T>): Promise<T> {
    // withClient only asks its pool to lend a connection: here, one that holds the snapshots.
    return withClient({ connect: () => this.holding(ids) } as Pool, work);
  }

  /** The current snapshot. */
  async head(): Promise<SnapshotHead | undefined> {
    return toHead((await this.read<HeadRow>(HEAD))[0]);
  }

  /** The current snapshot, with the request's metering in the same statement (Quota.chargeWith). */
  async headPaid(paying: { quota: Quota; payer: Payer; units: number }): Promise<{ outcome: Outcome; head?: SnapshotHead }> {
    const { outcome, rows } = await paying.quota.chargeWith<HeadRow>(paying.payer, paying.units, HEAD);
    return { outcome, head: toHead(rows[0]) };
  }

  async stats(): Promise<BlacklistStats> {
    const { rows } = await this.reads.query<{ stats: BlacklistStats & { countries?: CountryThreat } }>({
      name: 'blacklist-stats',
      text: 'select stats from blacklist_snapshots order by id desc limit 1',
    });
    if (!rows[0]) return emptyStats();
    const { countries: _countries, ...stats } = rows[0].stats;
    return stats;
  }

  /** Average score per country of the current snapshot. */
  async countryThreat(): Promise<CountryThreat> {
    const { rows } = await this.reads.query<{ countries: CountryThreat | null }>({
      name: 'blacklist-country-threat',
      text: "select stats->'countries' as countries from blacklist_snapshots order by id desc limit 1",
    });
    return rows[0]?.countries ?? {};
  }

  /** A kept snapshot by id (a bouncer's or a client's base), or undefined when it is gone. */
  async headById(id: number): Promise<SnapshotHead | undefined> {
    return (await this.kept()).find((head) => head.id === id);
  }

  /** The snapshots kept for deltas, newest first (the current one first). */
  async kept(): Promise<SnapshotHead[]> {
    const { rows } = await this.pool.query<{ id: number; generated_at: Date; content_hash: string; score_positions: number[] }>({
      name: 'blacklist-kept',
      text: 'select id, generated_at, content_hash, score_positions from blacklist_snapshots order by id desc',
    });
    return rows.map((row) => ({ id: row.id, generatedAt: row.generated_at, contentHash: row.content_hash, scorePositions: row.score_positions }));
  }

  /** The list a filter makes of a snapshot (one small query when it narrows beyond the score). */
  async select(head: SnapshotHead, filter: EntryFilter): Promise<Selection> {
    const byScore = head.scorePositions[filter.minScore] ?? 0;
    if (!narrowed(filter) || filter.limit >= byScore) return { head, filter, cutoff: Math.min(byScore, filter.limit) };
    const where = filterSql(filter, 4);
    const { rows } = await this.readHolding([head.id], (client) =>
      client.query<{ position: number }>(
        `select e.position from blacklist_entries e
          where e.snapshot_id = $1 and e.position <= $2${where.sql}
          order by e.position offset $3 limit 1`,
        [head.id, byScore, filter.limit - 1, ...where.values],
      ),
    );
    return { head, filter, cutoff: rows[0]?.position ?? byScore };
  }

  /**
   * The entries of a list, read through a cursor (a large list never sits in memory whole).
   * `columns` names one of ENTRY_COLUMNS, SQL expressions over the entry (alias `e`): PostgreSQL writes each entry in
   * its final form where it can, and the process only joins text.
   */
  stream<K extends EntryColumns>(selection: Selection, columns: Columns<K>): Promise<Streamed<EntryRows[K]>> {
    return this.streamColumns(selection, ENTRY_COLUMNS[columns.select], columns.order);
  }

  /** The entries of a list written in one of the line shapes of the list formats. */
  lines(selection: Selection, shape: LineShape, order: Columns['order'] = 'list'): Promise<Streamed<{ line: string }>> {
    return this.streamColumns(selection, `${LINE_SQL[shape]} as line`, order);
  }

  private streamColumns<T>(selection: Selection, columns: string, order: Columns['order'] = 'list'): Promise<Streamed<T>> {
    const where = selectionSql(selection, 1);
    return this.cursor<T>(`select ${columns} from blacklist_entries e where ${where.sql} order by e.${ORDER[order]}`, where.values, [selection.head.id]);
  }

  /**
   * What changed from one list to another (the same filter on two snapshots): each entry with
   * `change` `removed` (as it was) or `added` (as it is), removals first. Entries on both are
   * left out, whatever their score did.
   */
  changes<K extends EntryColumns>(from: Selection, to: Selection, columns: Columns<K>): Promise<Streamed<EntryRows[K] & { change: 'added' | 'removed' }>> {
    const a = selectionSql(from, 1);
    const b = selectionSql(to, 1 + a.values.length);
    return this.cursor(
      `with a as (select ${ENTRY_COLUMNS[columns.select]}, e.ip as key_ip from blacklist_entries e where ${a.sql}),
            b as (select ${ENTRY_COLUMNS[columns.select]}, e.ip as key_ip from blacklist_entries e where ${b.sql})
       select 'removed' as change, a.* from a where not exists (select 1 from b where b.key_ip = a.key_ip)
       union all
       select 'added' as change, b.* from b where not exists (select 1 from a where a.key_ip = b.key_ip)
       order by change desc`,
      [...a.values, ...b.values],
      [from.head.id, to.head.id],
    );
  }

  /**
   * Entries of a list whose refresh phase falls in `phases` (the renewals of a bouncer's pull),
   * and, with `base`, that were on that earlier list too (new ones are sent as added anyway).
   */
  renewals<K extends EntryColumns>(selection: Selection, phases: PhaseRanges, columns: Columns<K>, base?: Selection): Promise<Streamed<EntryRows[K]>> {
    const where = selectionSql(selection, 1);
    const values = [...where.values];
    const ranges = phases.map(([lo, hi]) => {
      values.push(lo, hi);
      return `e.refresh_phase between $${values.length - 1} and $${values.length}`;
    });
    let onBase = '';
    if (base) {
      const earlier = selectionSql(base, values.length + 1, 'p');
      values.push(...earlier.values);
      onBase = ` and exists (select 1 from blacklist_entries p where ${earlier.sql} and p.ip::inet = e.ip::inet and p.ip = e.ip)`;
    }
    return this.cursor(
      `select ${ENTRY_COLUMNS[columns.select]} from blacklist_entries e
        where ${where.sql} and (${ranges.join(' or ') || 'false'})${onBase}
        order by e.position`,
      values,
      base ? [selection.head.id, base.head.id] : [selection.head.id],
    );
  }

  /** Entries of a list whose address lies in `first`..`last` (one address: both the same). */
  async within<K extends EntryColumns>(selection: Selection, first: string, last: string, columns: Columns<K>): Promise<EntryRows[K][]> {
    const where = selectionSql(selection, 3);
    const { rows } = await this.readHolding([selection.head.id], (client) =>
      client.query<EntryRows[K] & QueryResultRow>(
        `select ${ENTRY_COLUMNS[columns.select]} from blacklist_entries e
          where ${where.sql} and e.ip::inet between $1::inet and $2::inet
          order by e.${ORDER[columns.order ?? 'list']}`,
        [first, last, ...where.values],
      ),
    );
    return rows;
  }

  private async cursor<T>(text: string, values: unknown[], snapshots: number[]): Promise<Streamed<T>> {
    const client = await this.holding(snapshots);
    let broken: Error | undefined;
    const onError = (err: Error) => (broken = err);
    client.on('error', onError);
    const rows = client.query(new QueryStream(text, values, { batchSize: 1000 }));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      rows.destroy();
      client.off('error', onError);
      client.release(broken);
    };
    rows.once('end', release);
    rows.once('error', release);
    return { rows: rows as AsyncIterable<T>, release };
  }

  /** Scores every reported address into a new snapshot (or keeps the current one when equal). */
  async regenerate(progress: Progress = silentProgress): Promise<RegenerationResult> {
    return (await this.regenerateIf(async () => true, progress))!;
  }

  /**
   * The scheduled regeneration: once across every process (the first to take the lock), and
   * only when the last snapshot was checked `intervalMs` ago or more.
   */
  regenerateIfDue(intervalMs: number): Promise<RegenerationResult | undefined> {
    return this.regenerateIf(async (client) => {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [REGENERATION_LOCK]);
      if (!rows[0]!.locked) return false;
      const { rows: last } = await client.query<{ checked_at: Date }>('select checked_at from blacklist_snapshots order by id desc limit 1');
      return !last[0] || this.clock.now().getTime() - last[0].checked_at.getTime() >= intervalMs;
    });
  }

  /**
   * Regenerates, in one transaction, when `condition` holds, asked first inside that same
   * transaction (undefined when it does not). The scheduled job takes its transaction-scoped
   * lock there, so lock and work share one connection: needed on the embedded database, which
   * runs one transaction at a time, and behind a transaction-mode pooler, which keeps no
   * session (and no session lock) from one transaction to the next. Scoring a million addresses
   * takes longer than the request path's statement timeout: the transaction lifts it.
   */
  async regenerateIf(
    condition: (client: Queryable) => Promise<boolean>,
    progress: Progress = silentProgress,
  ): Promise<RegenerationResult | undefined> {
    const now = this.clock.now();
    return transaction(this.pool, async (client) => {
      if (!(await condition(client))) return undefined;
      // Counting costs a scan of ip_stats: only done when someone watches.
      const total =
        progress === silentProgress ? 1 : (await client.query<{ n: number }>('select count(*)::int as n from ip_stats')).rows[0]!.n;
      const scoring = progress.step('blacklist: scoring addresses', total);
      await client.query(`
        create temporary table blacklist_staging (
          ip text not null, score smallint not null, last_reported_at timestamptz not null,
          total_reports integer not null, categories smallint[] not null, country_code text
        ) on commit drop`);
      await client.query(
        `declare reported no scroll cursor for
           select s.ip, s.total_reports as "totalReports", s.report_rows as "reportRows", s.unique_reporters as "uniqueReporters",
                  s.honeypot_reports as "honeypotReports", s.last_reported_at as "lastReportedAt", s.categories,
                  s.max_severity as "maxSeverity", s.decay_sum as "decaySum", s.country_code as "countryCode", s.asn, s.isp,
                  s.positive_feedback as "positiveFeedback"
             from ip_stats s
            where not exists (select 1 from whitelist w where w.range >>= s.ip::inet)`,
      );
      for (;;) {
        const { rows } = await client.query<AggregateRow>(`fetch ${BATCH} from reported`);
        if (rows.length === 0) break;
        const scores = rows.map((r) => this.scoreOf({ ...r, whitelisted: false }));
        await client.query(
          `insert into blacklist_staging
           select v.ip, v.score, v.last_reported_at, v.total_reports, v.categories::smallint[], v.country_code
             from unnest($1::text[], $2::smallint[], $3::timestamptz[], $4::int[], $5::text[], $6::text[])
               as v(ip, score, last_reported_at, total_reports, categories, country_code)`,
          [
            rows.map((r) => r.ip),
            scores,
            rows.map((r) => r.lastReportedAt),
            rows.map((r) => r.totalReports),
            rows.map((r) => `{${r.categories.join(',')}}`),
            rows.map((r) => r.countryCode),
          ],
        );
        scoring.advance(rows.length);
      }
      await client.query('close reported');
      scoring.done();
      const writing = progress.step('blacklist: writing the snapshot');

      const { rows: [summary] } = await client.query<{ hash: string; total: number }>(
        `select md5(coalesce(string_agg(ip || ' ' || score || ' ' || extract(epoch from last_reported_at)::bigint
                                        || ' ' || total_reports || ' ' || categories::text,
                                        ',' order by score desc, last_reported_at desc, ip), '')) as hash,
                count(*)::int as total
           from blacklist_staging`,
      );
      const current = await client.query<{ id: number; content_hash: string; generated_at: Date }>(
        'select id, content_hash, generated_at from blacklist_snapshots order by id desc limit 1 for update',
      );
      const head = current.rows[0];
      if (head && head.content_hash === summary!.hash) {
        await client.query('update blacklist_snapshots set checked_at = $2 where id = $1', [head.id, now]);
        writing.done({ changed: false });
        return { snapshotId: head.id, changed: false, entries: summary!.total, generatedAt: head.generated_at };
      }

      const { rows: byScore } = await client.query<{ score: number; count: number }>(
        'select score, count(*)::int as count from blacklist_staging group by score',
      );
      const scorePositions = new Array<number>(101).fill(0);
      for (const { score, count } of byScore) scorePositions[score] = count;
      for (let s = 99; s >= 0; s--) scorePositions[s]! += scorePositions[s + 1]!;

      const stats = await this.computeStats(client, summary!.total, scorePositions);
      const { rows: [created] } = await client.query<{ id: number }>(
        `insert into blacklist_snapshots (generated_at, checked_at, content_hash, entry_count, score_positions, stats)
         values ($1, $1, $2, $3, $4, $5) returning id`,
        [now, summary!.hash, summary!.total, scorePositions, JSON.stringify(stats)],
      );
      await client.query(
        `insert into blacklist_entries (snapshot_id, position, ip, score, last_reported_at, total_reports, categories, country_code,
                                        refresh_phase)
         select $1, row_number() over (order by score desc, last_reported_at desc, ip), ip, score, last_reported_at,
                total_reports, categories, country_code, (hashtextextended(ip, 0) & 2147483647) % $2
           from blacklist_staging`,
        [created!.id, REFRESH_CYCLE_SECONDS],
      );
      // Fresh statistics, or the planner reads a million new rows as a few hundred and sorts.
      await client.query('analyze blacklist_entries');
      // The last `history` snapshots stay, for deltas and for downloads still streaming them.
      await client.query('delete from blacklist_snapshots where id < (select id from blacklist_snapshots order by id desc offset $1 limit 1)', [
        this.history,
      ]);
      writing.done({ changed: true, entries: summary!.total });
      return { snapshotId: created!.id, changed: true, entries: summary!.total, generatedAt: now };
    }, { long: true });
  }

  private async computeStats(
    client: { query: Pool['query'] },
    total: number,
    positions: number[],
  ): Promise<BlacklistStats & { countries: CountryThreat }> {
    const band = (from: number, to: number) => positions[from]! - (positions[to + 1] ?? 0);
    const { rows } = await client.query<{ id: number; count: number }>(
      `select g.id, count(b.ip)::int as count
         from unnest($1::int[], $2::text[]) as g(id, categories)
         left join blacklist_staging b on b.score >= $3 and b.categories && g.categories::smallint[]
        group by g.id`,
      [BLACKLIST_CATEGORIES.map((c) => c.id), BLACKLIST_CATEGORIES.map((c) => `{${c.categories.join(',')}}`), COMMUNITY_MIN],
    );
    const counts = new Map(rows.map((r) => [r.id, r.count]));
    const { rows: countryRows } = await client.query<{ country_code: string; ips: number; avg: number }>(
      `select country_code, count(*)::int as ips, avg(score)::float8 as avg
         from blacklist_staging where country_code is not null group by country_code`,
    );
    return {
      countries: Object.fromEntries(
        countryRows.map((r) => [r.country_code, { ips: r.ips, avgScore: Math.round(r.avg * 100) / 100 }]),
      ),
      total,
      community: positions[COMMUNITY_MIN]!,
      byConfidence: { '90-100': band(90, 100), '75-89': band(75, 89), '50-74': band(50, 74), '25-49': band(25, 49) },
      byCategory: BLACKLIST_CATEGORIES.map((c) => ({ name: c.name, count: counts.get(c.id) ?? 0 })),
    };
  }
}

/** Earlier snapshots kept by default: two hours of regenerations at the default interval. */
export const DEFAULT_HISTORY = 8;

/** The snapshots of a database, scored the way lookups score. */
export function blacklistSnapshots(pool: Pool, clock: Clock, history = DEFAULT_HISTORY, reads: Pool = pool): BlacklistSnapshots {
  return new BlacklistSnapshots(pool, clock, (aggregate) => scoreAggregate(aggregate, clock.now()).abuseConfidencePercentage, history, reads);
}
