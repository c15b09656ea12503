import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { CATALOGUE_TTL_MS, CategoryService } from '../../src/categories/service.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** Statistics agree with the reports the test makes (its own fresh database). */
let s: TestServer;
let pro: string;
const DE = '5.9.10.10'; // reporter in Germany
const GB = '81.2.69.142'; // reporter in Great Britain
const US = '4.2.2.2'; // reporter in the United States

const api = (path: string, o: Parameters<typeof call>[2] & { from?: string } = {}) =>
  call(s.origin, `/api/v2${path}`, { ...o, headers: { ...o.headers, ...(o.from ? { 'X-Forwarded-For': o.from } : {}) } });

beforeAll(async () => {
  s = await startTestServer({ config: { trustProxy: ['loopback'] } });
  pro = (await s.createKey('professional')).key;
  // Two days ago, 10:30 UTC: 2 US addresses reported from Germany.
  s.clock.set('2026-06-13T10:30:00Z');
  const a = (await s.createKey('free')).key;
  await api('/report', { key: a, json: { ip: '8.8.8.1', categories: [14] }, from: DE });
  await api('/report', { key: a, json: { ip: '8.8.8.2', categories: [14, 18] }, from: DE });
  // Today, 09:10 UTC: one of them again and a Russian address, from Great Britain; a US
  // address from the US (same country: no connection).
  s.clock.set('2026-06-15T09:10:00Z');
  const b = (await s.createKey('free')).key;
  await api('/report', { key: b, json: { ip: '8.8.8.1', categories: [18] }, from: GB });
  await api('/report', { key: b, json: { ip: '77.88.8.8', categories: [22] }, from: GB });
  await api('/report', { key: b, json: { ip: '9.9.9.9', categories: [4] }, from: US });
  s.clock.set('2026-06-15T11:45:00Z');
  await blacklistSnapshots(s.pool, s.clock).regenerate();
});
afterAll(async () => {
  await s?.close();
});

describe('GET /stats-public', () => {
  it('counts addresses, reports, windows, categories and countries', async () => {
    const res = await api('/stats-public');
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual({
      totalIPs: 4,
      totalReports: 5,
      last24h: { newIPs: 2, newReports: 3 },
      last7d: { newIPs: 4, newReports: 5 },
      categoryBreakdown: [
        { id: 14, name: 'Port Scan', count: 2 },
        { id: 18, name: 'Brute-Force', count: 2 },
        { id: 4, name: 'DDoS Attack', count: 1 },
        { id: 22, name: 'SSH', count: 1 },
      ],
      topCountries: [
        { code: 'US', count: 3 },
        { code: 'RU', count: 1 },
      ],
    });
  });
});

describe('GET /statistics', () => {
  it('gives the service counters', async () => {
    const res = await api('/statistics');
    expect(res.body.data).toEqual({ total_ips: 4, total_reports: 5, reports_today: 3, active_api_keys: 3 });
  });

  it('accepts the earlier period parameter', async () => {
    expect((await api('/statistics?period=week')).status).toBe(200);
    expect((await api('/statistics?period=year')).status).toBe(400);
  });
});

describe('GET /trends', () => {
  it('has every hourly bucket of the last 24 hours, zeros included', async () => {
    const res = await api('/trends?period=24h', { key: pro });
    expect(res.status).toBe(200);
    const series = res.body.data.timeSeries;
    expect(series).toHaveLength(24);
    expect(series[0].date).toBe('2026-06-14T12:00:00Z');
    expect(series[23].date).toBe('2026-06-15T11:00:00Z');
    expect(series.find((p: any) => p.date === '2026-06-15T09:00:00Z')).toEqual({ date: '2026-06-15T09:00:00Z', reports: 3, newIPs: 2 });
    expect(series.reduce((sum: number, p: any) => sum + p.reports, 0)).toBe(3);
  });

  it('has daily buckets for 7d and 30d, and filters by category', async () => {
    const week = await api('/trends', { key: pro });
    expect(week.body.data.period).toBe('7d');
    expect(week.body.data.timeSeries.map((p: any) => p.date)).toEqual([
      '2026-06-09', '2026-06-10', '2026-06-11', '2026-06-12', '2026-06-13', '2026-06-14', '2026-06-15',
    ]);
    expect(week.body.data.timeSeries[4]).toEqual({ date: '2026-06-13', reports: 2, newIPs: 2 });
    expect(week.body.data.topCategories[0]).toEqual({ id: 14, name: 'Port Scan', count: 2 });
    const month = await api('/trends?period=30d&category=18', { key: pro });
    expect(month.body.data.timeSeries).toHaveLength(30);
    expect(month.body.data.timeSeries.reduce((sum: number, p: any) => sum + p.reports, 0)).toBe(2);
    expect(month.body.data.topCategories).toEqual([{ id: 18, name: 'Brute-Force', count: 2 }]);
    expect((await api('/trends?period=1y', { key: pro })).status).toBe(400);
  });
});

