import { parse } from 'csv-parse/sync';
import countries from 'i18n-iso-countries';
import type { BlacklistService, ListParams } from '../blacklist/service.js';
import type { Clock } from '../clock.js';
import { DomainError, sentence } from '../errors.js';
import type { Caller } from '../keys/service.js';
import { addressToBigInt, bigIntToAddress, isPublic, parseAddress, parseNetwork } from '../address.js';
import type { Metered, Payer } from '../keys/quota.js';
import { categoryIds, NETWORK_ADDRESSES_MAX, type CsvLine, type ReputationService } from '../reputation/service.js';

/**
 * AbuseIPDB's API v2 over this server's services: the same checks, reports, list and quotas,
 * in AbuseIPDB's parameters and shapes. Its categories 1-23 are this server's 1-23 (same names);
 * this server's ids above 23 are left out of what AbuseIPDB clients are shown.
 */
export const ABUSEIPDB_CATEGORY_MAX = 23;
/** Reports shown by a verbose check, as GET /api/v2/check?include_reports=true shows them. */
const REPORTS_SHOWN = 25;

const abuseipdbCategories = (ids: number[]) => ids.filter((id) => id >= 1 && id <= ABUSEIPDB_CATEGORY_MAX);
/** AbuseIPDB writes times with an offset: `2026-11-20T13:58:41+00:00`. */
const offsetTime = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, '+00:00');
const country = (code: string | null | undefined) => (code && code !== 'ZZ' ? code : null);
const countryName = (code: string | null) => (code ? (countries.getName(code, 'en') ?? null) : null);

/** How AbuseIPDB names an address space. */
const SPACES: Record<string, string> = {
  unicast: 'Internet',
  private: 'Private',
  loopback: 'Loopback',
  linkLocal: 'Link Local',
  multicast: 'Multicast',
  broadcast: 'Broadcast',
  carrierGradeNat: 'Shared Address Space',
  uniqueLocal: 'Unique Local',
  reserved: 'Reserved',
  unspecified: 'Unspecified',
};

function address(text: string, name: string) {
  const parsed = parseAddress(text.trim());
  if (parsed) return parsed;
  const message = 'must be a valid IPv4 or IPv6 address (e.g. 8.8.8.8 or 2001:4860:4860::8888)';
  throw new DomainError('invalid_input', sentence(`The ${name} parameter ${message}`), { code: 'invalid_request', fields: [{ name, message }] });
}

/** AbuseIPDB's bulk-report CSV: a header line, then `IP,Categories,ReportDate,Comment`, parsed a line at a time. */
function bulkLines(csv: string): CsvLine[] {
  const lines: CsvLine[] = [];
  csv.split('\n').forEach((raw, index) => {
    const input = raw.replace(/\r$/, '').replace(/^\uFEFF/, '');
    const line = index + 1;
    if (input.trim() === '' || (index === 0 && /^\s*"?ip"?\s*(,|$)/i.test(input))) return; // the header line
    let record: string[];
    try {
      record = (parse(input, { relax_column_count: true }) as string[][])[0] ?? [];
    } catch {
      lines.push({ line, input, error: 'Invalid Row' });
      return;
    }
    const [ip = '', categoriesText = '', , comment = ''] = record;
    const ids = categoryIds(categoriesText);
    if (!ids.length || ids.some((id) => id < 1 || id > ABUSEIPDB_CATEGORY_MAX)) {
      lines.push({ line, input: ip.trim(), error: 'Invalid Category' });
      return;
    }
    lines.push({ line, input: ip.trim(), ip: ip.trim(), categories: ids, comment });
  });
  return lines;
}

export class AbuseIpdbService {
  constructor(
    private readonly reputation: ReputationService,
    private readonly blacklist: BlacklistService,
    private readonly clock: Clock,
  ) {}

  /**
   * GET /check. Each answer is AbuseIPDB's body (`{ data }`) with what it cost (`usage`), from
   * which the edge sets the rate-limit headers.
   */
  async check(ipAddress: string, maxAgeInDays: number, verbose: boolean, payer: Payer) {
    const parsed = address(ipAddress, 'ipAddress');
    const [{ data: record, usage }, window] = await Promise.all([
      this.reputation.check(parsed.text, { verbose: false, includeReports: false }, payer),
      this.reputation.window(parsed.text, maxAgeInDays, verbose ? REPORTS_SHOWN : 0),
    ]);
    const countryCode = country(record.countryCode);
    const body = {
      data: {
        ipAddress: parsed.text,
        isPublic: isPublic(parsed),
        ipVersion: parsed.version,
        isWhitelisted: record.isWhitelisted,
        abuseConfidenceScore: record.abuseConfidencePercentage,
        countryCode,
        ...(verbose ? { countryName: countryName(countryCode) } : {}),
        usageType: null,
        isp: record.isp || null,
        domain: null,
        hostnames: [],
        isTor: false,
        totalReports: window.totalReports,
        numDistinctUsers: window.distinctReporters,
        lastReportedAt: window.lastReportedAt && offsetTime(window.lastReportedAt),
        ...(verbose
          ? {
              reports: window.reports.map((r) => ({
                reportedAt: offsetTime(r.reportedAt),
                comment: r.comment,
                categories: abuseipdbCategories(r.categories),
                reporterId: 0 as const,
                reporterCountryCode: country(r.reporterCountry),
                reporterCountryName: countryName(country(r.reporterCountry)),
              })),
            }
          : {}),
      },
    };
    return { data: body, usage };
  }

