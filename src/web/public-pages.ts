import type { Request, Response } from 'express';
import ipaddr from 'ipaddr.js';
import { setRateLimitHeaders, sourceIp } from '../http/metering.js';
import { PUBLIC_DAILY_LIMIT } from '../roles.js';
import { countryName } from '../stats/service.js';
import { pageContext, type WebDeps } from './context.js';

/**
 * The public pages read the same services as the public endpoints and are charged the same way,
 * against the visitor's per-IP public allowance (100 a day): the home page shows the data of
 * /stats-public and /attack-map-data and costs 2, as calling both would; a lookup costs 1, as
 * /check-public does. The trend charts are the unfiltered series behind the totals of
 * /stats-public (its 24-hour and 7-day counts, drawn over time); /trends itself, with its
 * category filter, stays a Professional feature of the API. A visitor past the allowance gets
 * the page without data, 429 and Retry-After, as the API would answer.
 */
export const HOME_PAGE_COST = 2;
export const LOOKUP_COST = 1;

/** Charges `units` of the visitor's public allowance; past it, answers 429 with a page and returns false. */
export async function charge(deps: WebDeps, req: Request, res: Response, units: number): Promise<boolean> {
  const result = await deps.meter.chargeSubject({ sourceIp: sourceIp(req) }, 'public', units);
  setRateLimitHeaders(res, result, deps.clock);
  if (result.allowed) return true;
  const retryAfter = Math.max(1, Math.ceil((result.resetAt.getTime() - deps.clock.now().getTime()) / 1000));
  res.setHeader('Retry-After', String(retryAfter));
  deps.pages.send(
    res,
    'message',
    {
      ...pageContext(deps, res),
      title: 'Daily allowance used up',
      text: `Visitors without a key may make ${PUBLIC_DAILY_LIMIT} requests a day from one address, pages included. It starts again at 00:00 UTC; with a free account and key the API allows far more.`,
    },
    429,
  );
  return false;
}

/** ipaddr.js takes shorthand such as `10.1`; the API takes dotted quads and plain IPv6 only. */
function plainIp(value: string): boolean {
  return value.includes(':') ? ipaddr.IPv6.isValid(value) : ipaddr.IPv4.isValidFourPartDecimal(value);
}

export function publicPages(deps: WebDeps) {
  return {
    async home(req: Request, res: Response) {
      if (!(await charge(deps, req, res, HOME_PAGE_COST))) return;
      // The chart code (d3, the world-atlas map projected once) loads at the first home page,
      // not with every process that imports the pages (about 190 ms).
      const [{ attackMapSvg, trendChartSvg }, stats, map, day, week, month] = await Promise.all([
        import('./charts.js'),
        deps.stats.publicStats(),
        deps.stats.attackMapData(),
        deps.stats.trends('24h', undefined),
        deps.stats.trends('7d', undefined),
        deps.stats.trends('30d', undefined),
      ]);
      const trends = [
        { id: 'trend-24h', label: 'Last 24 hours', series: day.timeSeries },
        { id: 'trend-7d', label: 'Last 7 days', series: week.timeSeries },
        { id: 'trend-30d', label: 'Last 30 days', series: month.timeSeries },
      ].map((t) => ({ ...t, svg: trendChartSvg(t.id, `Reports and new addresses, ${t.label.toLowerCase()}`, t.series) }));
      const maxCategory = Math.max(1, ...stats.categoryBreakdown.map((c) => c.count));
      const maxCountry = Math.max(1, ...stats.topCountries.map((c) => c.count));
      deps.pages.send(res, 'home', {
        ...pageContext(deps, res),
        title: 'Statistics',
        stats,
        mapSvg: attackMapSvg(map),
        map,
        trends,
        maxCategory,
        countries: stats.topCountries.map((c) => ({ ...c, name: countryName(c.code) })),
        maxCountry,
        signup: deps.accounts.signupMode,
      });
    },

    async lookup(req: Request, res: Response) {
      const raw = req.query.ip;
      const ip = typeof raw === 'string' ? raw.trim() : '';
      if (ip.length > 45 || !plainIp(ip)) {
        deps.pages.send(res, 'lookup', { ...pageContext(deps, res), title: 'Look up an address', ip: ip.slice(0, 45), error: 'Enter one IPv4 or IPv6 address, such as 203.0.113.7 or 2001:db8::1.' }, 400);
        return;
      }
      if (!(await charge(deps, req, res, LOOKUP_COST))) return;
      // Charged above; the lookup only reads the allowance beside it (a peek).
      const { data: record } = await deps.reputation.checkPublic(ip, false, { subject: { sourceIp: sourceIp(req) }, counter: 'public', peek: true });
      const categories = new Map((await deps.categories.list()).map((c) => [c.id, c.name]));
      deps.pages.send(res, 'lookup', {
        ...pageContext(deps, res),
        title: `Reputation of ${ip}`,
        ip,
        record,
        categoryNames: record.categories.map((id: number) => categories.get(id) ?? String(id)),
        country: record.countryCode ? countryName(record.countryCode) : '',
      });
    },
  };
}
