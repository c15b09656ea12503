import { readerOf, transaction, type NamedQuery, type Pool, type Queryable, type Read } from '../db/pool.js';
import { param, pgArray, raw, sql } from '../db/sql.js';
import type { IpStats, Report } from '../db/entities/reputation.js';
import type { Outcome, Payer, Quota } from '../keys/quota.js';
import type { Role } from '../roles.js';

/** A read paid for: the quota, who pays, and how many units. */
export interface Paying {
  quota: Quota;
  payer: Payer;
  units: number;
}

type CheckedRow = Omit<CheckedAddress, 'lastReportedAt'> & { lastReportedMs: number };
import type { ScoreInput } from './score.js';
import { EVIDENCE_MAX_BYTES, joinEvidence } from './evidence.js';

/** The per-IP aggregate, maintained on write (ip_stats): a lookup never scans the reports. */
export type IpAggregate = Pick<IpStats, 'ip' | 'totalReports' | 'reportRows' | 'uniqueReporters' | 'honeypotReports' | 'categories' | 'maxSeverity' | 'decaySum' | 'countryCode' | 'asn' | 'isp' | 'positiveFeedback'> & {
  /** Null for an address without reports. */
  lastReportedAt: Date | null;
  /** Whether the operator's whitelist covers the address. */
  whitelisted: boolean;
};

/** An aggregate as the statements read it, a left join: the entity's properties, null where the address has none. */
type AggregateRow = Pick<IpAggregate, 'ip' | 'whitelisted'> & { [K in Exclude<keyof IpAggregate, 'ip' | 'whitelisted'>]: IpAggregate[K] | null };

/** An address's aggregate as `IpAggregate` names its fields (ip_stats as `s`; the address's own `ip` not included). */
export const AGGREGATE_COLUMNS = `s.total_reports as "totalReports", s.report_rows as "reportRows", s.unique_reporters as "uniqueReporters",
  s.honeypot_reports as "honeypotReports", s.last_reported_at as "lastReportedAt", s.categories, s.max_severity as "maxSeverity",
  s.decay_sum as "decaySum", s.country_code as "countryCode", s.asn, s.isp, s.positive_feedback as "positiveFeedback"`;

function toAggregate(row: AggregateRow): IpAggregate {
  return {
    ip: row.ip,
    totalReports: row.totalReports ?? 0,
    reportRows: row.reportRows ?? 0,
    uniqueReporters: row.uniqueReporters ?? 0,
    honeypotReports: row.honeypotReports ?? 0,
    lastReportedAt: row.lastReportedAt,
    categories: row.categories ?? [],
    maxSeverity: row.maxSeverity ?? 0,
    decaySum: row.decaySum ?? 0,
    countryCode: row.countryCode,
    asn: row.asn,
    isp: row.isp,
    whitelisted: row.whitelisted,
    positiveFeedback: row.positiveFeedback ?? 0,
  };
}

/** A reported address as a bulk check reads it: the inputs of its score and the answer's fields. */
export interface CheckedAddress extends ScoreInput {
  ip: string;
  categories: number[];
}

export type ReportRecord = Pick<Report, 'id' | 'categories' | 'comment' | 'reportedAt' | 'reporterRole' | 'aggregationCount'>;

/** One report of a batch, already validated and normalised. */
export interface NewReport {
  ip: string;
  categories: number[];
  comment: string;
  /** Private evidence, redacted (evidence.ts); none when none was given. */
  evidence?: string | null;
  /** Highest severity of its categories. */
  severity: number;
  geo: { countryCode: string | null; asn: number | null; isp: string | null };
}

/** Who sent a report: the account (with its key's role) and the country the report came from. */
export interface Reporter {
  accountId: number;
  role: Role;
  country: string | null;
}

export interface StoredReport {
  reportId: number;
  ip: string;
  categories: number[];
  /** The address's score after the batch. */
  score: number;
  /** Whether the report's evidence (when it had some) was kept: false when its report's was full. */
  evidenceStored: boolean;
}

/** One of a reporter's reports with its evidence (GET /reports/{ip}/evidence, `trs reports evidence`). */
export type EvidenceRecord = Pick<Report, 'id' | 'categories' | 'reportedAt' | 'aggregationCount'> & { accountId: number; evidence: string };

export const AGGREGATION_WINDOW_MS = 5 * 60_000;

const union = (a: number[], b: number[]) => [...new Set([...a, ...b])].sort((x, y) => x - y);

/**
 * The lock that makes reports of one reporter about one address take turns (so that they
 * aggregate): one of 1,024 buckets of (account, address) pairs, in a key space of its own (the
 * two-number form of PostgreSQL's advisory locks, which no other lock here uses). Bounded, so
 * that a 10,000-line bulk report takes at most 1,024 locks: PostgreSQL's lock table holds
 * max_locks_per_transaction × max_connections (6,400 by default) for all sessions together, and
 * two bulk reports with a lock per pair ran it out ("out of shared memory"). Pairs that share a
 * bucket only wait for each other.
 */
