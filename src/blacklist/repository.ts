import type { QueryResultRow } from 'pg';
import QueryStream from 'pg-query-stream';
import type { Clock } from '../clock.js';
import type { BlacklistEntry } from '../db/entities/blacklist.js';
import type { IpStats } from '../db/entities/reputation.js';
import { readerOf, transaction, withClient, type Connection, type Pool, type Queryable, type Read } from '../db/pool.js';
import type { ReplicaPool } from '../db/replicas.js';
import { purgeExpiredWhitelist } from '../reputation/whitelist.repository.js';
import { pgArray, sql } from '../db/sql.js';
import type { Outcome, Payer, Quota } from '../keys/quota.js';

type HeadRow = { id: number; generated_at: Date; content_hash: string; score_positions: number[] };
const HEAD = {
  name: 'blacklist-head',
  query: sql`select id, generated_at, content_hash, score_positions from blacklist_snapshots order by id desc limit 1`,
};
const toHead = (row: HeadRow | undefined): SnapshotHead | undefined =>
  row && { id: row.id, generatedAt: row.generated_at, contentHash: row.content_hash, scorePositions: row.score_positions };
import { silentProgress, type Progress, type Step } from '../progress.js';
import { AGGREGATE_COLUMNS, type IpAggregate } from '../reputation/repository.js';
import { scoreAggregate, scoreHoldsUntil, toScoreInput } from '../reputation/score.js';
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
  /** Only the entries last reported on this UTC day (`2026-11-28`): a MISP feed's event. */
  reportedOn?: string | undefined;
}

/**
 * The key of an entry in the list's order (score desc, last report desc, address); the time
 * as PostgreSQL writes it, to the microsecond.
 */
export interface EntryKey {
  score: number;
  lastReportedAt: string;
  ip: string;
}

/**
 * A list in a snapshot: the snapshot's entries that score `filter.minScore` or more, pass the
 * filter and come at or before `cutoff` in the list's order. Entries are ordered by score, so
 * "the first `limit` entries that pass" is "those up to the `limit`-th one": every query of a
 * list is a range of the order (`cutoff` null: no cut beyond the score).
 */
export interface Selection {
  head: SnapshotHead;
  filter: EntryFilter;
  cutoff: EntryKey | null;
}

/**
 * What a read of entries returns, by name: the repository owns the SQL of each, and the rows are
 * typed by the entity's properties. `ip`: the address alone; `decision`: what a CrowdSec
 * decision is made of; `dnsbl`: what a DNS blocklist entry says (blacklist/dnsbl.ts); `feed`: what a threat-intelligence feed says (blacklist/feeds.ts); `csvLine`/`jsonLine`: a delta's line in the list's format, with its address.
 */
const ENTRY_COLUMNS = {
  ip: 'e.ip',
  decision: 'e.ip, e.categories, e.refresh_phase as "refreshPhase"',
  dnsbl: 'e.ip, e.score, e.categories',
  feed: 'e.ip, e.score, e.categories, e.last_reported_at as "lastReportedAt"',
  csvLine: `${LINE_SQL.csv} as line, e.ip`,
  jsonLine: `${LINE_SQL.json} as line, e.ip`,
} as const;
export interface EntryRows {
  ip: Pick<BlacklistEntry, 'ip'>;
  decision: Pick<BlacklistEntry, 'ip' | 'categories' | 'refreshPhase'>;
  dnsbl: Pick<BlacklistEntry, 'ip' | 'score' | 'categories'>;
  feed: Pick<BlacklistEntry, 'ip' | 'score' | 'categories' | 'lastReportedAt'>;
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
  if (filter.reportedOn) {
    const day = param(filter.reportedOn);
    parts.push(`${t}.last_reported_at >= (${day}::date)::timestamp at time zone 'UTC' and ${t}.last_reported_at < (${day}::date + 1)::timestamp at time zone 'UTC'`);
  }
  return { sql: parts.map((part) => ` and ${part}`).join(''), values };
}

/** The entries alive in snapshot `$n` (a version from it or before, not replaced by it or before), on alias `t`. */
const aliveSql = (t: string, n: number) => `${t}.from_snapshot <= $${n} and (${t}.until_snapshot is null or ${t}.until_snapshot > $${n})`;