describe('GET /attack-map-data', () => {
  it('maps countries and cross-country connections of the last 24 hours, from a 30-minute cache', async () => {
    const res = await api('/attack-map-data');
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data.country_data.US).toEqual({ count: 4, avgThreat: expect.any(Number) });
    expect(data.country_data.RU).toEqual({ count: 1, avgThreat: expect.any(Number) });
    expect(data.country_info.US).toEqual({ name: 'United States' });
    expect(data.country_info.GB).toEqual({ name: 'United Kingdom' });
    expect(data).toMatchObject({ total_reports: 5, max_reports: 4, today_logs: 3 });
    // Germany's reports are two days old; US -> US is the same country: neither appears.
    expect(data.recent_attacks).toEqual([
      { id: 1, source_country: 'RU', target_country: 'GB', confidence_score: expect.any(Number), attack_count: 1 },
      { id: 2, source_country: 'US', target_country: 'GB', confidence_score: expect.any(Number), attack_count: 1 },
    ]);

    const { key } = await s.createKey('free');
    await api('/report', { key, json: { ip: '77.88.8.1', categories: [4] }, from: DE });
    s.clock.advance(29 * 60_000);
    const cached = await api('/attack-map-data');
    expect(cached.body.data).toEqual(data);
    s.clock.advance(60_000);
    const fresh = await api('/attack-map-data');
    expect(fresh.body.data.recent_attacks).toContainEqual(
      expect.objectContaining({ source_country: 'RU', target_country: 'DE', attack_count: 1 }),
    );
    expect(fresh.body.data.total_reports).toBe(6);
  });
});

// Last: it reports more, which the counts above do not expect.
describe('GET /trends by catalogue id', () => {
  it('filters by any id of the enabled catalogue, web and operator ids included, and refuses others with 422', async () => {
    const categories = new CategoryService(s.orm.em, s.clock);
    // Off by default: a web id is not a filter yet, and says so instead of an empty series.
    const off = await api('/trends?period=24h&category=55', { key: pro });
    expect(off.status).toBe(422);
    expect(off.body).toMatchObject({ code: 'unknown_category', meta: { errors: [{ location: 'query', name: 'category' }] } });
    await categories.setCatalogue('web', true);
    await categories.upsertCustom({ id: 4242, name: 'Card Testing', description: 'Stolen cards tried at a checkout', severity: 6 });
    s.clock.advance(CATALOGUE_TTL_MS);
    const reporter = (await s.createKey('free')).key;
    expect((await api('/report', { key: reporter, json: { ip: '8.8.7.1', categories: [55, 4242] }, from: DE })).status).toBe(200);
    for (const id of [55, 4242]) {
      const res = await api(`/trends?period=24h&category=${id}`, { key: pro });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.data.timeSeries.reduce((sum: number, p: any) => sum + p.reports, 0)).toBe(1);
      expect(res.body.data.topCategories).toEqual([expect.objectContaining({ id, count: 1 })]);
    }
    // Ids the catalogue does not hold: 422; outside the catalogue's id range: 400.
    expect((await api('/trends?category=999', { key: pro })).status).toBe(422);
    expect((await api('/trends?category=10001', { key: pro })).status).toBe(400);
    expect((await api('/trends?category=0', { key: pro })).status).toBe(400);
  });
});
