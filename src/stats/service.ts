import type { BlacklistSnapshots } from '../blacklist/repository.js';
import { CUSTOM_ID_MAX, type CategoryService } from '../categories/service.js';
import type { Clock } from '../clock.js';
import type { StatsRepository } from './repository.js';
import { sentence, unprocessable, within } from '../errors.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
export const ATTACK_MAP_TTL_MS = 30 * 60_000;
const TOP_COUNTRIES = 10;
const MAP_COUNTRIES = 50;
const MAP_CONNECTIONS = 30;

const floorHour = (t: number) => Math.floor(t / HOUR) * HOUR;
const floorDay = (t: number) => Math.floor(t / DAY) * DAY;
const countryNames = new Intl.DisplayNames(['en'], { type: 'region' });

/** The English name of a country code (the code itself when it has none). */
export function countryName(code: string): string {
  try {
    return countryNames.of(code) ?? code;
  } catch {
    return code;
  }
}

export type Period = '24h' | '7d' | '30d';

/**
 * Statistics read from the rollups that reports maintain (activity per hour, per day and all
 * time per category, totals per country, connections per hour) and from the blacklist snapshot: never from a
 * scan of the reports.
 */
export class StatsService {
  private attackMap: { at: number; data: Awaited<ReturnType<StatsService['buildAttackMap']>> } | undefined;

  constructor(
    private readonly stats: StatsRepository,
    private readonly categories: CategoryService,
    private readonly snapshots: BlacklistSnapshots,
    private readonly clock: Clock,
  ) {}

  /** Reports per category, with their names. */
  private async categoryCounts(from: Date | null, limit: number | null, only: number | null) {
    const [rows, names] = await Promise.all([this.stats.categoryCounts(from, limit, only), this.categories.list()]);
    const nameOf = new Map(names.map((c) => [c.id, c.name]));
    return rows.map((r) => ({ id: r.category, name: nameOf.get(r.category) ?? String(r.category), count: r.count }));
  }

  /** GET /stats-public. */
  async publicStats() {
    const now = this.clock.now().getTime();
    const [activity, categoryBreakdown, countries] = await Promise.all([
      this.stats.activity([new Date(floorHour(now - DAY)), new Date(floorHour(now - 7 * DAY))]),
      this.categoryCounts(null, null, null),
      this.stats.topCountriesByAddresses(TOP_COUNTRIES),
    ]);
    const { all, since: [day, week] } = activity;
    return {
      totalIPs: all.new_ips,
      totalReports: all.reports,
      last24h: { newIPs: day!.new_ips, newReports: day!.reports },
      last7d: { newIPs: week!.new_ips, newReports: week!.reports },
      categoryBreakdown,
      topCountries: countries,
    };
  }

  /** GET /statistics. */
  async statistics() {
    const today = new Date(floorDay(this.clock.now().getTime()));
    const [{ all, since: [day] }, keys] = await Promise.all([this.stats.activity([today]), this.stats.activeKeys()]);
    return {
      total_ips: all.new_ips,
      total_reports: all.reports,
      reports_today: day!.reports,
      active_api_keys: keys,
    };
  }

  /**
   * GET /trends: every bucket of the period, oldest first, zeros included. A `category` must be
   * in the enabled catalogue (422 otherwise, as the blacklist's filter), so that a filter by an
   * id that is off or unknown is never answered with an empty series as if nothing happened.
   */
  async trends(period: Period, category: number | undefined) {
    if (category !== undefined) {
      within('category', category, 1, CUSTOM_ID_MAX);
      if (!(await this.categories.severities()).has(category)) {
        const message = `unknown threat-category id ${category} (see GET /categories)`;
        throw unprocessable(sentence(`Invalid category filter: ${message}`), [{ name: 'category', message }], 'unknown_category');
      }
    }
    const now = this.clock.now().getTime();
    const hourly = period === '24h';
    const step = hourly ? HOUR : DAY;
    const buckets = hourly ? 24 : period === '7d' ? 7 : 30;
    const last = hourly ? floorHour(now) : floorDay(now);
    const first = last - (buckets - 1) * step;
    const [rows, topCategories] = await Promise.all([
      this.stats.buckets(new Date(first), hourly ? 'hour' : 'day', category ?? null),
      this.categoryCounts(new Date(first), 5, category ?? null),
    ]);
    const byBucket = new Map(rows.map((r) => [r.bucket.getTime(), r]));
    const timeSeries = Array.from({ length: buckets }, (_, i) => {
      const t = first + i * step;
      const row = byBucket.get(t);
      const iso = new Date(t).toISOString();
      return {
        date: hourly ? iso.replace('.000Z', 'Z') : iso.slice(0, 10),
        reports: row?.reports ?? 0,
        newIPs: row?.new_ips ?? 0,
      };
    });
    return { period, timeSeries, topCategories };
  }

  /** GET /attack-map-data: built at most every 30 minutes per process, served from that cache. */
  async attackMapData() {
    const now = this.clock.now().getTime();
    if (!this.attackMap || now - this.attackMap.at >= ATTACK_MAP_TTL_MS || now < this.attackMap.at) {
      this.attackMap = { at: now, data: await this.buildAttackMap(now) };
    }
    return this.attackMap.data;
  }

  private async buildAttackMap(now: number) {
    const [countries, threat, { all, since: [today] }, connections] = await Promise.all([
      this.stats.topCountriesByReports(MAP_COUNTRIES),
      this.snapshots.countryThreat(),
      this.stats.activity([new Date(floorDay(now))]),
      this.stats.connections(new Date(floorHour(now - DAY)), MAP_CONNECTIONS),
    ]);
    const country_data: Record<string, { count: number; avgThreat: number }> = {};
    const country_info: Record<string, { name: string }> = {};
    for (const c of countries) {
      country_data[c.code] = { count: c.reports, avgThreat: threat[c.code]?.avgScore ?? 0 };
      country_info[c.code] = { name: countryName(c.code) };
    }
    const recent_attacks = connections.map((c, i) => {
      country_info[c.source] ??= { name: countryName(c.source) };
      country_info[c.target] ??= { name: countryName(c.target) };
      return {
        id: i + 1,
        source_country: c.source,
        target_country: c.target,
        confidence_score: Math.min(100, Math.max(0, c.score)),
        attack_count: c.reports,
      };
    });
    return {
      country_data,
      country_info,
      total_reports: all.reports,
      max_reports: countries[0]?.reports ?? 0,
      recent_attacks,
      today_logs: today!.reports,
    };
  }
}