export const REPORT_LOCKS = {
  space: 0x52505254, // 'RPRT'
  bucket: (account: string, ip: string) => `(hashtextextended(${account}::text || ':' || ${ip}, 0) & 1023)::int`,
};

/** The age weights of ip_stats.decay_sum (reputation/score.ts): 2^((t - epoch) / half-life). */
export interface DecayWeights {
  epochMs: number;
  halfLifeMs: number;
}

/**
 * Makes the aggregates of `ips` what the reports left about them say, after some of their
 * reports were deleted or detached (a clear, a partition past retention): the reporters'
 * pairs (`ips[i]`, `accounts[i]`) that no longer have a report leave ip_reporters, every other
 * column of ip_stats is computed again from the reports, and an address without reports
 * loses its aggregate. The caller holds the report locks of those pairs (REPORT_LOCKS), so no
 * report of theirs is being written. An aggregated report's submissions are weighed at its
 * row's time, as the aggregation window is 5 minutes against a half-life of 14 days.
 */
export async function recomputeAggregates(db: Queryable, ips: string[], accounts: number[], decay: DecayWeights): Promise<void> {
  await db.query(
    `delete from ip_reporters p using unnest($1::text[], $2::int[]) as v(ip, account_id)
      where p.ip = v.ip and p.account_id = v.account_id
        and not exists (select 1 from reports r where r.ip = v.ip and r.account_id = v.account_id)`,
    [ips, accounts],
  );
  const distinct = [...new Set(ips)].sort();
  await db.query('select 1 from ip_stats where ip = any($1::text[]) order by ip for update', [distinct]);
  await db.query(
    `update ip_stats s set
       total_reports = a.total, report_rows = a.rows, unique_reporters = a.reporters, honeypot_reports = a.honeypot,
       first_reported_at = a.first, last_reported_at = a.last, categories = a.categories, decay_sum = a.decay,
       max_severity = coalesce((select max(c.severity_level) from threat_categories c where c.id = any(a.categories)), 0)
     from (select r.ip, count(*)::int as rows, sum(1 + r.aggregation_count)::int as total, count(distinct r.account_id)::int as reporters,
                  coalesce(sum(1 + r.aggregation_count) filter (where r.reporter_role = 'honeypot'), 0)::int as honeypot,
                  min(r.reported_at) as first, max(r.reported_at) as last,
                  array(select distinct c from reports r2, unnest(r2.categories) c where r2.ip = r.ip order by c)::smallint[] as categories,
                  sum((1 + r.aggregation_count) * power(2::float8, (extract(epoch from r.reported_at) * 1000 - $2) / $3)) as decay
             from reports r where r.ip = any($1::text[]) group by r.ip) a
    where s.ip = a.ip`,
    [distinct, decay.epochMs, decay.halfLifeMs],
  );
  await db.query('delete from ip_stats s where s.ip = any($1::text[]) and not exists (select 1 from reports r where r.ip = s.ip)', [distinct]);
}

export class ReputationRepository {
  private readonly read: Read;

  /**
   * `reads`: where the searches (by network name, ASN...) read, which tolerate replication lag
   * (the read replicas, DATABASE_REPLICA_URL); everything else reads and writes on `pool`.
   */
  constructor(
    private readonly pool: Pool,
    private readonly reads: Pool = pool,
  ) {
    this.read = readerOf(pool);
  }

  /** The read of one address's aggregate: one row, zeros when it has no reports. */
  private static aggregateOf(ip: string): NamedQuery {
    const p = param(ip);
    return {
      name: 'ip-aggregate',
      query: sql`select ${p}::text as ip, ${raw(AGGREGATE_COLUMNS)},
                        exists (select 1 from whitelist w where w.range >>= ${p}::inet) as whitelisted
                   from (select 1) one left join ip_stats s on s.ip = ${p}`,
    };
  }

  /** The aggregate of one address (zeros when it has no reports), in one round trip. */
  async findOne(ip: string): Promise<IpAggregate> {
    const rows = await this.read<AggregateRow>(ReputationRepository.aggregateOf(ip));
    return toAggregate(rows[0]!);
  }

  /** findOne, paid for: the charge and the read in one statement (Quota.chargeWith); no aggregate when refused. */
  async findOnePaid(ip: string, paying: Paying): Promise<{ outcome: Outcome; aggregate?: IpAggregate }> {
    const { outcome, rows } = await paying.quota.chargeWith<AggregateRow>(paying.payer, paying.units, ReputationRepository.aggregateOf(ip));
    return { outcome, aggregate: rows[0] && toAggregate(rows[0]) };
  }