  /** POST /report. */
  async report(caller: Caller, reporterIp: string, body: { ip: string; categories: unknown; comment?: string }, payer: Payer) {
    const ids = categoryIds(body.categories);
    if (!ids.length || ids.some((id) => id < 1 || id > ABUSEIPDB_CATEGORY_MAX)) {
      const message = `must be AbuseIPDB category ids from 1 to ${ABUSEIPDB_CATEGORY_MAX}, separated by commas`;
      throw new DomainError('invalid_input', sentence(`The categories parameter ${message}`), { code: 'invalid_request', fields: [{ name: 'categories', message }] });
    }
    const { data: stored, usage } = await this.reputation.report(caller, reporterIp, { ip: body.ip, categories: ids, comment: body.comment }, payer);
    return { data: { data: { ipAddress: stored.ip, abuseConfidenceScore: stored.abuseConfidencePercentage } }, usage };
  }

  /** POST /bulk-report: every line charged, valid ones stored, the others listed by row. */
  async bulkReport(caller: Caller, reporterIp: string, csv: string, payer: Payer) {
    const { data: answer, usage } = await this.reputation.reportLines(caller, reporterIp, bulkLines(csv), payer);
    const body = {
      data: {
        savedReports: answer.success_count,
        invalidReports: answer.errors.map((e) => ({
          error: e.field === 'ip' ? 'Invalid IP' : e.field === 'categories' ? 'Invalid Category' : e.error,
          input: e.field ? (parseAddress(e.input.trim())?.text ?? e.input) : e.input,
          rowNumber: e.line,
        })),
      },
    };
    return { data: body, usage };
  }

  /** GET /check-block: the rule (and charge) of GET /api/v2/check-block, in AbuseIPDB's shape. */
  async checkBlock(network: string, maxAgeInDays: number, payer: Payer) {
    const since = new Date(this.clock.now().getTime() - maxAgeInDays * 86_400_000);
    const { data: block, usage } = await this.reputation.checkBlock(network, NETWORK_ADDRESSES_MAX, payer, since, { summary: false });
    const parsed = parseNetwork(block.network, { prefixRequired: true })!;
    const bits = parsed.version === 4 ? 32 : 128;
    const size = 2n ** BigInt(bits - parsed.bits);
    // IPv4 networks up to /30 keep their first (network) and last (broadcast) addresses apart.
    const apart = parsed.version === 4 && parsed.bits <= 30;
    const hosts = apart ? size - 2n : size;
    const body = {
      data: {
        networkAddress: block.networkAddress,
        netmask: block.netmask,
        minAddress: apart ? bigIntToAddress(addressToBigInt(block.firstAddress) + 1n, 4) : block.firstAddress,
        maxAddress: apart ? bigIntToAddress(addressToBigInt(block.lastAddress) - 1n, 4) : block.lastAddress,
        numPossibleHosts: hosts <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(hosts) : hosts.toString(),
        addressSpaceDesc: SPACES[parsed.range] ?? parsed.range,
        reportedAddress: block.reported.map((r) => ({
          ipAddress: r.ip,
          numReports: r.totalReports,
          mostRecentReport: offsetTime(new Date(r.lastReportedAt)),
          abuseConfidenceScore: r.abuseConfidencePercentage,
          countryCode: country(r.countryCode),
        })),
      },
    };
    return { data: body, usage };
  }

  /** DELETE /clear-address. */
  async clearAddress(caller: Caller, ipAddress: string) {
    const parsed = address(ipAddress, 'ipAddress');
    return { data: { numReportsDeleted: await this.reputation.clearReports(caller, parsed.text) } };
  }

  /** The parameters of GET /api/v2/blacklist that AbuseIPDB's blacklist means. */
  listParams(query: { confidenceMinimum?: number; limit?: number; onlyCountries?: string; exceptCountries?: string; ipVersion?: 4 | 6 }, plaintext: boolean): ListParams {
    return {
      format: plaintext ? 'txt' : 'json',
      confidence: query.confidenceMinimum ?? 100,
      limit: query.limit ?? 10_000,
      onlyCountries: query.onlyCountries,
      exceptCountries: query.exceptCountries,
      ipVersion: query.ipVersion,
    };
  }
}
