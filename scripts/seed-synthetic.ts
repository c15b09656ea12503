/**
 * Loads a realistic synthetic data set straight into PostgreSQL with COPY, together with every
 * aggregate and rollup the app reads, then builds the blacklist snapshot.
 *
 *   npm run seed:synthetic -- --ips 1000000 --reports 10000000 [--reporters 3000] [--seed 1] [--reset]
 *
 * DATABASE_URL names the database (migrated first); the embedded database is refused, as it takes
 * one query at a time and no parallel COPY streams. The reputation tables must be empty, or
 * `--reset` empties them. One pass generates, per address, a heavy-tailed number of reports
 * (Pareto), from a skewed set of reporters of every role, with categories drawn from attack
 * profiles that co-occur as real ones do, spread over 90 days; the per-IP aggregates and the
 * rollups are computed in the same pass, so nothing has to scan the reports afterwards.
 */
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { from as copyFrom } from 'pg-copy-streams';
import { blacklistSnapshots } from '../src/blacklist/repository.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import { connectDatabase } from '../src/db/connect.js';
import { openGeoIp } from '../src/geo/geoip.js';
import { consoleProgress } from '../src/progress.js';
import { decayContribution } from '../src/reputation/score.js';
import { ROLLUPS_FROM_HOURLY } from '../src/db/migrations/Migration20261127000000DailyRollups.js';
import { isPublic, parseAddress } from '../src/address.js';

const { values: args } = parseArgs({
  options: {
    ips: { type: 'string', default: '100000' },
    reports: { type: 'string', default: '1000000' },
    reporters: { type: 'string', default: '3000' },
    seed: { type: 'string', default: '1' },
    reset: { type: 'boolean', default: false },
    'no-snapshot': { type: 'boolean', default: false },
  },
});
const IPS = Number(args.ips);
const REPORTS = Number(args.reports);
const REPORTERS = Number(args.reporters);
if (!(IPS > 0 && REPORTS >= IPS && REPORTERS > 0)) {
  console.error('usage: --ips N --reports M (M >= N) [--reporters R]');
  process.exit(2);
}

/** mulberry32: a small seeded PRNG, so a data set is reproducible. */
function prng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const random = prng(Number(args.seed));
const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)]!;

/** Attack profiles: categories that are reported together, and how common each profile is. */
const PROFILES: { weight: number; categories: number[] }[] = [
  { weight: 30, categories: [22, 18] }, // SSH brute force
  { weight: 18, categories: [14, 15] }, // scanning
  { weight: 14, categories: [21, 16, 19, 15] }, // web application attacks
  { weight: 10, categories: [11, 10, 12, 17] }, // spam
  { weight: 8, categories: [4, 20, 6] }, // DDoS and botnets
  { weight: 7, categories: [23, 20, 14] }, // IoT
  { weight: 5, categories: [26, 27, 28, 30, 29, 24] }, // malware
  { weight: 4, categories: [7, 3, 17, 25] }, // phishing and fraud
  { weight: 4, categories: [9, 13, 5, 1, 2, 8] }, // proxies, FTP, DNS, VoIP
];
const PROFILE_TABLE = PROFILES.flatMap((p, i) => Array<number>(p.weight).fill(i));

const ROLES: [string, number][] = [
  ['free', 45],
  ['contributor', 25],
  ['professional', 12],
  ['business', 5],
  ['enterprise', 3],
  ['honeypot', 10],
];
const REPORTER_COUNTRIES = ['US', 'DE', 'GB', 'FR', 'NL', 'CA', 'JP', 'AU', 'BR', 'IN', 'SE', 'PL', 'SG', 'ES', 'IT'];
/** IPv6 prefixes (first 32 bits) of real allocations, so IPv6 addresses geolocate. */
const V6_PREFIXES = ['2001:4860', '2a01:4f8', '2606:4700', '2400:cb00', '240e:3b0', '2a02:8108', '2600:1f18', '2804:14c', '2001:41d0', '2a00:1450'];

