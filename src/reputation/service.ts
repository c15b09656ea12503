import { parse } from 'csv-parse/sync';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import type { CategoryService } from '../categories/service.js';
import type { GeoIp } from '../geo/geoip.js';
import { DomainError, invalidField, sentence, unprocessable, within } from '../errors.js';
import type { Caller } from '../keys/service.js';
import { paid, type Metered, type Payer, type Quota, type Usage } from '../keys/quota.js';
import { addressToBigInt, nonPublicReason, parseAddress, parseNetwork, type Address } from '../address.js';
import type { IpAggregate, NewReport, ReportRecord, Reporter, ReputationRepository } from './repository.js';
import { ReportBatcher, type BatchedReport, type ReportBatching } from './report-batcher.js';
import { EVIDENCE_MAX_BYTES, addRedactions, evidenceBytes, redactEvidence, type Redactions } from './evidence.js';
import { summarise, type ScoredAddress } from './network.js';
import { isPublicAsn } from '../geo/asn-table.js';
import type { BlacklistSnapshots } from '../blacklist/repository.js';
import { DEFAULT_CONFIDENCE, LIMIT_MAX } from '../blacklist/service.js';
import { confidenceScorer, scoreAggregate, decayContribution, EPOCH_MS, HALF_LIFE_MS, type Score } from './score.js';


export const COMMENT_MAX = 1024;
export const BULK_REPORT_MAX_LINES = 10_000;
export const BULK_REPORT_MAX_BYTES = 2 * 1024 * 1024;
export const CHECK_REPORTS_SHOWN = 25;
export const BULK_CHECK_MAX = 1_000;
export const SEARCH_LIMIT_MAX = 50;
export const SEARCH_QUERY_MAX = 64;
export const REPORT_CATEGORIES_MAX = 30;
export const HISTORY_PAGE_MAX = 10_000;
export const HISTORY_PER_PAGE_MAX = 100;
/** Pages of evidence are smaller: each report carries up to 16 KiB of it. */
export const EVIDENCE_PER_PAGE_MAX = 50;
/** A network check scores at most this many addresses: every address of an IPv4 /16. */
export const NETWORK_ADDRESSES_MAX = 65_536;
/** The widest network a check takes, per IP version. */
const NETWORK_PREFIX_MIN = { 4: 16, 6: 48 } as const;
/** AS numbers are 32-bit (RFC 6793); those stored with addresses fit PostgreSQL's integer. */
const MAX_ASN = 4_294_967_295;
const MAX_STORED_ASN = 2_147_483_647;
/** An AS check returns at most this many addresses (its summary covers up to NETWORK_ADDRESSES_MAX). */
export const ASN_ADDRESSES_MAX = 1_000;
export const ASN_ADDRESSES_DEFAULT = 100;
/** `maxAgeInDays` of an AS check: reports are kept no longer. */
export const MAX_AGE_DAYS_MAX = 365;

export interface ReputationRecord {
  ip: string;
  abuseConfidencePercentage: number;
  totalReports: number;
  lastReportedAt: string | null;
  categories: number[];
  countryCode: string;
  isp: string;
}

export interface FullRecord extends ReputationRecord {
  isWhitelisted: boolean;
  confidenceBreakdown?: Score['confidenceBreakdown'];
  debugInfo?: Score['debugInfo'];
  reports?: ReportView[];
}

export interface ReportView {
  id: number;
  categories: number[];
  comment: string;
  reportedAt: string;
  reporterRole: ReportRecord['reporterRole'];
  aggregationCount: number;
}

/** The GeoIP answer as ip_stats keeps it: an AS number beyond PostgreSQL's integer is not stored. */
const storableGeo = (geo: { countryCode: string | null; asn: number | null; isp: string | null }) =>
  geo.asn !== null && geo.asn > MAX_STORED_ASN ? { ...geo, asn: null } : geo;

/** Control characters (C0 but tab and line feed, DEL, C1) never reach storage. */
const CONTROL = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F]/g;
export const cleanComment = (comment: string) => comment.replace(/\r\n?/g, '\n').replace(CONTROL, '');

type Refusal = {
  field: 'ip' | 'categories' | 'evidence';
  code: 'invalid_request' | 'address_not_reportable' | 'unknown_category' | 'evidence_too_large';
  message: string;
};
/** `evidence`: what redaction removed and whether the markers made it cut, when evidence was given. */
type Validated = { report: NewReport; ignored: number[]; truncated: boolean; evidence?: { redactions: Redactions; truncated: boolean } };

/** The answer's account of a report's evidence, when it had some. */
function evidenceAnswer(validated: Validated, stored: boolean) {
  return validated.evidence
    ? { evidenceStored: stored, evidenceRedactions: validated.evidence.redactions, evidenceTruncated: validated.evidence.truncated }
    : {};
}