/** The snapshot's entries, the score bound, the cut and the filter of a selection, on alias `t`. */
function selectionSql(selection: Selection, first: number, t = 'e'): { sql: string; values: unknown[] } {
  const values: unknown[] = [selection.head.id, selection.filter.minScore];
  let sql = `${aliveSql(t, first)} and ${t}.score >= $${first + 1}`;
  const cut = selection.cutoff;
  if (cut) {
    const [s, l, i] = [first + 2, first + 3, first + 4];
    sql += ` and ${t}.score >= $${s} and (${t}.score > $${s} or ${t}.last_reported_at > $${l}::timestamptz
                or (${t}.last_reported_at = $${l}::timestamptz and ${t}.ip <= $${i}))`;
    values.push(cut.score, cut.lastReportedAt, cut.ip);
  }
  const filter = filterSql(selection.filter, first + values.length, t);
  return { sql: sql + filter.sql, values: [...values, ...filter.values] };
}

/** The list's order, and the addresses' (IPv4 before IPv6, each ascending), on alias `t`. */
const ORDER = {
  list: (t: string) => `${t}.score desc, ${t}.last_reported_at desc, ${t}.ip`,
  address: (t: string) => `${t}.ip::inet`,
} as const;

export interface RegenerationResult {
  snapshotId: number;
  changed: boolean;
  entries: number;
  generatedAt: Date;
  /** Whether every address was scored again (else only the changed ones and those whose score stopped holding). */
  full: boolean;
  /** How many addresses were scored. */
  rescored: number;
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
type AggregateRow = IpAggregate & Pick<IpStats, 'lastReportedAt'>;
/** An address's score at the pass's moment, and the last moment it holds. */
type Score = { score: number; holdsUntil: Date | null };

/**
 * An address an incremental pass scores again: its aggregate (absent when cleared or expired),
 * whether it is to be scored (it has one, and no whitelist range holds it), and its current
 * version on the list (`fromSnapshot` null: none).
 */
type RescoreRow = AggregateRow & {
  scored: boolean;
  fromSnapshot: number | null;
  entryScore: number | null;
  entryLastReportedAt: Date | null;
  entryTotalReports: number | null;
  entryCategories: number[] | null;
  entryCountryCode: string | null;
};

/** The columns of an entry's version as blacklist_new and blacklist_closed hold them. */
const VERSION_TYPES = 'ip text not null, score smallint not null, last_reported_at timestamptz not null, total_reports integer not null, categories smallint[] not null, country_code text';
const VERSION_COLUMNS = 'x.ip, x.from_snapshot, x.score, x.last_reported_at, x.total_reports, x.categories, x.country_code';

/** Whether a new score leaves the address's current version as it is (the columns an entry holds). */
function sameVersion(r: RescoreRow, score: number): boolean {
  return (
    score === r.entryScore &&
    r.lastReportedAt.getTime() === r.entryLastReportedAt?.getTime() &&
    r.totalReports === r.entryTotalReports &&
    pgArray(r.categories) === pgArray(r.entryCategories ?? []) &&
    r.countryCode === r.entryCountryCode
  );
}


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
    /** An address's score at `now`, and the last moment it holds (reputation/score.ts, scoreHoldsUntil). */
    private readonly scoreOf: (aggregate: IpAggregate, now: Date) => { score: number; holdsUntil: Date | null },
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
    const { rows } = await this.reads.query<{ stats: SummaryRow['stats'] }>({
      name: 'blacklist-stats',
      text: 'select stats from blacklist_snapshots order by id desc limit 1',
    });
    if (!rows[0]) return emptyStats();
    const { countries: _countries, sums: _sums, ...stats } = rows[0].stats;
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
    if (filter.limit >= byScore) return { head, filter, cutoff: null };
    const where = selectionSql({ head, filter, cutoff: null }, 2);
    const { rows } = await this.readHolding([head.id], (client) =>
      client.query<EntryKey>(
        `select e.score, e.last_reported_at::text as "lastReportedAt", e.ip from blacklist_entries e
          where ${where.sql}
          order by ${ORDER.list('e')} offset $1 limit 1`,
        [filter.limit - 1, ...where.values],
      ),
    );
    return { head, filter, cutoff: rows[0] ?? null };
  }

  /**
   * The entries of a list, read through a cursor (a large list never sits in memory whole).
   * `columns` names one of ENTRY_COLUMNS, SQL expressions over the entry (alias `e`): PostgreSQL writes each entry in
   * its final form where it can, and the process only joins text.
   */
  stream<K extends EntryColumns>(selection: Selection, columns: Columns<K>): Promise<Streamed<EntryRows[K]>> {
    return this.streamColumns(selection, ENTRY_COLUMNS[columns.select], columns.order);
  }

  /** The UTC days of the last reports of a list's entries, in order (a MISP feed's events). */
  async reportDays(selection: Selection): Promise<string[]> {
    const where = selectionSql(selection, 1);
    return this.readHolding([selection.head.id], async (client) =>
      (
        await client.query<{ day: string }>(
          `select distinct to_char(e.last_reported_at at time zone 'UTC', 'YYYY-MM-DD') as day
             from blacklist_entries e where ${where.sql} order by 1`,
          where.values,
        )
      ).rows.map((r) => r.day),
    );
  }

  /** The entries of a list written in one of the line shapes of the list formats. */
  lines(selection: Selection, shape: LineShape, order: Columns['order'] = 'list'): Promise<Streamed<{ line: string }>> {
    return this.streamColumns(selection, `${LINE_SQL[shape]} as line`, order);
  }

  private streamColumns<T>(selection: Selection, columns: string, order: Columns['order'] = 'list'): Promise<Streamed<T>> {
    const where = selectionSql(selection, 1);
    return this.cursor<T>(`select ${columns} from blacklist_entries e where ${where.sql} order by ${ORDER[order]('e')}`, where.values, [selection.head.id]);
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
        order by ${ORDER.list('e')}`,
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
          order by ${ORDER[columns.order ?? 'list']('e')}`,
        [first, last, ...where.values],
      ),
    );
    return rows;
  }

  /** Which of `ips` a list holds (the addresses as stored: canonical text). */
  async among(selection: Selection, ips: readonly string[]): Promise<string[]> {
    if (ips.length === 0) return [];
    const where = selectionSql(selection, 2);
    const { rows } = await this.readHolding([selection.head.id], (client) =>
      client.query<{ ip: string }>(`select e.ip from blacklist_entries e where ${where.sql} and e.ip = any($1::text[])`, [ips, ...where.values]),
    );
    return rows.map((row) => row.ip);
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

  /**
   * Regenerates now (the command line's `trs blacklist regenerate`), waiting for a scheduled
   * regeneration under way to end first. Incremental unless `full` (see regenerateIf).
   */
  async regenerate(progress: Progress = silentProgress, options: { full?: boolean } = {}): Promise<RegenerationResult> {
    const locked = async (client: Queryable) => {
      await client.query('select pg_advisory_xact_lock($1)', [REGENERATION_LOCK]);
      return true;
    };
    return (await this.regenerateIf(locked, progress, options))!;
  }

  /**
   * The scheduled regeneration: once across every process (the first to take the lock), and
   * only when the last snapshot was checked `intervalMs` ago or more. Incremental, with a full
   * pass when the last one is `fullEveryMs` old (the safety net).
   */
  regenerateIfDue(intervalMs: number, fullEveryMs = DEFAULT_FULL_EVERY_MS): Promise<RegenerationResult | undefined> {
    return this.regenerateIf(
      async (client) => {
        const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [REGENERATION_LOCK]);
        if (!rows[0]!.locked) return false;
        const { rows: last } = await client.query<{ checked_at: Date }>('select checked_at from blacklist_snapshots order by id desc limit 1');
        return !last[0] || this.clock.now().getTime() - last[0].checked_at.getTime() >= intervalMs;
      },
      silentProgress,
      { fullEveryMs },
    );
  }

  /**
   * Regenerates, in one transaction, when `condition` holds, asked first inside that same
   * transaction (undefined when it does not). The scheduled job takes its transaction-scoped
   * lock there, so lock and work share one connection: needed on the embedded database, which
   * runs one transaction at a time, and behind a transaction-mode pooler, which keeps no
   * session (and no session lock) from one transaction to the next. Scoring a million addresses
   * takes longer than the request path's statement timeout: the transaction lifts it.
   *
   * The scores live in `blacklist_scores`, each with the last moment it holds. An incremental
   * pass rescores only the addresses whose inputs changed (`blacklist_dirty`, written by
   * triggers) and those whose score stops holding before now; the others are carried forward as
   * they are, which is exact because a score only changes at those moments
   * (reputation/score.ts, scoreHoldsUntil). A full pass rescores every address: when asked
   * (`full`), when the last full pass is `fullEveryMs` old, when nothing was scored yet, or when
   * the clock stands before the last pass (scores only hold forward in time).
   */
  async regenerateIf(
    condition: (client: Queryable) => Promise<boolean>,
    progress: Progress = silentProgress,
    options: { full?: boolean; fullEveryMs?: number } = {},
  ): Promise<RegenerationResult | undefined> {
    const now = this.clock.now();
    return transaction(this.pool, async (client) => {
      if (!(await condition(client))) return undefined;
      // A delisting's whitelist entry ends at its time, not at the next hourly purge: deleted
      // here, its trigger notes the address, and this very pass lists it again if it scores.
      await purgeExpiredWhitelist(client, now);
      const { rows: [state] } = await client.query<{ full_at: Date; scored_at: Date }>(
        'select full_at, scored_at from blacklist_regeneration where id = 1 for update',
      );
      const current = await client.query<SummaryRow & { id: number; generated_at: Date }>(
        'select id, generated_at, content_hash, entry_count, score_positions, stats from blacklist_snapshots order by id desc limit 1 for update',
      );
      const head = current.rows[0];
      const full =
        !!options.full ||
        !state ||
        !head ||
        now < state.scored_at ||
        (options.fullEveryMs !== undefined && now.getTime() - state.full_at.getTime() >= options.fullEveryMs);
      // PostgreSQL's JIT compiles an incremental pass's joins anew each time, for up to 170 ms a
      // statement at 1M addresses, more than it saves on a few thousand rows (a full pass keeps it).
      if (!full) await client.query('set local jit = off');
      const rescored = full ? await this.rescoreAll(client, now, progress) : await this.rescoreChanged(client, now, progress);
      await client.query(
        `insert into blacklist_regeneration (id, full_at, scored_at) values (1, $1, $2)
         on conflict (id) do update set full_at = excluded.full_at, scored_at = excluded.scored_at`,
        [full ? now : state!.full_at, now],
      );
      const writing = progress.step('blacklist: writing the snapshot');
      // Without a snapshot the current entries are no base (a database whose snapshots were emptied).
      if (!head) {
        await client.query('delete from blacklist_entries');
        await client.query('delete from blacklist_closures');
      }
      // What differs from the current entries: new versions (entries added or changed) and the
      // versions they close (changed or gone). An incremental pass found them while it scored
      // (rescoreChanged); a full pass compares the whole tables here.
      if (full) {
        await client.query(
          `create temporary table blacklist_new on commit drop as
             select x.ip, x.score, x.last_reported_at, x.total_reports, x.categories, x.country_code from blacklist_scores x
             except
             select x.ip, x.score, x.last_reported_at, x.total_reports, x.categories, x.country_code from blacklist_entries x
              where x.until_snapshot is null`,
        );
        await client.query(
          `create temporary table blacklist_closed on commit drop as
             select ${VERSION_COLUMNS} from blacklist_entries x
              where x.until_snapshot is null
                and (exists (select 1 from blacklist_new n where n.ip = x.ip) or not exists (select 1 from blacklist_scores s where s.ip = x.ip))`,
        );
      }
      // The planner's statistics of the two tables, for the full pass's joins with the whole list;
      // an incremental pass looks every row up by its key whatever they say (hash and merge joins
      // off for the pass), and its two analyses cost ~140 ms at 1M addresses.
      if (full) {
        await client.query('analyze blacklist_new');
        await client.query('analyze blacklist_closed');
      }
      const { rows: [diff] } = await client.query<{ added: number; closed: number }>(
        'select (select count(*)::int from blacklist_new) as added, (select count(*)::int from blacklist_closed) as closed',
      );
      if (head && diff!.added === 0 && diff!.closed === 0) {
        // No entry differs: the current snapshot stands, and its ETag with it.
        await client.query('update blacklist_snapshots set checked_at = $2 where id = $1', [head.id, now]);
        writing.done({ changed: false });
        return { snapshotId: head.id, changed: false, entries: head.entry_count, generatedAt: head.generated_at, full, rescored: rescored.count };
      }

      const { rows: [created] } = await client.query<{ id: number }>(
        `insert into blacklist_snapshots (generated_at, checked_at, content_hash, entry_count, score_positions, stats)
         values ($1, $1, '', 0, '{}', '{}') returning id`,
        [now],
      );
      const id = created!.id;
      // A HOT update: no index of blacklist_entries names until_snapshot (the BlacklistClosures
      // migration); which versions this snapshot closed goes to blacklist_closures.
      await client.query(
        `with closed as (
           update blacklist_entries e set until_snapshot = $1 from blacklist_closed c where e.ip = c.ip and e.from_snapshot = c.from_snapshot
           returning e.ip, e.from_snapshot)
         insert into blacklist_closures (until_snapshot, ip, from_snapshot) select $1, ip, from_snapshot from closed`,
        [id],
      );
      await client.query(
        `insert into blacklist_entries (ip, from_snapshot, score, last_reported_at, total_reports, categories, country_code, refresh_phase)
         select ip, $1, score, last_reported_at, total_reports, categories, country_code, (hashtextextended(ip, 0) & 2147483647) % $2
           from blacklist_new`,
        [id, REFRESH_CYCLE_SECONDS],
      );

      // The snapshot's summary: after a full pass read from the scores (one pass each, no sort),
      // else the current one's with the differences (the closed versions out, the new ones in).
      const summary = full ? await this.summarise(client) : await this.summariseChange(client, head!);
      await client.query(
        'update blacklist_snapshots set content_hash = $2, entry_count = $3, score_positions = $4, stats = $5 where id = $1',
        [id, summary.hash, summary.total, summary.scorePositions, JSON.stringify(summary.stats)],
      );
      // Fresh statistics after a full pass, or the planner reads a million new rows as a few hundred and sorts.
      if (full) await client.query('analyze blacklist_entries');
      // The last `history` snapshots stay, for deltas and for downloads still streaming them,
      // and the versions alive in one of them.
      await client.query('delete from blacklist_snapshots where id < (select id from blacklist_snapshots order by id desc offset $1 limit 1)', [
        this.history,
      ]);
      await client.query(
        `with gone as (delete from blacklist_closures where until_snapshot <= (select min(id) from blacklist_snapshots) returning ip, from_snapshot)
         delete from blacklist_entries e using gone g where e.ip = g.ip and e.from_snapshot = g.from_snapshot`,
      );
      writing.done({ changed: true, entries: summary.total });
      return { snapshotId: id, changed: true, entries: summary.total, generatedAt: now, full, rescored: rescored.count };
    }, { long: true });
  }

  /** A full pass: every reported address (the whitelist left out) scored again into blacklist_scores. */
  private async rescoreAll(client: Connection, now: Date, progress: Progress): Promise<{ count: number }> {
    // What the triggers noted up to now is in this pass; what they note after it, in the next.
    await client.query('delete from blacklist_dirty');
    await client.query('truncate blacklist_scores');
    // Counting costs a scan of ip_stats: only done when someone watches.
    const total = progress === silentProgress ? 1 : (await client.query<{ n: number }>('select count(*)::int as n from ip_stats')).rows[0]!.n;
    const count = await this.score(client, now, progress.step('blacklist: scoring every address', total), 'ip_stats s');
    await client.query('analyze blacklist_scores');
    return { count };
  }

  /**
   * An incremental pass: the addresses the triggers noted since the last pass, and those whose
   * score stops holding before `now`, scored again; every other score is carried forward.
   */
  private async rescoreChanged(client: Connection, now: Date, progress: Progress): Promise<{ count: number }> {
    // A pass's few thousand addresses against tables of millions: each looked up by its key
    // (index nested loops), never a hash join that reads a whole table.
    await client.query('set local enable_hashjoin = off');
    await client.query('set local enable_mergejoin = off');
    await client.query('create temporary table blacklist_rescore (ip text primary key) on commit drop');
    // Rows a writer commits after this statement stay for the next pass (the table has no unique
    // key: a writer's append never waits on this delete).
    await client.query('with noted as (delete from blacklist_dirty returning ip) insert into blacklist_rescore select distinct ip from noted');
    await client.query('insert into blacklist_rescore select ip from blacklist_scores where changes_at < $1 on conflict do nothing', [now]);
    await client.query('analyze blacklist_rescore');
    const { rows: [size] } = await client.query<{ n: number }>('select count(*)::int as n from blacklist_rescore');
    await client.query(`create temporary table blacklist_new (${VERSION_TYPES}) on commit drop`);
    await client.query(`create temporary table blacklist_closed (from_snapshot bigint not null, ${VERSION_TYPES}) on commit drop`);
    const scoring = progress.step('blacklist: scoring changed addresses', size!.n);
    // Each address with its aggregate (none: cleared or expired), whether the whitelist holds it,
    // and its current version, so the differences are found as it is scored.
    await client.query(
      `declare reported no scroll cursor for
         select r.ip, ${AGGREGATE_COLUMNS}, false as whitelisted,
                s.ip is not null and not exists (select 1 from whitelist w where w.range >>= s.ip::inet) as scored,
                e.from_snapshot as "fromSnapshot", e.score as "entryScore", e.last_reported_at as "entryLastReportedAt",
                e.total_reports as "entryTotalReports", e.categories as "entryCategories", e.country_code as "entryCountryCode"
           from blacklist_rescore r
           left join ip_stats s on s.ip = r.ip
           left join blacklist_entries e on e.ip = r.ip and e.until_snapshot is null
          order by r.ip`,
    );
    let count = 0;
    for (;;) {
      const { rows } = await client.query<RescoreRow>(`fetch ${BATCH} from reported`);
      if (rows.length === 0) break;
      // One walk over the batch: what is scored, what left, which versions are new or closed.
      const scored: RescoreRow[] = [];
      const scores: Score[] = [];
      const gone: string[] = [];
      const changed: (RescoreRow & { score: number })[] = [];
      const closed: RescoreRow[] = [];
      for (const r of rows) {
        if (!r.scored) {
          gone.push(r.ip);
          if (r.fromSnapshot !== null) closed.push(r);
          continue;
        }
        const score = this.scoreOf(r, now);
        scored.push(r);
        scores.push(score);
        if (r.fromSnapshot !== null && sameVersion(r, score.score)) continue;
        changed.push(Object.assign(r, { score: score.score }));
        if (r.fromSnapshot !== null) closed.push(r);
      }
      await this.writeScores(client, scored, scores, 'upsert');
      if (gone.length) await client.query('delete from blacklist_scores where ip = any($1::text[])', [gone]);
      await client.query(
        `insert into blacklist_new (ip, score, last_reported_at, total_reports, categories, country_code)
         select v.ip, v.score, v.last_reported_at, v.total_reports, v.categories::smallint[], v.country_code
           from unnest($1::text[], $2::smallint[], $3::timestamptz[], $4::int[], $5::text[], $6::text[])
             as v(ip, score, last_reported_at, total_reports, categories, country_code)`,
        [changed.map((r) => r.ip), changed.map((r) => r.score), changed.map((r) => r.lastReportedAt), changed.map((r) => r.totalReports), changed.map((r) => pgArray(r.categories)), changed.map((r) => r.countryCode)],
      );
      await client.query(
        `insert into blacklist_closed (ip, from_snapshot, score, last_reported_at, total_reports, categories, country_code)
         select v.ip, v.from_snapshot, v.score, v.last_reported_at, v.total_reports, v.categories::smallint[], v.country_code
           from unnest($1::text[], $2::bigint[], $3::smallint[], $4::timestamptz[], $5::int[], $6::text[], $7::text[])
             as v(ip, from_snapshot, score, last_reported_at, total_reports, categories, country_code)`,
        [
          closed.map((r) => r.ip),
          closed.map((r) => r.fromSnapshot),
          closed.map((r) => r.entryScore),
          closed.map((r) => r.entryLastReportedAt),
          closed.map((r) => r.entryTotalReports),
          closed.map((r) => pgArray(r.entryCategories!)),
          closed.map((r) => r.entryCountryCode),
        ],
      );
      count += scored.length;
      scoring.advance(rows.length);
    }
    await client.query('close reported');
    scoring.done();
    return { count };
  }

  /** Scores the addresses of `from` (ip_stats as `s`; the whitelist left out) into blacklist_scores, a batch at a time. */
  private async score(client: Connection, now: Date, scoring: Step, from: string): Promise<number> {
    await client.query(
      `declare reported no scroll cursor for
         select s.ip, ${AGGREGATE_COLUMNS}, false as whitelisted
           from ${from}
          where not exists (select 1 from whitelist w where w.range >>= s.ip::inet)`,
    );
    let count = 0;
    for (;;) {
      const { rows } = await client.query<AggregateRow>(`fetch ${BATCH} from reported`);
      if (rows.length === 0) break;
      await this.writeScores(client, rows, rows.map((r) => this.scoreOf(r, now)), 'insert');
      count += rows.length;
      scoring.advance(rows.length);
    }
    await client.query('close reported');
    scoring.done();
    return count;
  }

  /**
   * Scored addresses into blacklist_scores: inserted (a full pass emptied it) or replacing their
   * last score (an incremental pass: an update in place costs less than a delete and an insert).
   */
  private async writeScores(client: Connection, rows: AggregateRow[], scores: Score[], mode: 'insert' | 'upsert'): Promise<void> {
    if (rows.length === 0) return;
    await client.query(
      `insert into blacklist_scores (ip, score, last_reported_at, total_reports, categories, country_code, changes_at)
       select v.ip, v.score, v.last_reported_at, v.total_reports, v.categories::smallint[], v.country_code, v.changes_at
         from unnest($1::text[], $2::smallint[], $3::timestamptz[], $4::int[], $5::text[], $6::text[], $7::timestamptz[])
           as v(ip, score, last_reported_at, total_reports, categories, country_code, changes_at)
       ${
         mode === 'upsert'
           ? `on conflict (ip) do update set score = excluded.score, last_reported_at = excluded.last_reported_at, total_reports = excluded.total_reports,
                categories = excluded.categories, country_code = excluded.country_code, changes_at = excluded.changes_at`
           : ''
       }`,
      [
        rows.map((r) => r.ip),
        scores.map((s) => s.score),
        rows.map((r) => r.lastReportedAt),
        rows.map((r) => r.totalReports),
        rows.map((r) => pgArray(r.categories)),
        rows.map((r) => r.countryCode),
        scores.map((s) => s.holdsUntil),
      ],
    );
  }

  /** The summary of the whole list, from blacklist_scores. */
  private async summarise(client: Queryable): Promise<Summary> {
    const [totals] = (await client.query<Totals>(`select ${TOTALS_SQL} from blacklist_scores x`)).rows;
    const { rows: byScore } = await client.query<{ score: number; count: number }>(
      'select score, count(*)::int as count from blacklist_scores group by score',
    );
    const { rows: byCountry } = await client.query<{ country_code: string; ips: number; sum: number }>(
      'select country_code, count(*)::int as ips, sum(score)::float8 as sum from blacklist_scores where country_code is not null group by country_code',
    );
    const counts = new Array<number>(101).fill(0);
    for (const { score, count } of byScore) counts[score] = count;
    const countries: Record<string, [number, number]> = {};
    for (const r of byCountry) countries[r.country_code] = [r.ips, r.sum];
    return summaryOf(totals!.hash, counts, totals!, countries);
  }

  /**
   * The summary of the snapshot being written from the one before it (`head`): the versions it
   * closed (blacklist_closed) taken out, the ones it wrote (blacklist_new) put in. Work in
   * proportion to the change.
   */
  private async summariseChange(client: Queryable, head: SummaryRow): Promise<Summary> {
    const sides = [
      { sign: -1, from: 'blacklist_closed x' },
      { sign: 1, from: 'blacklist_new x' },
    ];
    const before = head.stats.sums ?? {};
    const counts = head.score_positions.map((n, s) => n - (head.score_positions[s + 1] ?? 0));
    const groups = BLACKLIST_CATEGORIES.map((c) => head.stats.byCategory.find((g) => g.name === c.name)?.count ?? 0);
    const countries: Record<string, [number, number]> = Object.fromEntries(Object.entries(before).map(([cc, v]) => [cc, [...v] as [number, number]]));
    let hash = BigInt(head.content_hash);
    for (const side of sides) {
      const [totals] = (await client.query<Totals>(`select ${TOTALS_SQL} from ${side.from}`)).rows;
      hash += BigInt(side.sign) * BigInt(totals!.hash);
      BLACKLIST_CATEGORIES.forEach((_, i) => (groups[i]! += side.sign * totals![`g${i}`]!));
      const { rows } = await client.query<{ score: number; country_code: string | null }>(`select x.score, x.country_code from ${side.from}`);
      for (const r of rows) {
        counts[r.score]! += side.sign;
        if (r.country_code === null) continue;
        const entry = (countries[r.country_code] ??= [0, 0]);
        entry[0] += side.sign;
        entry[1] += side.sign * r.score;
        if (entry[0] === 0) delete countries[r.country_code];
      }
    }
    const totals = Object.fromEntries(groups.map((n, i) => [`g${i}`, n]));
    return summaryOf(hash.toString(), counts, totals, countries);
  }
}