const DAY = 86_400_000;
const HOUR = 3_600_000;
const NOW = Date.now();

async function main(): Promise<void> {
  const started = Date.now();
  const config = loadConfig();
  if (!config.databaseUrl) {
    console.error(
      'seed:synthetic needs a PostgreSQL server: set DATABASE_URL (the embedded database runs one query at a time and cannot take the parallel COPY streams the seed writes).',
    );
    process.exit(2);
  }
  const progress = consoleProgress();
  const logger = pino({ level: 'warn' });
  const db = await connectDatabase(config, logger);
  const geo = await openGeoIp({ ...config.geoip, progress });
  const admin = new pg.Client({ connectionString: db.url });
  await admin.connect();
  const tables = [
    'reports',
    'ip_stats',
    'ip_reporters',
    'activity_hourly',
    'activity_daily',
    'country_totals',
    'connections_hourly',
    'blacklist_entries',
    'blacklist_closures',
    'blacklist_snapshots',
    'blacklist_scores',
    'blacklist_dirty',
    'blacklist_regeneration',
    'category_totals',
  ];
  if (args.reset) {
    await admin.query(`truncate ${tables.join(', ')} restart identity`);
    await admin.query("delete from accounts where email like '%@synthetic.invalid'");
  } else {
    const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from ip_stats');
    if (rows[0]!.n > 0) throw new Error('the database already holds reports; pass --reset to replace them');
  }

  // Reporters: accounts of every role, with a country; a few report a lot (Zipf-like).
  const roleTable = ROLES.flatMap(([role, weight]) => Array<string>(weight).fill(role));
  const reporterRoles = Array.from({ length: REPORTERS }, () => pick(roleTable));
  const { rows: accounts } = await admin.query<{ id: number }>(
    `insert into accounts (email, role, licences)
     select 'reporter' || g || '@synthetic.invalid', r, case when r = 'business' then 2 else 1 end
       from unnest($1::text[]) with ordinality as t(r, g) returning id`,
    [reporterRoles],
  );
  const reporters = accounts.map((a, i) => ({ id: a.id, role: reporterRoles[i]!, country: pick(REPORTER_COUNTRIES) }));
  const reporterWeights = reporters.map((_, i) => 1 / (i + 1) ** 0.8);
  const cumulative: number[] = [];
  reporterWeights.reduce((sum, w, i) => (cumulative[i] = sum + w), 0);
  const total = cumulative[cumulative.length - 1]!;
  const drawReporter = () => {
    const x = random() * total;
    let lo = 0;
    let hi = cumulative.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cumulative[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return reporters[lo]!;
  };
  const severity = new Map(
    (await admin.query<{ id: number; severity_level: number }>('select id, severity_level from threat_categories')).rows.map((r) => [
      r.id,
      r.severity_level,
    ]),
  );

  // Reports per address: Pareto (alpha 1.3) shares of the total, at least one each.
  const shares = Float64Array.from({ length: IPS }, () => (1 - random()) ** (-1 / 1.3));
  const shareSum = shares.reduce((a, b) => a + b, 0);
  const counts = Uint32Array.from(shares, (s) => Math.max(1, Math.floor((s / shareSum) * REPORTS)));
  let assigned = counts.reduce((a, b) => a + b, 0);
  for (let i = 0; assigned < REPORTS; i = (i + 1) % IPS, assigned++) counts[i]!++;

  const open = async (sql: string) => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const stream = client.query(copyFrom(sql));
    return { client, stream, buffer: [] as string[], size: 0 };
  };
  const reportsCopy = await open(
    'copy reports (ip, account_id, reporter_role, reporter_country, categories, comment, reported_at, aggregation_count) from stdin',
  );
  const statsCopy = await open(
    `copy ip_stats (ip, total_reports, report_rows, unique_reporters, honeypot_reports, first_reported_at, last_reported_at,
                    categories, max_severity, decay_sum, country_code, asn, isp) from stdin`,
  );
  const reportersCopy = await open('copy ip_reporters (ip, account_id) from stdin');
  type Copy = typeof reportsCopy;
  const write = async (copy: Copy, line: string) => {
    copy.buffer.push(line);
    copy.size += line.length;
    if (copy.size >= 256 * 1024) await flush(copy);
  };
  const flush = async (copy: Copy) => {
    if (!copy.buffer.length) return;
    const chunk = copy.buffer.join('');
    copy.buffer = [];
    copy.size = 0;
    if (!(copy.stream as Writable).write(chunk)) await once(copy.stream, 'drain');
  };
  const text = (v: string | number | null) => (v === null ? '\\N' : String(v).replace(/[\\\t\n\r]/g, ' '));

  const activity = new Map<string, { reports: number; newIps: number }>();
  const bump = (hour: number, category: number, reports: number, newIps: number) => {
    const key = `${hour}:${category}`;
    const a = activity.get(key) ?? { reports: 0, newIps: 0 };
    a.reports += reports;
    a.newIps += newIps;
    activity.set(key, a);
  };
  const countries = new Map<string, { ips: number; reports: number }>();
  const connections = new Map<string, { reports: number; scoreSum: number }>();
  const seen = new Set<string>();
  let reportRows = 0;

  const copying = progress.step('seed: addresses and reports', IPS);
  for (let i = 0; i < IPS; i++) {
    let ip: string;
    do {
      if (random() < 0.15) {
        const words = Array.from({ length: 6 }, () => Math.floor(random() * 65536).toString(16));
        ip = parseAddress(`${pick(V6_PREFIXES)}:${words.join(':')}`)!.text;
      } else {
        ip = `${1 + Math.floor(random() * 223)}.${Math.floor(random() * 256)}.${Math.floor(random() * 256)}.${1 + Math.floor(random() * 254)}`;
      }
    } while (seen.has(ip) || !isPublic(parseAddress(ip)!));
    seen.add(ip);
    const place = geo.lookup(ip);
    const profile = PROFILES[pick(PROFILE_TABLE)]!;
    const n = counts[i]!;
    // Activity of an address clusters: a start within 90 days (recent ones likelier) and a span.
    const start = NOW - 90 * DAY * random() ** 1.5;
    const span = Math.min(NOW - start, DAY * (0.1 + 20 * random() ** 3));
    const ipReporters = new Set<number>();
    const ipCategories = new Set<number>();
    let submissions = 0;
    let honeypot = 0;
    let decay = 0;
    let first = Infinity;
    let last = 0;
    let maxSeverity = 0;
    for (let r = 0; r < n; r++) {
      const reporter = drawReporter();
      const at = start + span * random();
      const aggregation = random() < 0.08 ? 1 + Math.floor(random() * 4) : 0;
      const categories = [pick(profile.categories)];
      if (random() < 0.5) categories.push(pick(profile.categories));
      if (random() < 0.05) categories.push(1 + Math.floor(random() * 30));
      const unique = [...new Set(categories)].sort((a, b) => a - b);
      const weight = 1 + aggregation;
      submissions += weight;
      if (reporter.role === 'honeypot') honeypot += weight;
      decay += weight * decayContribution(new Date(at));
      first = Math.min(first, at);
      last = Math.max(last, at);
      for (const c of unique) {
        ipCategories.add(c);
        maxSeverity = Math.max(maxSeverity, severity.get(c) ?? 0);
      }
      ipReporters.add(reporter.id);
      const when = new Date(at).toISOString();
      await write(
        reportsCopy,
        `${ip}\t${reporter.id}\t${reporter.role}\t${reporter.country}\t{${unique.join(',')}}\t${
          random() < 0.3 ? 'synthetic report' : ''
        }\t${when}\t${aggregation}\n`,
      );
      reportRows++;
      const hour = Math.floor(at / HOUR) * HOUR;
      bump(hour, 0, weight, 0);
      for (const c of unique) bump(hour, c, weight, 0);
      if (place.countryCode && place.countryCode !== reporter.country && NOW - at < 2 * DAY) {
        const key = `${hour}|${place.countryCode}|${reporter.country}`;
        const conn = connections.get(key) ?? { reports: 0, scoreSum: 0 };
        conn.reports += weight;
        conn.scoreSum += weight * Math.min(100, 20 + 10 * Math.log2(1 + n));
        connections.set(key, conn);
      }
    }
    const firstHour = Math.floor(first / HOUR) * HOUR;
    bump(firstHour, 0, 0, 1);
    for (const c of ipCategories) bump(firstHour, c, 0, 1);
    if (place.countryCode) {
      const c = countries.get(place.countryCode) ?? { ips: 0, reports: 0 };
      c.ips++;
      c.reports += submissions;
      countries.set(place.countryCode, c);
    }
    await write(
      statsCopy,
      [
        ip,
        submissions,
        n,
        ipReporters.size,
        honeypot,
        new Date(first).toISOString(),
        new Date(last).toISOString(),
        `{${[...ipCategories].sort((a, b) => a - b).join(',')}}`,
        maxSeverity,
        decay,
        text(place.countryCode),
        text(place.asn),
        text(place.isp),
      ].join('\t') + '\n',
    );
    for (const id of ipReporters) await write(reportersCopy, `${ip}\t${id}\n`);
    if ((i + 1) % 1_000 === 0) copying.update(i + 1);
  }
  for (const copy of [reportsCopy, statsCopy, reportersCopy]) {
    await flush(copy);
    copy.stream.end();
  }
  await Promise.all([reportsCopy, statsCopy, reportersCopy].map((c) => once(c.stream, 'finish')));
  await Promise.all([reportsCopy, statsCopy, reportersCopy].map((c) => c.client.end()));
  copying.done({ addresses: IPS, reports: reportRows });

  const rollups = progress.step('seed: rollups and statistics');
  const entries = [...activity.entries()].map(([key, v]) => {
    const [hour, category] = key.split(':').map(Number);
    return { hour: new Date(hour!), category: category!, ...v };
  });
  await admin.query(
    `insert into activity_hourly (hour, category, reports, new_ips)
     select * from unnest($1::timestamptz[], $2::smallint[], $3::int[], $4::int[])`,
    [entries.map((e) => e.hour), entries.map((e) => e.category), entries.map((e) => e.reports), entries.map((e) => e.newIps)],
  );
  // The daily and all-time rollups from the hourly one, as their migration backfills them.
  for (const sql of ROLLUPS_FROM_HOURLY) await admin.query(sql);
  await admin.query(
    'insert into country_totals (country_code, ips, reports) select * from unnest($1::text[], $2::int[], $3::bigint[])',
    [[...countries.keys()], [...countries.values()].map((c) => c.ips), [...countries.values()].map((c) => c.reports)],
  );
  const conns = [...connections.entries()].map(([key, v]) => ({ key: key.split('|'), ...v }));
  await admin.query(
    `insert into connections_hourly (hour, source_country, target_country, reports, score_sum)
     select * from unnest($1::timestamptz[], $2::text[], $3::text[], $4::int[], $5::bigint[])`,
    [
      conns.map((c) => new Date(Number(c.key[0]))),
      conns.map((c) => c.key[1]),
      conns.map((c) => c.key[2]),
      conns.map((c) => c.reports),
      conns.map((c) => Math.round(c.scoreSum)),
    ],
  );
  await admin.query('analyze');
  rollups.done();
  if (!args['no-snapshot']) await blacklistSnapshots(db.pool, systemClock).regenerate(progress);
  await admin.end();
  await db.close();
  console.log(`done in ${Math.round((Date.now() - started) / 1000)} s`);
}

main().catch((err: unknown) => {
  console.error(`seed:synthetic failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