  /**
   * The reported addresses among `ips` (canonical texts), in one query: an index probe per
   * address, only the columns a bulk check answers with, named as the score takes them. The
   * addresses go as one string (no address holds a comma) and the time and categories come as a number and JSON, which
   * the driver reads without its per-element escaping and parsing.
   */
  async findReported(ips: string[]): Promise<CheckedAddress[]> {
    return ReputationRepository.toChecked(await this.read<CheckedRow>(ReputationRepository.checkedOf(ips)));
  }

  /**
   * findReported, paid for: the charge and the read in one statement, one round trip
   * (Quota.chargeWith); nothing read when refused.
   */
  async findReportedPaid(ips: string[], paying: Paying): Promise<{ outcome: Outcome; reported: CheckedAddress[] }> {
    const { outcome, rows } = await paying.quota.chargeWith<CheckedRow>(paying.payer, paying.units, ReputationRepository.checkedOf(ips));
    return { outcome, reported: ReputationRepository.toChecked(rows) };
  }

  private static checkedOf(ips: string[]): NamedQuery {
    return {
      name: 'ip-checked',
      query: sql`select s.ip, s.total_reports as "reportCount", s.unique_reporters as "uniqueReporters",
                    s.honeypot_reports as "honeypotReports", s.decay_sum as "decaySum",
                    floor(extract(epoch from s.last_reported_at) * 1000)::float8 as "lastReportedMs",
                    s.max_severity as "maxSeverity", s.positive_feedback as "positiveFeedback", to_json(s.categories) as categories,
                    exists (select 1 from whitelist w where w.range >>= s.ip::inet) as whitelisted
               from ip_stats s where s.ip = any(string_to_array(${ips.join(',')}, ','))`,
    };
  }

  private static toChecked(rows: CheckedRow[]): CheckedAddress[] {
    return rows.map((r) => ({
      ip: r.ip,
      reportCount: r.reportCount,
      uniqueReporters: r.uniqueReporters,
      honeypotReports: r.honeypotReports,
      decaySum: r.decaySum,
      lastReportedAt: new Date(r.lastReportedMs),
      maxSeverity: r.maxSeverity,
      whitelisted: r.whitelisted,
      positiveFeedback: r.positiveFeedback,
      categories: r.categories,
    }));
  }

  /**
   * The reported addresses from `first` to `last` (a network), most recently reported first,
   * at most `max` of them, and how many there are; with `since`, only those reported since.
   */
  async inNetwork(first: string, last: string, max: number, since?: Date): Promise<{ count: number; aggregates: IpAggregate[] }> {
    const [counted, found] = await Promise.all([
      this.pool.query<{ n: number }>({
        name: 'network-count',
        text: `select count(*)::int as n from ip_stats s
                where s.ip::inet between $1::inet and $2::inet and ($3::timestamptz is null or s.last_reported_at >= $3)`,
        values: [first, last, since ?? null],
      }),
      this.pool.query<AggregateRow>({
        name: 'network-aggregates',
        text: `select s.ip, ${AGGREGATE_COLUMNS},
                      exists (select 1 from whitelist w where w.range >>= s.ip::inet) as whitelisted
                 from ip_stats s
                where s.ip::inet between $1::inet and $2::inet and ($3::timestamptz is null or s.last_reported_at >= $3)
                order by s.last_reported_at desc limit $4`,
        values: [first, last, since ?? null, max],
      }),
    ]);
    return { count: counted.rows[0]!.n, aggregates: found.rows.map(toAggregate) };
  }

  /** Up to `limit` reported addresses without an AS, after `after` in text order (for the ASN backfill). */
  async withoutAsn(after: string, limit: number): Promise<string[]> {
    const { rows } = await this.pool.query<{ ip: string }>({
      name: 'ip-stats-without-asn',
      text: 'select ip from ip_stats where asn is null and ip > $1 order by ip limit $2',
      values: [after, limit],
    });
    return rows.map((row) => row.ip);
  }

  /**
   * Fills the AS (and the organisation and country where those are missing too) of addresses
   * that have none; an address given an AS meanwhile keeps its own. Returns how many were filled.
   */
  async fillAsn(rows: { ip: string; asn: number; isp: string | null; countryCode: string | null }[]): Promise<number> {
    if (rows.length === 0) return 0;
    const { rowCount } = await this.pool.query(
      `update ip_stats s set asn = v.asn, isp = coalesce(s.isp, v.isp), country_code = coalesce(s.country_code, v.country_code)
         from unnest($1::text[], $2::int[], $3::text[], $4::text[]) as v(ip, asn, isp, country_code)
        where s.ip = v.ip and s.asn is null`,
      [rows.map((r) => r.ip), rows.map((r) => r.asn), rows.map((r) => r.isp), rows.map((r) => r.countryCode)],
    );
    return rowCount ?? 0;
  }