/** A line of a bulk report: parsed, or refused with why. */
export type CsvLine = { line: number; input: string } & (
  | { ip: string; categories: number[]; comment: string; evidence?: string }
  | { error: string }
);

/**
 * The category ids of a report as the clients send them: an array of ids, a string of ids
 * separated by commas (`"18,31"`, the ReportedIP clients' form) or a single id. Anything else
 * gives no ids (and the report is refused for it).
 */
export function categoryIds(input: unknown): number[] {
  const parts = Array.isArray(input) ? input : typeof input === 'string' ? input.split(',') : [input];
  const ids: number[] = [];
  for (const part of parts) {
    const text = typeof part === 'number' ? String(part) : typeof part === 'string' ? part.trim() : '';
    if (text === '') continue;
    if (!/^[0-9]{1,5}$/.test(text)) return [];
    ids.push(Number(text));
  }
  return ids;
}


const toView = (r: ReportRecord): ReportView => ({
  id: r.id,
  categories: r.categories,
  comment: r.comment,
  reportedAt: r.reportedAt.toISOString(),
  reporterRole: r.reporterRole,
  aggregationCount: r.aggregationCount,
});

/** Why an address cannot be reported or given feedback (it is not public), as a sentence. */
function unreportable(address: Address): string | undefined {
  const reason = nonPublicReason(address);
  return reason && `${address.text} is ${reason} and cannot be reported.`;
}

/** The operator's latest delisting decision on an address (delisting/service.ts), shown on GET /reports/{ip}. */
export interface DelistingDecisions {
  decisionFor(ip: string): Promise<{ status: 'approved' | 'rejected'; range: string; decidedAt: string; whitelistUntil: string | null } | undefined>;
}

/** Told of every report stored, after its commit (webhooks/service.ts: the `report.received` events). */
export interface ReportListener {
  reportsStored(reports: { accountId: number; reportId: number; ip: string; categories: number[] }[]): void;
}

export class ReputationService {
  private readonly batcher: ReportBatcher;

  /**
   * `reports`: POST /report's group commit (report-batcher.ts). `quota` charges the use cases'
   * payers (a caller without a payer, the command line's import, is charged nothing).
   */
  constructor(
    private readonly repository: ReputationRepository,
    private readonly categories: CategoryService,
    private readonly geo: GeoIp,
    private readonly clock: Clock,
    reports: { batching: ReportBatching; quota?: Quota; delistings?: DelistingDecisions; listed?: BlacklistSnapshots; listener?: ReportListener } = { batching: { ms: 0, max: 1 } },
  ) {
    this.quota = reports.quota;
    this.snapshots = reports.listed;
    this.delistings = reports.delistings;
    this.listener = reports.listener;
    this.batcher = new ReportBatcher((batch, afterWrite) => this.store(batch, afterWrite), this.quota, reports.batching);
  }

  private readonly quota: Quota | undefined;
  /** The blacklist's snapshots, for which addresses of a network are listed. */
  private readonly snapshots: BlacklistSnapshots | undefined;
  private readonly delistings: DelistingDecisions | undefined;
  private readonly listener: ReportListener | undefined;

  /** The quota, for a use case a payer pays for. */
  private paying(payer: Payer, units: number) {
    return { quota: this.charges(), payer, units };
  }

  private charges(): Quota {
    if (!this.quota) throw new Error('a charged use case needs the quota');
    return this.quota;
  }

  /** Charges `units` on their own (no transaction), or throws the refusal. */
  private async charge(payer: Payer, units: number): Promise<Usage> {
    return paid(await this.charges().charge(payer, units));
  }

  /**
   * Charges `units` inside `client`'s transaction (the work it pays for) and keeps the counter's
   * Usage in `into`; a refusal throws (QuotaExceeded), rolling the transaction back.
   */
  private chargeIn(payer: Payer | undefined, into: { usage?: Usage }) {
    return async (units: number, client: Queryable) => {
      if (payer) into.usage = paid(await this.charges().charge(payer, units, client));
    };
  }

  private score(aggregate: IpAggregate): Score {
    return scoreAggregate(aggregate, this.clock.now());
  }

  /** Country and network: as stored with the reports, else from the geolocation data. */
  private place(aggregate: IpAggregate) {
    const geo = aggregate.countryCode || aggregate.isp ? aggregate : this.geo.lookup(aggregate.ip);
    return { countryCode: geo.countryCode ?? 'ZZ', isp: geo.isp ?? '' };
  }