/** A snapshot's row as its summary is carried from one snapshot to the next. */
type SummaryRow = {
  content_hash: string;
  entry_count: number;
  score_positions: number[];
  stats: BlacklistStats & { countries?: CountryThreat; sums?: Record<string, [number, number]> };
};
type Totals = { hash: string } & Record<string, number>;
interface Summary {
  hash: string;
  total: number;
  scorePositions: number[];
  stats: BlacklistStats & { countries: CountryThreat; sums: Record<string, [number, number]> };
}

/**
 * One entry's hash, and the sums a summary takes of a set of entries `x`: the content hash is
 * the sum of the entries' hashes (the content decides it, as it decides the order); g<i>: how
 * many entries of the i-th thematic list score COMMUNITY_MIN or more.
 */
const ENTRY_HASH = `hashtextextended(x.ip || ' ' || x.score || ' ' || extract(epoch from x.last_reported_at) || ' ' || x.total_reports
                                    || ' ' || x.categories::text, 0)::numeric`;
const TOTALS_SQL = [
  `coalesce(sum(${ENTRY_HASH}), 0)::text as hash`,
  ...BLACKLIST_CATEGORIES.map(
    (c, i) => `(count(*) filter (where x.score >= ${COMMUNITY_MIN} and x.categories && '{${c.categories.map(Number).join(',')}}'::smallint[]))::int as g${i}`,
  ),
].join(', ');