  /**
   * The reported addresses GeoIP placed in an AS when they were first reported: how many (since
   * `since`, when given) and the `max` most recently reported of them.
   */
  async inAsn(asn: number, max: number, since?: Date): Promise<{ count: number; aggregates: IpAggregate[] }> {
    const [counted, found] = await Promise.all([
      this.pool.query<{ n: number }>({
        name: 'asn-count',
        text: `select count(*)::int as n from ip_stats s
                where s.asn = $1 and ($2::timestamptz is null or s.last_reported_at >= $2)`,
        values: [asn, since ?? null],
      }),
      this.pool.query<AggregateRow>({
        name: 'asn-aggregates',
        text: `select s.ip, ${AGGREGATE_COLUMNS},
                      exists (select 1 from whitelist w where w.range >>= s.ip::inet) as whitelisted
                 from ip_stats s
                where s.asn = $1 and ($2::timestamptz is null or s.last_reported_at >= $2)
                order by s.last_reported_at desc limit $3`,
        values: [asn, since ?? null, max],
      }),
    ]);
    return { count: counted.rows[0]!.n, aggregates: found.rows.map(toAggregate) };
  }

  /**
   * The reports about an address since a time: how many submissions, from how many accounts,
   * the last one, and the newest `limit` of them with the country they were sent from.
   */
  async since(ip: string, since: Date, limit: number) {
    const [counted, listed] = await Promise.all([
      this.pool.query<{ total: number; reporters: number; last: Date | null }>({
        name: 'reports-since-count',
        text: `select coalesce(sum(1 + aggregation_count), 0)::int as total, count(distinct account_id)::int as reporters,
                      max(reported_at) as last
                 from reports where ip = $1 and reported_at >= $2`,
        values: [ip, since],
      }),
      limit > 0
        ? this.pool.query<Pick<Report, 'reportedAt' | 'categories' | 'comment' | 'reporterCountry'>>({
            name: 'reports-since',
            text: `select reported_at as "reportedAt", categories, comment, reporter_country as "reporterCountry" from reports
                    where ip = $1 and reported_at >= $2 order by reported_at desc, id desc limit $3`,
            values: [ip, since, limit],
          })
        : { rows: [] },
    ]);
    const { total, reporters, last } = counted.rows[0]!;
    return {
      totalReports: total,
      distinctReporters: reporters,
      lastReportedAt: last,
      reports: listed.rows,
    };
  }

  /**
   * Deletes every report an account made about an address and recomputes the address's
   * aggregate from the reports left (removing it when none is), in one transaction under the
   * lock reports of that account and address take. The statistics rollups keep what they
   * counted. Returns how many reports were deleted.
   */
  async clear(accountId: number, ip: string, decay: DecayWeights): Promise<number> {
    return transaction(this.pool, async (client) => {
      await client.query(`select pg_advisory_xact_lock(${REPORT_LOCKS.space}, ${REPORT_LOCKS.bucket('$1', '$2')})`, [accountId, ip]);
      const { rowCount } = await client.query('delete from reports where account_id = $1 and ip = $2', [accountId, ip]);
      if (!rowCount) return 0;
      await recomputeAggregates(client, [ip], [accountId], decay);
      return rowCount;
    });
  }

  /** Reports about an address, newest first. */
  async history(ip: string, limit: number, offset: number): Promise<ReportRecord[]> {
    const { rows } = await this.pool.query<ReportRecord>({
      name: 'report-history',
      text: `select id, categories, comment, reported_at as "reportedAt", reporter_role as "reporterRole", aggregation_count as "aggregationCount"
               from reports where ip = $1
              order by reported_at desc, id desc limit $2 offset $3`,
      values: [ip, limit, offset],
    });
    return rows;
  }

  /**
   * The reports about an address that carry evidence, newest first: one account's (the
   * reporter's own), or every account's (the operator's); with how many there are.
   */
  async evidence(ip: string, accountId: number | undefined, limit: number, offset: number): Promise<{ total: number; reports: EvidenceRecord[] }> {
    const [counted, listed] = await Promise.all([
      this.pool.query<{ n: number }>({
        name: 'report-evidence-count',
        text: `select count(*)::int as n from reports
                where ip = $1 and ($2::int is null or account_id = $2) and evidence is not null`,
        values: [ip, accountId ?? null],
      }),
      this.pool.query<EvidenceRecord>({
        name: 'report-evidence',
        text: `select id, categories, reported_at as "reportedAt", aggregation_count as "aggregationCount", account_id as "accountId", evidence
                 from reports where ip = $1 and ($2::int is null or account_id = $2) and evidence is not null
                order by reported_at desc, id desc limit $3 offset $4`,
        values: [ip, accountId ?? null, limit, offset],
      }),
    ]);
    return { total: counted.rows[0]!.n, reports: listed.rows };
  }

  /** Addresses whose text starts with `prefix`, in address order (an index range scan). */
  searchPrefix(prefix: string, limit: number): Promise<IpAggregate[]> {
    return this.search('search-prefix', `s.ip like $1 || '%' order by s.ip`, [prefix.replace(/[\\%_]/g, '\\$&'), limit]);
  }