  private record(aggregate: IpAggregate, score: Score): ReputationRecord {
    return {
      ip: aggregate.ip,
      abuseConfidencePercentage: score.abuseConfidencePercentage,
      totalReports: aggregate.totalReports,
      lastReportedAt: aggregate.lastReportedAt?.toISOString() ?? null,
      categories: aggregate.categories,
      ...this.place(aggregate),
    };
  }

  private parse(ip: string, name = 'ip'): Address {
    const parsed = parseAddress(ip.trim());
    if (!parsed) {
      throw new DomainError('invalid_input', `Invalid request: ${name} '${ip}' is not an IPv4 or IPv6 address.`, {
        fields: [{ name, message: 'must be an IPv4 or IPv6 address' }],
      });
    }
    return parsed;
  }

  /** The aggregate of an address, paid for by `payer` in the same statement (one round trip). */
  private async aggregatePaid(ip: string, payer: Payer) {
    const { outcome, aggregate } = await this.repository.findOnePaid(ip, this.paying(payer, 1));
    return { usage: paid(outcome), aggregate: aggregate! };
  }

  /** GET /check-public: the lookup and its charge (or, uncharged, its counter) in one statement. */
  async checkPublic(ip: string, verbose: boolean, payer: Payer) {
    const { usage, aggregate } = await this.aggregatePaid(this.parse(ip).text, payer);
    const score = this.score(aggregate);
    return { data: { ...this.record(aggregate, score), ...(verbose ? { confidenceBreakdown: score.confidenceBreakdown } : {}) }, usage };
  }

  /** GET /check: the lookup and its charge in one statement, one round trip. */
  async check(ip: string, options: { verbose: boolean; includeReports: boolean }, payer: Payer): Promise<Metered<FullRecord>> {
    const parsed = this.parse(ip);
    const [{ usage, aggregate }, reports] = await Promise.all([
      this.aggregatePaid(parsed.text, payer),
      options.includeReports ? this.repository.history(parsed.text, CHECK_REPORTS_SHOWN, 0) : undefined,
    ]);
    const score = this.score(aggregate);
    return {
      data: {
        ...this.record(aggregate, score),
        isWhitelisted: aggregate.whitelisted,
        ...(options.verbose ? { confidenceBreakdown: score.confidenceBreakdown, debugInfo: score.debugInfo } : {}),
        ...(reports ? { reports: reports.map(toView) } : {}),
      },
      usage,
    };
  }

  /**
   * POST /bulk-check: every distinct valid address is checked and charged once; the charge and
   * the read in one statement, one round trip.
   */
  async bulkCheck(entries: string[], payer: Payer) {
    within('ips', entries.length, 1, BULK_CHECK_MAX);
    const invalid: { ip: string; error: string }[] = [];
    const ips: string[] = [];
    const seen = new Set<string>();
    for (const entry of entries) {
      const parsed = parseAddress(entry.trim());
      if (!parsed) invalid.push({ ip: entry, error: 'not an IPv4 or IPv6 address' });
      else if (!seen.has(parsed.text)) {
        seen.add(parsed.text);
        ips.push(parsed.text);
      }
    }
    // None valid: 0 units, which still gives the answer its counter.
    const { outcome, reported } = ips.length
      ? await this.repository.findReportedPaid(ips, this.paying(payer, ips.length))
      : { outcome: await this.charges().charge(payer, 0), reported: [] };
    const usage = paid(outcome);
    const byIp = new Map(reported.map((a) => [a.ip, a]));
    const score = confidenceScorer(this.clock.now());
    const results = ips.map((ip) => {
      const a = byIp.get(ip);
      return a
        ? { ip, abuseConfidencePercentage: score(a), totalReports: a.reportCount, lastReportedAt: a.lastReportedAt?.toISOString() ?? null, categories: a.categories }
        : { ip, abuseConfidencePercentage: 0, totalReports: 0, lastReportedAt: null, categories: [] };
    });
    return { data: { results, checked: results.length, invalid }, usage };
  }

