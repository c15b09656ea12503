import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { geoCentroid, geoEqualEarth, geoPath } from 'd3-geo';
import { scaleLinear, scaleSqrt, scaleUtc } from 'd3-scale';
import { area, curveMonotoneX, line } from 'd3-shape';
import countries from 'i18n-iso-countries';
import { feature } from 'topojson-client';
import type { Feature, FeatureCollection, Geometry } from 'geojson';
import type { Topology, GeometryCollection } from 'topojson-specification';

/**
 * The home page's map and charts, drawn on the server as SVG with d3 (d3-geo with the
 * world-atlas topology for the map, d3-scale and d3-shape for the charts): they need no script
 * in the browser, load nothing from elsewhere, and each carries a title, a description and a
 * table of its numbers for readers who cannot see it.
 */
const require = createRequire(import.meta.url);
const MAP_WIDTH = 960;
const MAP_HEIGHT = 470;

const escapeXml = (text: string) => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const round = (n: number) => Math.round(n * 10) / 10;

interface Country {
  code: string | undefined;
  name: string;
  path: string;
  centroid: [number, number] | undefined;
}

/** The world, projected once per process (Equal Earth: areas stay comparable). */
const world: Country[] = (() => {
  const topology = JSON.parse(readFileSync(require.resolve('world-atlas/countries-110m.json'), 'utf8')) as Topology<{
    countries: GeometryCollection<{ name: string }>;
  }>;
  const shapes = feature(topology, topology.objects.countries) as FeatureCollection<Geometry, { name: string }>;
  const projection = geoEqualEarth().fitSize([MAP_WIDTH, MAP_HEIGHT], shapes);
  // One decimal is a tenth of a pixel at the drawn size: a smaller page for the same picture.
  const path = geoPath(projection).digits(1);
  return shapes.features.map((f: Feature<Geometry, { name: string }>) => {
    const code = f.id === undefined ? undefined : countries.numericToAlpha2(String(f.id).padStart(3, '0'));
    const centroid = projection(geoCentroid(f)) ?? undefined;
    return { code, name: f.properties.name, path: path(f) ?? '', centroid: centroid as [number, number] | undefined };
  });
})();

const byCode = new Map(world.filter((c) => c.code).map((c) => [c.code!, c]));

export interface MapData {
  country_data: Record<string, { count: number; avgThreat: number }>;
  recent_attacks: { source_country: string; target_country: string; attack_count: number }[];
}

/** Countries shaded by reports, and the day's cross-country connections as arcs. */
export function attackMapSvg(data: MapData): string {
  const max = Math.max(1, ...Object.values(data.country_data).map((c) => c.count));
  const shade = scaleSqrt<string>().domain([0, max]).range(['#fde0d2', '#a50f15']);
  const shapes = world
    .map((c) => {
      const entry = c.code ? data.country_data[c.code] : undefined;
      const fill = entry ? shade(entry.count) : '#e8eaed';
      const label = `${c.name}: ${entry ? `${entry.count} reports, average threat ${round(entry.avgThreat)}` : 'no reports'}`;
      return `<path d="${c.path}" fill="${fill}" stroke="#fff" stroke-width="0.5"${entry ? ' class="reported"' : ''}><title>${escapeXml(label)}</title></path>`;
    })
    .join('');
  const widest = Math.max(1, ...data.recent_attacks.map((a) => a.attack_count));
  const arcs = data.recent_attacks
    .map((a) => {
      const from = byCode.get(a.source_country)?.centroid;
      const to = byCode.get(a.target_country)?.centroid;
      if (!from || !to) return '';
      const [mx, my] = [(from[0] + to[0]) / 2, (from[1] + to[1]) / 2 - Math.hypot(to[0] - from[0], to[1] - from[1]) / 4];
      const width = round(1 + (3 * a.attack_count) / widest);
      return `<path d="M${round(from[0])},${round(from[1])}Q${round(mx)},${round(my)} ${round(to[0])},${round(to[1])}" fill="none" stroke="#1a5fb4" stroke-opacity="0.6" stroke-width="${width}"><title>${escapeXml(`${a.source_country} → ${a.target_country}: ${a.attack_count}`)}</title></path>`;
    })
    .join('');
  return (
    `<svg class="map" viewBox="0 0 ${MAP_WIDTH} ${MAP_HEIGHT}" role="img" aria-labelledby="map-title map-desc" xmlns="http://www.w3.org/2000/svg">` +
    `<title id="map-title">Reports by country</title><desc id="map-desc">Countries are darker the more reports their addresses received; arcs join the countries of the day's cross-country attacks.</desc>` +
    `<g>${shapes}</g><g>${arcs}</g></svg>`
  );
}

export interface SeriesPoint {
  date: string;
  reports: number;
  newIPs: number;
}

const CHART = { width: 640, height: 220, left: 48, right: 12, top: 12, bottom: 28 };

/** A line chart of reports (filled) and newly reported addresses over a period. */
export function trendChartSvg(id: string, title: string, points: SeriesPoint[]): string {
  const x = scaleUtc()
    .domain(points.length ? [new Date(points[0]!.date), new Date(points[points.length - 1]!.date)] : [new Date(0), new Date(1)])
    .range([CHART.left, CHART.width - CHART.right]);
  const max = Math.max(1, ...points.map((p) => Math.max(p.reports, p.newIPs)));
  const y = scaleLinear().domain([0, max]).nice(4).range([CHART.height - CHART.bottom, CHART.top]);
  const at = (p: SeriesPoint) => x(new Date(p.date));
  const reportsArea = area<SeriesPoint>().x(at).y0(y(0)).y1((p) => y(p.reports)).curve(curveMonotoneX)(points) ?? '';
  const reportsLine = line<SeriesPoint>().x(at).y((p) => y(p.reports)).curve(curveMonotoneX)(points) ?? '';
  const ipsLine = line<SeriesPoint>().x(at).y((p) => y(p.newIPs)).curve(curveMonotoneX)(points) ?? '';
  const yTicks = y
    .ticks(4)
    .map((t) => `<g><line x1="${CHART.left}" x2="${CHART.width - CHART.right}" y1="${round(y(t))}" y2="${round(y(t))}" stroke="#d0d4d9"/><text x="${CHART.left - 6}" y="${round(y(t)) + 4}" text-anchor="end">${t}</text></g>`)
    .join('');
  const format = (d: Date) => (points.length > 0 && points.length <= 25 && /T/.test(points[0]!.date) ? `${String(d.getUTCHours()).padStart(2, '0')}:00` : d.toISOString().slice(5, 10));
  const xTicks = x
    .ticks(6)
    .map((t) => `<text x="${round(x(t))}" y="${CHART.height - 8}" text-anchor="middle">${format(t)}</text>`)
    .join('');
  return (
    `<svg class="chart" id="${id}" viewBox="0 0 ${CHART.width} ${CHART.height}" role="img" aria-labelledby="${id}-title" xmlns="http://www.w3.org/2000/svg">` +
    `<title id="${id}-title">${escapeXml(title)}</title>` +
    `<g class="axis" font-size="11" fill="#4a5057">${yTicks}${xTicks}</g>` +
    `<path d="${reportsArea}" fill="#a50f15" fill-opacity="0.15"/>` +
    `<path d="${reportsLine}" fill="none" stroke="#a50f15" stroke-width="2"/>` +
    `<path d="${ipsLine}" fill="none" stroke="#1a5fb4" stroke-width="2" stroke-dasharray="5 3"/>` +
    `</svg>`
  );
}