/** A summary from per-score counts, the thematic lists' counts and per-country [entries, score sum]. */
function summaryOf(hash: string, counts: number[], groups: Record<string, number>, sums: Record<string, [number, number]>): Summary {
  const positions = [...counts];
  for (let s = 99; s >= 0; s--) positions[s]! += positions[s + 1]!;
  const total = positions[0]!;
  const band = (from: number, to: number) => positions[from]! - (positions[to + 1] ?? 0);
  const countries = Object.fromEntries(
    Object.keys(sums)
      .sort()
      .map((cc) => [cc, { ips: sums[cc]![0], avgScore: Math.round((sums[cc]![1] / sums[cc]![0]) * 100) / 100 }]),
  );
  return {
    hash,
    total,
    scorePositions: positions,
    stats: {
      countries,
      sums: Object.fromEntries(Object.keys(sums).sort().map((cc) => [cc, sums[cc]!])),
      total,
      community: positions[COMMUNITY_MIN]!,
      byConfidence: { '90-100': band(90, 100), '75-89': band(75, 89), '50-74': band(50, 74), '25-49': band(25, 49) },
      byCategory: BLACKLIST_CATEGORIES.map((c, i) => ({ name: c.name, count: groups[`g${i}`] ?? 0 })),
    },
  };
}

/** Earlier snapshots kept by default: two hours of regenerations at the default interval. */
export const DEFAULT_HISTORY = 8;
/** The scheduled regeneration's full pass, its safety net under the incremental ones: daily by default. */
export const DEFAULT_FULL_EVERY_MS = 86_400_000;

/** The snapshots of a database, scored the way lookups score. */
export function blacklistSnapshots(pool: Pool, clock: Clock, history = DEFAULT_HISTORY, reads: Pool = pool): BlacklistSnapshots {
  return new BlacklistSnapshots(pool, clock, scoreWithHold, history, reads);
}

/** The score of an aggregate at `now` as lookups compute it, and the last moment it holds. */
export function scoreWithHold(aggregate: IpAggregate, now: Date): { score: number; holdsUntil: Date | null } {
  const score = scoreAggregate(aggregate, now).abuseConfidencePercentage;
  return { score, holdsUntil: scoreHoldsUntil(toScoreInput(aggregate), now, score) };
}