  /**
   * GET /check-block: the reported addresses of an IPv4 /16-/32 or IPv6 /48-/128 network,
   * highest score first. Charges one check per address returned, at least one; a refused
   * charge answers nothing. `since`: only addresses reported since.
   */
  async checkBlock(network: string, limit: number, payer: Payer, since?: Date, options: { summary?: boolean } = {}) {
    within('limit', limit, 1, NETWORK_ADDRESSES_MAX);
    const parsed = parseNetwork(network, { prefixRequired: true });
    if (!parsed) {
      const message = 'must be a network in CIDR notation, e.g. 203.0.113.0/24 or 2001:db8::/48';
      throw invalidField('network', message, 'invalid_request');
    }
    const widest = NETWORK_PREFIX_MIN[parsed.version];
    if (parsed.bits < widest) {
      const message = `an IPv${parsed.version} network must be /${widest} to /${parsed.version === 4 ? 32 : 128}`;
      throw new DomainError('unprocessable', `${parsed.text} is wider than /${widest}; check IPv4 networks from /16 to /32 and IPv6 networks from /48 to /128.`, { code: 'network_too_large', fields: [{ name: 'network', message }] });
    }
    const { count, aggregates } = await this.repository.inNetwork(parsed.firstAddress, parsed.lastAddress, NETWORK_ADDRESSES_MAX, since);
    const units = Math.max(1, Math.min(limit, count, NETWORK_ADDRESSES_MAX));
    const usage = await this.charge(payer, units);
    const all = aggregates
      .map((aggregate) => ({ aggregate, score: this.score(aggregate).abuseConfidencePercentage, n: addressToBigInt(aggregate.ip) }))
      .sort((a, b) => b.score - a.score || (a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
    const scored = all.slice(0, limit);
    // The summary covers every address read; skipped for the callers that show none (AbuseIPDB's check-block).
    const summary = options.summary === false
      ? undefined
      : await this.networkSummary(
          all,
          parsed.version === 4 ? Number(parsed.last - parsed.first + 1n) : undefined,
          { first: parsed.firstAddress, last: parsed.lastAddress },
        );
    const data = {
      network: parsed.text,
      networkAddress: parsed.firstAddress,
      prefixLength: parsed.bits,
      netmask: parsed.netmask,
      firstAddress: parsed.firstAddress,
      lastAddress: parsed.lastAddress,
      addressCount: (parsed.last - parsed.first + 1n).toString(),
      reportedCount: count,
      truncated: scored.length < count,
      reported: scored.map(({ aggregate, score }) => ({
        ip: aggregate.ip,
        abuseConfidencePercentage: score,
        totalReports: aggregate.totalReports,
        lastReportedAt: aggregate.lastReportedAt!.toISOString(),
        categories: aggregate.categories,
        countryCode: this.place(aggregate).countryCode,
      })),
      ...(summary ? { summary } : {}),
    };
    return { data, usage };
  }

  /**
   * `trs geo backfill-asn`: the AS of every reported address stored without one, from the
   * GeoIP data, `batch` addresses at a time (each batch its own statement). Addresses the data
   * places in no AS stay null. `onBatch`: the addresses scanned so far.
   */
  async backfillAsn(batch: number, onBatch: (scanned: number) => void = () => {}): Promise<{ scanned: number; filled: number }> {
    let after = '';
    let scanned = 0;
    let filled = 0;
    for (;;) {
      const ips = await this.repository.withoutAsn(after, batch);
      if (ips.length === 0) break;
      const rows = ips.flatMap((ip) => {
        const geo = storableGeo(this.geo.lookup(ip));
        return geo.asn === null ? [] : [{ ip, asn: geo.asn, isp: geo.isp, countryCode: geo.countryCode }];
      });
      filled += await this.repository.fillAsn(rows);
      scanned += ips.length;
      after = ips.at(-1)!;
      onBatch(scanned);
    }
    return { scanned, filled };
  }

  /**
   * Which of `ips` the current blacklist snapshot lists at the list's default confidence (none
   * before the first snapshot). `range`: the network they lie in, read as one range of the
   * snapshot's address index rather than by a list of addresses.
   */
  private async listedOf(ips: string[], range?: { first: string; last: string }): Promise<Set<string>> {
    if (!this.snapshots || ips.length === 0) return new Set();
    const head = await this.snapshots.head();
    if (!head) return new Set();
    const selection = await this.snapshots.select(head, { minScore: DEFAULT_CONFIDENCE, limit: LIMIT_MAX });
    if (range) {
      const asked = new Set(ips);
      const inRange = await this.snapshots.within(selection, range.first, range.last, { select: 'ip', order: 'address' });
      return new Set(inRange.map((e) => e.ip).filter((ip) => asked.has(ip)));
    }
    return new Set(await this.snapshots.among(selection, ips));
  }

  /** The network view of scored addresses (`ipv4Size`: the IPv4 addresses the network holds, when known; `range`: the network's bounds). */
  private async networkSummary(scored: { aggregate: IpAggregate; score: number }[], ipv4Size?: number, range?: { first: string; last: string }) {
    const addresses: ScoredAddress[] = scored.map(({ aggregate, score }) => ({
      ip: aggregate.ip,
      score,
      totalReports: aggregate.totalReports,
      lastReportedAt: aggregate.lastReportedAt!,
      categories: aggregate.categories,
    }));
    const listed = await this.listedOf(addresses.map((a) => a.ip), range);
    return summarise(addresses, listed, DEFAULT_CONFIDENCE, ipv4Size);
  }

  /**
   * GET /check-asn: the addresses GeoIP placed in an AS when they were reported, the `limit`
   * highest scores first, with the AS's organisation, how many are listed, the top categories
   * and the IPv6 ones by /64. `maxAgeInDays`: only addresses reported within so many days.
   * Charges one check per address returned, at least one; a refused charge answers nothing.
   */
  async checkAsn(asn: number, limit: number, payer: Payer, maxAgeInDays?: number) {
    if (!Number.isInteger(asn) || asn < 1 || asn > MAX_ASN) {
      throw invalidField('asn', `must be an AS number from 1 to ${MAX_ASN}`, 'invalid_request');
    }
    if (!isPublicAsn(asn)) {
      throw invalidField('asn', `AS${asn} is a special-purpose AS number (private use, documentation, AS_TRANS or reserved) and names no network`, 'invalid_request');
    }
    within('limit', limit, 1, ASN_ADDRESSES_MAX);
    if (maxAgeInDays !== undefined) within('maxAgeInDays', maxAgeInDays, 1, MAX_AGE_DAYS_MAX);
    const since = maxAgeInDays === undefined ? undefined : new Date(this.clock.now().getTime() - maxAgeInDays * 86_400_000);
    // AS numbers above PostgreSQL's integer are never stored with an address.
    const { count, aggregates } = asn <= MAX_STORED_ASN
      ? await this.repository.inAsn(asn, NETWORK_ADDRESSES_MAX, since)
      : { count: 0, aggregates: [] as IpAggregate[] };
    const units = Math.max(1, Math.min(limit, count));
    const usage = await this.charge(payer, units);
    const scored = aggregates
      .map((aggregate) => ({ aggregate, score: this.score(aggregate).abuseConfidencePercentage, n: addressToBigInt(aggregate.ip) }))
      .sort((a, b) => b.score - a.score || (a.n < b.n ? -1 : a.n > b.n ? 1 : 0));
    const announced = this.geo.announced?.(asn) ?? null;
    const summary = await this.networkSummary(scored, announced?.ipv4Addresses || undefined);
    const shown = scored.slice(0, limit);
    const data = {
      asn,
      organisation: announced?.isp ?? aggregates.find((a) => a.isp)?.isp ?? null,
      ...(announced ? { announced: { ipv4Ranges: announced.ipv4Ranges, ipv4Addresses: announced.ipv4Addresses, ipv6Ranges: announced.ipv6Ranges } } : {}),
      maxAgeInDays: maxAgeInDays ?? null,
      reportedCount: count,
      truncated: shown.length < count,
      reported: shown.map(({ aggregate, score }) => ({
        ip: aggregate.ip,
        abuseConfidencePercentage: score,
        totalReports: aggregate.totalReports,
        lastReportedAt: aggregate.lastReportedAt!.toISOString(),
        categories: aggregate.categories,
        countryCode: this.place(aggregate).countryCode,
      })),
      summary,
    };
    return { data, usage };
  }

  /**
   * Validates one report; returns the refusal instead of throwing so bulk lines can list it.
   * Ids not in the catalogue are dropped and named (`ignored`): a report is refused for its
   * categories only when none is known. A comment longer than COMMENT_MAX is shortened, since
   * automated reporters drop a refused report for good.
   */
  private async validateReport(ip: string, categories: number[], comment: string, evidence?: string): Promise<Validated | Refusal> {
    // Measured as sent, before anything is removed: the bound is the sender's.
    if (evidence !== undefined && evidenceBytes(evidence) > EVIDENCE_MAX_BYTES) {
      return { field: 'evidence', code: 'evidence_too_large', message: `the evidence is larger than ${EVIDENCE_MAX_BYTES} bytes of UTF-8` };
    }
    const parsed = parseAddress(ip.trim());
    if (!parsed) return { field: 'ip', code: 'invalid_request', message: `'${ip}' is not an IPv4 or IPv6 address` };
    const reason = unreportable(parsed);
    if (reason) return { field: 'ip', code: 'address_not_reportable', message: reason };
    const distinct = [...new Set(categories)].sort((a, b) => a - b);
    if (distinct.length === 0) return { field: 'categories', code: 'unknown_category', message: 'at least one category id is required' };
    if (distinct.length > REPORT_CATEGORIES_MAX) {
      return { field: 'categories', code: 'invalid_request', message: `at most ${REPORT_CATEGORIES_MAX} category ids are taken` };
    }
    const catalogue = await this.categories.severities();
    const known = distinct.filter((id) => catalogue.has(id));
    const ignored = distinct.filter((id) => !catalogue.has(id));
    if (known.length === 0) {
      return {
        field: 'categories',
        code: 'unknown_category',
        message: `no category id of the report is in the catalogue (unknown: ${ignored.join(', ')}; see GET /categories)`,
      };
    }
    const cleaned = cleanComment(comment);
    const truncated = cleaned.length > COMMENT_MAX;
    // Empty evidence is none; what is kept of the rest is its redacted text.
    const redacted = evidence ? redactEvidence(evidence) : undefined;
    return {
      report: {
        ip: parsed.text,
        categories: known,
        comment: truncated ? `${cleaned.slice(0, COMMENT_MAX - 1)}…` : cleaned,
        evidence: redacted?.text || null,
        severity: Math.max(...known.map((id) => catalogue.get(id)!)),
        geo: storableGeo(this.geo.lookup(parsed.text)),
      },
      ignored,
      truncated,
      ...(redacted ? { evidence: { redactions: redacted.redactions, truncated: redacted.truncated } } : {}),
    };
  }

  /** Who reports: the caller's account and role, and the country its request came from. */
  private reporter(caller: Caller, reporterIp: string): Reporter {
    return { accountId: caller.accountId, role: caller.role, country: this.geo.lookup(reporterIp).countryCode };
  }

  /** Stores reports in one transaction, running `afterWrite` (the charge) last in it. */
  private async store(reports: BatchedReport[], afterWrite: (client: Queryable) => Promise<void>) {
    const now = this.clock.now();
    const stored = await this.repository.store(reports, now, decayContribution(now), (a) => this.score(a).abuseConfidencePercentage, afterWrite);
    this.listener?.reportsStored(stored.map((s, i) => ({ accountId: reports[i]!.reporter.accountId, reportId: Number(s.reportId), ip: s.ip, categories: s.categories })));
    return stored;
  }

  /** Writes the reports gathered (POST /report's group commit) on the server's stop. */
  close(): Promise<void> {
    return this.batcher.close();
  }

  /** POST /report. `reporterIp` is where the report came from: the target of attack-map connections. */
  async report(caller: Caller, reporterIp: string, input: { ip: string; categories: unknown; comment?: string; evidence?: string }, payer: Payer) {
    const validated = await this.validateReport(input.ip, categoryIds(input.categories), input.comment ?? '', input.evidence);
    if ('field' in validated && validated.code === 'evidence_too_large') {
      throw new DomainError('too_large', sentence(`The report was refused: ${validated.message}; send the lines that show the abuse, not the whole log`), {
        code: validated.code,
        fields: [{ name: 'evidence', message: validated.message }],
      });
    }
    if ('field' in validated) {
      throw unprocessable(sentence(`The report was refused: ${validated.message}`), [
        { name: validated.field, message: validated.message },
      ], validated.code);
    }
    const { stored, usage } = await this.batcher.submit({ ...validated.report, reporter: this.reporter(caller, reporterIp) }, payer);
    return {
      data: {
        reportId: stored.reportId,
        ip: stored.ip,
        categories: stored.categories,
        abuseConfidencePercentage: stored.score,
        ignoredCategories: validated.ignored,
        commentTruncated: validated.truncated,
        ...evidenceAnswer(validated, stored.evidenceStored),
      },
      usage: usage!,
    };
  }

  /**
   * POST /bulk-report: every submitted line is charged (all or nothing), valid lines are stored,
   * refused lines come back with their line number, and lines stored without some of their
   * categories (not in the catalogue) or with a shortened comment come back as warnings.
   */
  async bulkReport(caller: Caller, reporterIp: string, csv: string, payer: Payer | undefined) {
    if (Buffer.byteLength(csv, 'utf8') > BULK_REPORT_MAX_BYTES) {
      throw new DomainError('too_large', `The CSV is larger than ${BULK_REPORT_MAX_BYTES} bytes; split it into several requests.`);
    }
    const { data, usage } = await this.reportLines(caller, reporterIp, this.parseCsv(csv), payer);
    return { data: { ...data, errors: data.errors.map(({ field: _field, ...error }) => error) }, usage };
  }

  /**
   * Reports lines parsed from a CSV (this API's or AbuseIPDB's): every line is charged (all or
   * nothing), valid ones stored, refused ones returned with why. Without a payer (the command
   * line's import) nothing is charged, and the usage is undefined.
   */
  async reportLines(caller: Caller, reporterIp: string, lines: CsvLine[], payer: Payer | undefined) {
    if (lines.length > BULK_REPORT_MAX_LINES) {
      throw new DomainError('too_large', `The CSV holds ${lines.length} reports; at most ${BULK_REPORT_MAX_LINES} are taken per request.`);
    }
    const errors: { line: number; input: string; error: string; field?: Refusal['field'] }[] = [];
    const warnings: { line: number; message: string }[] = [];
    const valid: NewReport[] = [];
    const validLines: number[] = [];
    let redactions: Redactions | undefined;
    for (const line of lines) {
      if ('error' in line) {
        errors.push({ line: line.line, input: line.input, error: line.error });
        continue;
      }
      const validated = await this.validateReport(line.ip, line.categories, line.comment, line.evidence);
      if ('field' in validated) {
        errors.push({ line: line.line, input: line.input, error: validated.message, field: validated.field === 'evidence' ? undefined : validated.field });
        continue;
      }
      valid.push(validated.report);
      validLines.push(line.line);
      if (validated.ignored.length) warnings.push({ line: line.line, message: `stored without the unknown category ids ${validated.ignored.join(', ')}` });
      if (validated.truncated) warnings.push({ line: line.line, message: `the comment was shortened to ${COMMENT_MAX} characters` });
      if (validated.evidence) {
        redactions = addRedactions(redactions ?? {}, validated.evidence.redactions);
        if (validated.evidence.truncated) warnings.push({ line: line.line, message: `the evidence was cut to ${EVIDENCE_MAX_BYTES} bytes after redaction` });
      }
    }
    const reporter = this.reporter(caller, reporterIp);
    const charged: { usage?: Usage } = {};
    if (valid.length) {
      const stored = await this.store(valid.map((report) => ({ ...report, reporter })), (client) => this.chargeIn(payer, charged)(lines.length, client));
      stored.forEach((s, i) => {
        if (valid[i]!.evidence && !s.evidenceStored) warnings.push({ line: validLines[i]!, message: `the evidence was not kept: its report's evidence is full (${EVIDENCE_MAX_BYTES} bytes)` });
      });
      warnings.sort((a, b) => a.line - b.line);
    } else if (payer) charged.usage = await this.charge(payer, lines.length);
    return {
      data: { success_count: valid.length, error_count: errors.length, errors, warnings, ...(redactions ? { evidenceRedactions: redactions } : {}) },
      usage: charged.usage as Usage,
    };
  }

  /**
   * The reports about an address of the last `days` days (AbuseIPDB's `maxAgeInDays`): counts,
   * the last one and, when `shown` > 0, the newest of them.
   */
  async window(ip: string, days: number, shown: number) {
    within('maxAgeInDays', days, 1, 365);
    const parsed = this.parse(ip, 'ipAddress');
    return this.repository.since(parsed.text, new Date(this.clock.now().getTime() - days * 86_400_000), shown);
  }

  /** Deletes the caller's reports about an address (its score follows from the others at once). */
  async clearReports(caller: Caller, ip: string): Promise<number> {
    const parsed = this.parse(ip, 'ipAddress');
    return this.repository.clear(caller.accountId, parsed.text, { epochMs: EPOCH_MS, halfLifeMs: HALF_LIFE_MS });
  }

  /**
   * One report per line (the specification separates reports by line feeds), each line parsed
   * by csv-parse on its own: a broken quote costs its own line only, never the lines after it.
   */
  private parseCsv(csv: string): CsvLine[] {
    const out: CsvLine[] = [];
    let seenData = false;
    csv.split('\n').forEach((rawLine, index) => {
      const input = rawLine.replace(/\r$/, '');
      const line = index + 1;
      if (input.trim() === '') return;
      let record: string[];
      try {
        record = (parse(input, { relax_column_count: true }) as string[][])[0] ?? [];
      } catch (err) {
        out.push({ line, input, error: `not valid CSV: ${(err as Error).message.replace(/ at line \d+/, '')}` });
        seenData = true;
        return;
      }
      if (!seenData && /^\s*ip\s*$/i.test(record[0] ?? '')) return; // the optional header line
      seenData = true;
      if (record.length > 4) {
        out.push({ line, input, error: 'expected at most 4 columns: IP, Categories, Comment, Evidence (quote a field that contains commas)' });
        return;
      }
      const [ip = '', categoriesText = '', comment = '', evidenceText] = record;
      // The CSV holds one report per line: line feeds in evidence are written \n.
      const evidence = evidenceText?.replace(/\\n/g, '\n');
      const parts = categoriesText.split(/[|;,]/).map((p) => p.trim()).filter(Boolean);
      if (parts.some((p) => !/^\d{1,3}$/.test(p))) {
        out.push({ line, input, error: `categories must be ids joined with '|' (got '${categoriesText}')` });
        return;
      }
      out.push({ line, input, ip: ip.trim(), categories: parts.map(Number), comment, ...(evidence ? { evidence } : {}) });
    });
    return out;
  }

  /** POST /whitelist: an address a site unblocked, as positive feedback that lowers its score. */
  async feedback(caller: Caller, input: { ipAddress: string; reason?: string }, payer: Payer) {
    const parsed = parseAddress(input.ipAddress.trim());
    if (!parsed) {
      throw new DomainError('invalid_input', `Invalid request: ipAddress '${input.ipAddress}' is not an IPv4 or IPv6 address.`, {
        fields: [{ name: 'ipAddress', message: 'must be an IPv4 or IPv6 address' }],
      });
    }
    const reason = unreportable(parsed);
    if (reason) throw unprocessable(sentence(`The feedback was refused: ${reason}`), [{ name: 'ipAddress', message: reason }], 'address_not_reportable');
    const cleaned = cleanComment(input.reason ?? '');
    const charged: { usage?: Usage } = {};
    const recorded = await this.repository.recordFeedback(
      { ip: parsed.text, accountId: caller.accountId, keyId: caller.keyId, reason: cleaned.slice(0, COMMENT_MAX) },
      this.clock.now(),
      this.chargeIn(payer, charged),
    );
    const aggregate = await this.repository.findOne(parsed.text);
    const data = {
      feedbackId: recorded.feedbackId,
      ip: parsed.text,
      positiveFeedbackCount: recorded.count,
      abuseConfidencePercentage: this.score(aggregate).abuseConfidencePercentage,
      duplicate: recorded.duplicate,
    };
    return { data, usage: charged.usage! };
  }

  /** GET /reports/{ip}. */
  async history(ip: string, page: number, perPage: number) {
    within('page', page, 1, HISTORY_PAGE_MAX);
    within('per_page', perPage, 1, HISTORY_PER_PAGE_MAX);
    const parsed = this.parse(ip);
    const [aggregate, reports, delisting] = await Promise.all([
      this.repository.findOne(parsed.text),
      this.repository.history(parsed.text, perPage, (page - 1) * perPage),
      this.delistings?.decisionFor(parsed.text),
    ]);
    const total = aggregate.reportRows;
    return {
      ip: parsed.text,
      reports: reports.map(toView),
      total,
      page,
      per_page: perPage,
      total_pages: Math.ceil(total / perPage),
      ...(delisting ? { delisting } : {}),
    };
  }

  /**
   * GET /reports/{ip}/evidence: the caller's account's reports about an address that carry
   * evidence, newest first. Never another account's: the account is the caller's, not a
   * parameter.
   */
  async ownEvidence(caller: Caller, ip: string, page: number, perPage: number) {
    within('page', page, 1, HISTORY_PAGE_MAX);
    within('per_page', perPage, 1, EVIDENCE_PER_PAGE_MAX);
    const parsed = this.parse(ip);
    const { total, reports } = await this.repository.evidence(parsed.text, caller.accountId, perPage, (page - 1) * perPage);
    return {
      ip: parsed.text,
      reports: reports.map((r) => ({
        id: r.id,
        categories: r.categories,
        reportedAt: r.reportedAt.toISOString(),
        aggregationCount: r.aggregationCount,
        evidence: r.evidence,
      })),
      total,
      page,
      per_page: perPage,
      total_pages: Math.ceil(total / perPage),
    };
  }

  /** GET /search-public: a full or partial address, a country code, or an ASN. */
  async search(q: string, limit: number) {
    within('limit', limit, 1, SEARCH_LIMIT_MAX);
    within('q', q.length, 1, SEARCH_QUERY_MAX);
    const query = q.trim();
    let found: IpAggregate[] = [];
    const full = parseAddress(query);
    const asn = /^(?:AS)?(\d{1,10})$/i.exec(query);
    if (full) {
      const aggregate = await this.repository.findOne(full.text);
      found = aggregate.totalReports > 0 ? [aggregate] : [];
    } else if (asn && (/^AS/i.test(query) || Number(asn[1]) > 255)) {
      const number = Number(asn[1]);
      if (number > MAX_ASN) {
        throw new DomainError('invalid_input', `Invalid request: ${query} is not an AS number (they run from 0 to ${MAX_ASN}).`, {
          fields: [{ name: 'q', message: `an AS number must be at most ${MAX_ASN}` }],
        });
      }
      // The geolocation data holds 32-bit AS numbers below 2^31 only (the rest are private use).
      found = number <= MAX_STORED_ASN ? await this.repository.searchAsn(number, limit) : [];
    } else if (/^[A-Za-z]{2}$/.test(query)) {
      found = await this.repository.searchCountry(query.toUpperCase(), limit);
    } else if (/^[0-9a-fA-F.:]+$/.test(query)) {
      found = await this.repository.searchPrefix(query.toLowerCase(), limit);
    }
    return {
      query: q,
      results: found.map((a) => ({
        ip: a.ip,
        abuseConfidencePercentage: this.score(a).abuseConfidencePercentage,
        totalReports: a.totalReports,
        countryCode: this.place(a).countryCode,
      })),
    };
  }
}