  /** Addresses of a country, most reported first. */
  searchCountry(countryCode: string, limit: number): Promise<IpAggregate[]> {
    return this.search('search-country', 's.country_code = $1 order by s.total_reports desc, s.ip', [countryCode, limit]);
  }

  /** Addresses of an autonomous system, most reported first. */
  searchAsn(asn: number, limit: number): Promise<IpAggregate[]> {
    return this.search('search-asn', 's.asn = $1 order by s.total_reports desc, s.ip', [asn, limit]);
  }

  private async search(name: string, where: string, values: unknown[]): Promise<IpAggregate[]> {
    const { rows } = await this.reads.query<AggregateRow>({
      name,
      text: `select s.ip, ${AGGREGATE_COLUMNS},
                    exists (select 1 from whitelist w where w.range >>= s.ip::inet) as whitelisted
               from ip_stats s where ${where} limit $2`,
      values,
    });
    return rows.map(toAggregate);
  }

  /**
   * Stores a batch of reports in one transaction: one reporter's (a bulk report), or many
   * reporters' one each (POST /report's group commit, see report-batcher.ts). A report about an
   * address its reporter reported less than 5 minutes ago is merged into that earlier report
   * (its categories joined, its aggregation count raised); reports of the same address by the
   * same reporter inside the batch merge likewise, in their order. The per-IP aggregates and the
   * statistics rollups are updated in the same transaction. Returns, per report (in their
   * order), the report its submission ended in, its categories as they stood after it, and the
   * address's new score.
   */
  async store(
    reports: (NewReport & { reporter: Reporter })[],
    now: Date,
    decay: number,
    scoreOf: (aggregate: IpAggregate) => number,
    /**
     * Runs last in the transaction (the quota charge): it commits or rolls back with the
     * reports, and holds the accounts' counter rows only for the end of the transaction.
     */
    afterWrite?: (client: Queryable) => Promise<void>,
  ): Promise<StoredReport[]> {
    // The reports of one reporter about one address, in order: they end in one report row.
    const groups = new Map<string, (NewReport & { reporter: Reporter })[]>();
    for (const report of reports) {
      const key = `${report.reporter.accountId}:${report.ip}`;
      const list = groups.get(key);
      if (list) list.push(report);
      else groups.set(key, [report]);
    }
    const pairs = [...groups.values()].map((list) => ({ accountId: list[0]!.reporter.accountId, ip: list[0]!.ip }));
    return transaction(this.pool, async (client) => {
      // Concurrent batches of one reporter about one address take turns, so they aggregate.
      await client.query(
        `select pg_advisory_xact_lock(${REPORT_LOCKS.space}, k) from (
           select distinct ${REPORT_LOCKS.bucket('a', 'ip')} as k from unnest($1::int[], $2::text[]) as v(a, ip)
         ) keys order by k`,
        [pairs.map((p) => p.accountId), pairs.map((p) => p.ip)],
      );
      const recent = await this.recentReports(client, pairs, new Date(now.getTime() - AGGREGATION_WINDOW_MS));

      const ended = new Map<string, number>();
      const inserts: { key: string; ip: string; reporter: Reporter; categories: number[]; comment: string; evidence: string | null; aggregation: number }[] = [];
      const merges: { id: number; categories: number[]; comment: string; evidence: string | null; aggregation: number }[] = [];
      // Evidence of submissions that did not fit their group's (joinEvidence kept the earlier).
      const evidenceLeftOut = new Set<NewReport>();
      // Earlier reports whose evidence was full: the new evidence of their group was left out.
      const mergeLeftOut = new Set<number>();
      for (const [key, list] of groups) {
        const categories = list.reduce((acc, r) => union(acc, r.categories), [] as number[]);
        const comment = list.find((r) => r.comment !== '')?.comment ?? '';
        // The group's evidence joined in order; the earlier report's is joined to it in SQL,
        // where it is (never read here: up to 16 KiB a row, on the hot path).
        let evidence: string | null = null;
        for (const r of list) {
          const joined = joinEvidence(evidence, r.evidence ?? null);
          if (r.evidence && joined === evidence) evidenceLeftOut.add(r);
          evidence = joined;
        }
        const earlier = recent.get(key);
        if (earlier) {
          merges.push({
            id: earlier.id,
            categories: union(earlier.categories, categories),
            comment: earlier.comment || comment,
            evidence,
            aggregation: earlier.aggregation_count + list.length,
          });
          ended.set(key, earlier.id);
        } else {
          inserts.push({ key, ip: list[0]!.ip, reporter: list[0]!.reporter, categories, comment, evidence, aggregation: list.length - 1 });
        }
      }
      if (inserts.length) {
        const { rows } = await client.query<{ id: number; account_id: number; ip: string }>(
          `insert into reports (ip, account_id, reporter_role, reporter_country, categories, comment, reported_at, aggregation_count, evidence)
           select v.ip, v.account_id, v.role, v.country, v.categories::smallint[], v.comment, $1, v.aggregation, v.evidence
             from unnest($2::text[], $3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[])
               as v(ip, account_id, role, country, categories, comment, aggregation, evidence)
           returning id, account_id, ip`,
          [
            now,
            inserts.map((r) => r.ip),
            inserts.map((r) => r.reporter.accountId),
            inserts.map((r) => r.reporter.role),
            inserts.map((r) => r.reporter.country),
            inserts.map((r) => pgArray(r.categories)),
            inserts.map((r) => r.comment),
            inserts.map((r) => r.aggregation),
            inserts.map((r) => r.evidence),
          ],
        );
        for (const row of rows) ended.set(`${row.account_id}:${row.ip}`, row.id);
      }
      if (merges.length) {
        merges.sort((a, b) => a.id - b.id);
        // The evidence joins the earlier report's while the whole fits EVIDENCE_MAX_BYTES (as
        // joinEvidence does); the reports whose new evidence did not fit say so.
        const { rows: full } = await client.query<{ id: number; left_out: boolean }>(
          `update reports r set categories = v.categories::smallint[], comment = v.comment, aggregation_count = v.aggregation,
                  evidence = case when v.evidence is null or r.evidence is null then coalesce(r.evidence, v.evidence)
                                  when octet_length(r.evidence) + 1 + octet_length(v.evidence) <= $5 then r.evidence || E'\\n' || v.evidence
                                  else r.evidence end
             from unnest($1::bigint[], $2::text[], $3::text[], $4::int[], $6::text[]) as v(id, categories, comment, aggregation, evidence)
            where r.id = v.id
           returning r.id, (v.evidence is not null and r.evidence is distinct from v.evidence
                            and right(r.evidence, length(v.evidence) + 1) is distinct from E'\\n' || v.evidence) as left_out`,
          [
            merges.map((m) => m.id),
            merges.map((m) => pgArray(m.categories)),
            merges.map((m) => m.comment),
            merges.map((m) => m.aggregation),
            EVIDENCE_MAX_BYTES,
            merges.map((m) => m.evidence),
          ],
        );
        for (const row of full) if (row.left_out) mergeLeftOut.add(Number(row.id));
      }
      const { rows: newReporter } = await client.query<{ ip: string; account_id: number }>(
        `insert into ip_reporters (ip, account_id) select * from unnest($1::text[], $2::int[]) as v(ip, a) order by ip, a
         on conflict do nothing returning ip, account_id`,
        [pairs.map((p) => p.ip), pairs.map((p) => p.accountId)],
      );
      const firstFromReporter = new Set(newReporter.map((r) => `${r.account_id}:${r.ip}`));
      const inserted = new Set(inserts.map((r) => r.key));
      // Per address, over its reporters; in address order, so that concurrent batches lock its rows in one order.
      const perIp = new Map<string, { submissions: number; newRows: number; newReporters: number; honeypot: number; categories: number[]; severity: number; geo: NewReport['geo'] }>();
      for (const [key, list] of groups) {
        const ip = list[0]!.ip;
        const row = perIp.get(ip) ?? { submissions: 0, newRows: 0, newReporters: 0, honeypot: 0, categories: [], severity: 0, geo: list[0]!.geo };
        row.submissions += list.length;
        row.newRows += inserted.has(key) ? 1 : 0;
        row.newReporters += firstFromReporter.has(key) ? 1 : 0;
        row.honeypot += list.filter((r) => r.reporter.role === 'honeypot').length;
        row.categories = list.reduce((acc, r) => union(acc, r.categories), row.categories);
        row.severity = Math.max(row.severity, ...list.map((r) => r.severity));
        perIp.set(ip, row);
      }
      const ips = [...perIp.keys()].sort();
      const rows = ips.map((ip) => ({ ip, ...perIp.get(ip)!, decay: decay * perIp.get(ip)!.submissions }));
      const { rows: updated } = await client.query<AggregateRow & { first_seen: boolean }>(
        `insert into ip_stats as s (ip, total_reports, report_rows, unique_reporters, honeypot_reports, first_reported_at,
                               last_reported_at, categories, max_severity, decay_sum, country_code, asn, isp, positive_feedback)
         select v.ip, v.submissions, v.new_rows, v.new_reporter, v.honeypot, $1, $1, v.categories::smallint[],
                v.severity, v.decay, v.country_code, v.asn, v.isp,
                (select count(*) from ip_feedback f where f.ip = v.ip)
           from unnest($2::text[], $3::int[], $4::int[], $5::int[], $6::int[], $7::text[], $8::smallint[],
                       $9::float8[], $10::text[], $11::int[], $12::text[])
             as v(ip, submissions, new_rows, new_reporter, honeypot, categories, severity, decay, country_code, asn, isp)
         on conflict (ip) do update set
           total_reports = s.total_reports + excluded.total_reports,
           report_rows = s.report_rows + excluded.report_rows,
           unique_reporters = s.unique_reporters + excluded.unique_reporters,
           honeypot_reports = s.honeypot_reports + excluded.honeypot_reports,
           last_reported_at = greatest(s.last_reported_at, excluded.last_reported_at),
           categories = array(select distinct c from unnest(s.categories || excluded.categories) c order by c),
           max_severity = greatest(s.max_severity, excluded.max_severity),
           decay_sum = s.decay_sum + excluded.decay_sum,
           country_code = coalesce(s.country_code, excluded.country_code),
           asn = coalesce(s.asn, excluded.asn),
           isp = coalesce(s.isp, excluded.isp)
         returning s.ip, ${AGGREGATE_COLUMNS}, (xmax = 0) as first_seen,
                   exists (select 1 from whitelist w where w.range >>= s.ip::inet) as whitelisted`,
        [
          now,
          rows.map((r) => r.ip),
          rows.map((r) => r.submissions),
          rows.map((r) => r.newRows),
          rows.map((r) => r.newReporters),
          rows.map((r) => r.honeypot),
          rows.map((r) => pgArray(r.categories)),
          rows.map((r) => r.severity),
          rows.map((r) => r.decay),
          rows.map((r) => r.geo.countryCode),
          rows.map((r) => r.geo.asn),
          rows.map((r) => r.geo.isp),
        ],
      );
      const scores = new Map(updated.map((row) => [row.ip, scoreOf(toAggregate(row))]));
      const firstSeen = new Set(updated.filter((row) => row.first_seen).map((row) => row.ip));
      await this.rollUp(
        client,
        now,
        [...groups.values()].map((list) => ({
          submissions: list.length,
          categories: list.reduce((acc, r) => union(acc, r.categories), [] as number[]),
          // An address new with this batch counts once, with the first of its reporters.
          newIp: firstSeen.delete(list[0]!.ip),
          country: list[0]!.geo.countryCode,
          reporterCountry: list[0]!.reporter.country,
          score: scores.get(list[0]!.ip) ?? 0,
        })),
      );
      await afterWrite?.(client);
      // Each report's answer: the row it ended in, with the categories it had once that report was in.
      const seen = new Map<string, number[]>();
      return reports.map((report) => {
        const key = `${report.reporter.accountId}:${report.ip}`;
        const before = seen.get(key) ?? recent.get(key)?.categories ?? [];
        const categories = union(before, report.categories);
        seen.set(key, categories);
        const reportId = ended.get(key)!;
        const evidenceStored = !!report.evidence && !evidenceLeftOut.has(report) && !mergeLeftOut.has(Number(reportId));
        return { reportId, ip: report.ip, categories, score: scores.get(report.ip) ?? 0, evidenceStored };
      });
    });
  }

  /**
   * Records positive feedback: once per account and address (again: the reason is updated and
   * it counts once). The address's aggregate counts the distinct accounts, so that lookups and
   * the blacklist score it without reading the feedback; an address reported later starts from
   * the feedback given before (see store). `charge` runs in the same transaction: one unit for
   * new feedback, none for a repeat.
   */
  async recordFeedback(
    feedback: { ip: string; accountId: number; keyId: string; reason: string },
    now: Date,
    charge: (units: number, client: Queryable) => Promise<void>,
  ): Promise<{ feedbackId: number; duplicate: boolean; count: number }> {
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<{ id: number; inserted: boolean }>(
        `insert into ip_feedback (ip, account_id, key_id, reason, created_at, updated_at) values ($1, $2, $3, $4, $5, $5)
         on conflict (ip, account_id) do update set reason = excluded.reason, key_id = excluded.key_id, updated_at = excluded.updated_at
         returning id, (xmax = 0) as inserted`,
        [feedback.ip, feedback.accountId, feedback.keyId, feedback.reason, now],
      );
      const { id, inserted } = rows[0]!;
      // Only new feedback is charged: a repeat (a client retrying after a lost answer) changes
      // nothing but the reason.
      if (inserted) await client.query('update ip_stats set positive_feedback = positive_feedback + 1 where ip = $1', [feedback.ip]);
      await charge(inserted ? 1 : 0, client);
      const { rows: count } = await client.query<{ n: number }>('select count(*)::int as n from ip_feedback where ip = $1', [feedback.ip]);
      return { feedbackId: id, duplicate: !inserted, count: count[0]!.n };
    });
  }

  /**
   * The statistics rollups, last in the report transaction so that their few hot rows are
   * locked for as short a time as possible: activity per hour and category, totals per
   * country, and cross-country connections per hour.
   */
  private async rollUp(
    client: Queryable,
    now: Date,
    items: { submissions: number; categories: number[]; newIp: boolean; country: string | null; reporterCountry: string | null; score: number }[],
  ): Promise<void> {
    const hour = new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000);
    const activity = new Map<number, { reports: number; newIps: number }>();
    const bump = (category: number, reports: number, newIps: number) => {
      const a = activity.get(category) ?? { reports: 0, newIps: 0 };
      a.reports += reports;
      a.newIps += newIps;
      activity.set(category, a);
    };
    const countries = new Map<string, { ips: number; reports: number }>();
    const connections = new Map<string, { reports: number; scoreSum: number }>();
    for (const item of items) {
      const newIps = item.newIp ? 1 : 0;
      bump(0, item.submissions, newIps);
      for (const category of item.categories) bump(category, item.submissions, newIps);
      if (item.country) {
        const c = countries.get(item.country) ?? { ips: 0, reports: 0 };
        c.ips += newIps;
        c.reports += item.submissions;
        countries.set(item.country, c);
        if (item.reporterCountry && item.reporterCountry !== item.country) {
          const key = `${item.country}>${item.reporterCountry}`;
          const conn = connections.get(key) ?? { reports: 0, scoreSum: 0 };
          conn.reports += item.submissions;
          conn.scoreSum += item.score * item.submissions;
          connections.set(key, conn);
        }
      }
    }
    // Sorted keys: concurrent transactions lock the shared rows in the same order.
    const categories = [...activity.keys()].sort((a, b) => a - b);
    // The same counts per hour, per day and all time (category 0 counting all): one statement.
    const day = new Date(Math.floor(now.getTime() / 86_400_000) * 86_400_000);
    await client.query(
      `with v as (select * from unnest($3::smallint[], $4::int[], $5::int[]) as v(category, reports, new_ips)),
       hourly as (
         insert into activity_hourly as a (hour, category, reports, new_ips) select $1, * from v
         on conflict (hour, category) do update set reports = a.reports + excluded.reports, new_ips = a.new_ips + excluded.new_ips),
       daily as (
         insert into activity_daily as a (day, category, reports, new_ips) select $2, * from v
         on conflict (day, category) do update set reports = a.reports + excluded.reports, new_ips = a.new_ips + excluded.new_ips)
       insert into category_totals as a (category, reports, new_ips) select * from v
       on conflict (category) do update set reports = a.reports + excluded.reports, new_ips = a.new_ips + excluded.new_ips`,
      [hour, day, categories, categories.map((c) => activity.get(c)!.reports), categories.map((c) => activity.get(c)!.newIps)],
    );
    if (countries.size) {
      const codes = [...countries.keys()].sort();
      await client.query(
        `insert into country_totals (country_code, ips, reports)
         select * from unnest($1::text[], $2::int[], $3::bigint[])
         on conflict (country_code) do update set
           ips = country_totals.ips + excluded.ips, reports = country_totals.reports + excluded.reports`,
        [codes, codes.map((c) => countries.get(c)!.ips), codes.map((c) => countries.get(c)!.reports)],
      );
    }
    if (connections.size) {
      const keys = [...connections.keys()].sort();
      await client.query(
        `insert into connections_hourly (hour, source_country, target_country, reports, score_sum)
         select $1, v.source, v.target, v.reports, v.score_sum
           from unnest($2::text[], $3::text[], $4::int[], $5::bigint[]) as v(source, target, reports, score_sum)
         on conflict (hour, source_country, target_country) do update set
           reports = connections_hourly.reports + excluded.reports,
           score_sum = connections_hourly.score_sum + excluded.score_sum`,
        [
          hour,
          keys.map((k) => k.split('>')[0]),
          keys.map((k) => k.split('>')[1]),
          keys.map((k) => connections.get(k)!.reports),
          keys.map((k) => connections.get(k)!.scoreSum),
        ],
      );
    }
  }

  /**
   * Each pair's newest report when it is newer than `since`: one probe of the (account, ip,
   * time) index per pair. The time is tested on the probe's row, not in it: with the bound inside,
   * the planner may walk the account's whole recent history for each pair instead (the account's
   * last 5 minutes of reports per address: 3.7 s for a bulk report of 10,000 lines, against 51 ms).
   */
  private async recentReports(client: Queryable, pairs: { accountId: number; ip: string }[], since: Date) {
    const { rows } = await client.query<{
      id: number;
      account_id: number;
      ip: string;
      categories: number[];
      comment: string;
      aggregation_count: number;
    }>(
      `select r.id, v.a as account_id, v.ip, r.categories, r.comment, r.aggregation_count
         from unnest($1::int[], $2::text[]) as v(a, ip)
         cross join lateral (
           select id, categories, comment, aggregation_count, reported_at from reports
            where account_id = v.a and ip = v.ip
            order by reported_at desc limit 1) r
        where r.reported_at > $3`,
      [pairs.map((p) => p.accountId), pairs.map((p) => p.ip), since],
    );
    return new Map(rows.map((r) => [`${r.account_id}:${r.ip}`, r]));
  }
}
