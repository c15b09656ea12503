/**
 * The benchmark: the server against bare baselines, in the same run, on one PostgreSQL holding
 * the synthetic data set.
 *
 *   npm run bench                    1,000,000 addresses / 10,000,000 reports (seeded once)
 *   npm run bench -- --quick         a small data set and short runs: a smoke test of the harness
 *   options: --ips N --reports M --duration S --no-write (do not touch BENCHMARKS.md)
 *            --only check (the /check comparisons with the baselines, the header bytes, the CPU
 *            per request and /bulk-check; nothing else, and BENCHMARKS.md is not touched)
 *            --before DIST/src/main.js (an earlier build, e.g. of main, measured in the same
 *            rounds as this one: its /check and header bytes beside this build's)
 *            --rounds N (the interleaved rounds, 3 by default; their medians are reported)
 *            --only cost (the cost per million: the server's and PostgreSQL's CPU per check,
 *            report, bulk-checked address and bulk-reported line, the bytes each address and
 *            report takes, and what a 10M and a 100M checks-a-day deployment needs from them)
 *
 * BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/trs_bench) is the database; it
 * is created, migrated and seeded when it does not hold the requested data set. `--quick`
 * without BENCH_DATABASE_URL uses a database of its own that it drops at the end.
 */
import { execFileSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus, totalmem } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pg from 'pg';
import pino from 'pino';
import { connectDatabase } from '../src/db/connect.js';
import { KeyService } from '../src/keys/service.js';
import { projectRoot } from '../src/openapi.js';
import { serverAnswers } from './support/postgres.js';
import { isPublic, parseAddress } from '../src/address.js';
import { compileServer, startListening, type ListeningProcess } from './support/processes.js';
import { startSmtp } from './support/sinks.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    ips: { type: 'string' },
    reports: { type: 'string' },
    duration: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
    // `--only check`: the /check comparisons, header bytes, CPU per request and bulk-check only.
    only: { type: 'string' },
    // An earlier build of the server (its compiled src/main.js), measured in the same rounds as
    // this one: before and after under the same load.
    before: { type: 'string' },
    // Rounds of the interleaved comparisons (3): more on a noisy machine, where one round's
    // figures move by a third.
    rounds: { type: 'string' },
  },
});
const quick = args.quick;
const IPS = Number(args.ips ?? (quick ? 5_000 : 1_000_000));
const REPORTS = Number(args.reports ?? (quick ? 50_000 : 10_000_000));
const DURATION = Number(args.duration ?? (quick ? 1 : 10));
/** Rounds of the interleaved comparisons with the baselines. */
const ROUNDS = Number(args.rounds ?? (quick ? 1 : 3));
const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
// The quick run seeds a database of its own and drops it afterwards; the full data set is kept
// between runs, since seeding it takes minutes.
const url = process.env.BENCH_DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/${quick ? `trs_bench_quick_${randomBytes(4).toString('hex')}` : 'trs_bench'}`;
/** The database the URL names: the one created (and, for --quick, dropped) here. */
const dbName = new URL(url).pathname.slice(1);
const onlyCheck = args.only === 'check';
const onlyCost = args.only === 'cost';
const dropAfterwards = quick && !process.env.BENCH_DATABASE_URL;

/** The server runs with the container's NODE_OPTIONS (its heap limit), read from the Dockerfile. */
const NODE_OPTIONS = /^ENV NODE_OPTIONS=(.+)$/m.exec(readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8'))?.[1] ?? '';

interface Row {
  scenario: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  /** Requests answered in the run. */
  total: number;
  /** The process's CPU time (user + system) per request, in microseconds, where it was measured. */
  cpuUs?: number;
  note?: string;
  /** What failed, where something did: the unexpected statuses with their counts, connection errors. */
  failures?: string;
}
const rows: Row[] = [];

function log(message: string) {
  process.stdout.write(message + '\n');
}

async function ensureDatabase(): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  const { rows: found } = await admin.query('select 1 from pg_database where datname = $1', [dbName]);
  if (!found.length) await admin.query(`create database ${dbName}`);
  await admin.end();
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const size = await db
    .query<{ ips: number; reports: number }>('select count(*)::int as ips, coalesce(sum(report_rows), 0)::int as reports from ip_stats')
    .then((r) => r.rows[0]!)
    .catch(() => ({ ips: 0, reports: 0 }));
  await db.end();
  // Earlier runs add the reports of their /report and /bulk-report scenarios: a few more is the same data set.
  if (size.ips >= IPS && size.reports >= REPORTS && size.reports <= REPORTS * 1.05) {
    log(`data set: ${size.ips} addresses, ${size.reports} reports already in ${dbName}`);
    const fresh = new pg.Client({ connectionString: url });
    await fresh.connect();
    await fresh.query('analyze');
    await fresh.end();
    return;
  }
  log(`seeding ${dbName} with ${IPS} addresses and ${REPORTS} reports…`);
  const started = Date.now();
  execFileSync(
    process.execPath,
    ['--import', 'tsx', 'scripts/seed-synthetic.ts', '--ips', String(IPS), '--reports', String(REPORTS), '--reset'],
    { cwd: projectRoot, env: { ...process.env, DATABASE_URL: url }, stdio: 'inherit' },
  );
  log(`seeded in ${Math.round((Date.now() - started) / 1000)} s`);
}

/** A process on a port of its own (scripts/support/processes.ts): no fixed port, nothing else answering. */
function start(command: string[], env: Record<string, string>): Promise<ListeningProcess> {
  // The processes' own output shown: the server logs its warnings and errors (LOG_LEVEL=warn), so
  // a run with failed requests says why.
  return startListening(command, { ...process.env, ...env }, { stdout: 'inherit' });
}

async function waitFor(urlToPoll: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    try {
      if ((await fetch(urlToPoll)).status < 500) return;
    } catch {
      // not yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${urlToPoll} did not answer`);
}

/** A process's CPU time so far (user + system, /proc/<pid>/stat), in milliseconds. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The fields after the command name (which may hold spaces) in parentheses; utime and stime are 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}
const CLOCK_TICKS = Number((() => {
  try {
    return execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim();
  } catch {
    return '100';
  }
})());

/** The bytes of a response's header block (status line to the blank line), as sent on the wire. */
function headerBytes(target: string, pathAndQuery: string, headers: Record<string, string> = {}): Promise<{ bytes: number; block: string }> {
  const { hostname, port } = new URL(target);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => {
      const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
      socket.write(`GET ${pathAndQuery} HTTP/1.1\r\nHost: ${hostname}:${port}\r\n${extra}Connection: close\r\n\r\n`);
    });
    let received = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end >= 0) {
        socket.destroy();
        resolve({ bytes: end + 4, block: received.subarray(0, end).toString('latin1') });
      }
    });
    socket.on('error', reject);
    socket.on('end', () => reject(new Error(`no header block from ${target}${pathAndQuery}`)));
  });
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

/** Samples a process tree's resident memory while `work` runs; returns the peak in MB. */
async function peakRss(pids: number[], work: () => Promise<unknown>): Promise<number> {
  let peak = 0;
  const sample = () => (peak = Math.max(peak, pids.reduce((sum, pid) => sum + rssMb(pid), 0)));
  const timer = setInterval(sample, 100);
  try {
    await work();
  } finally {
    clearInterval(timer);
    sample();
  }
  return peak;
}

let knownIps: string[] = [];
function randomPublicIp(): string {
  for (;;) {
    const ip = `${1 + Math.floor(Math.random() * 223)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}`;
    if (isPublic(parseAddress(ip)!)) return ip;
  }
}
/** A fresh address per request: half of them known to the data set, half random. */
const freshIp = () => (Math.random() < 0.5 ? knownIps[Math.floor(Math.random() * knownIps.length)]! : randomPublicIp());

async function run(
  scenario: string,
  target: string,
  connections: number,
  request: { method?: string; path: () => string; body?: () => string; headers?: Record<string, string>; expect?: number },
  note?: string,
  cpuOf?: number,
): Promise<Row> {
  const cpuBefore = cpuOf === undefined ? 0 : cpuMs(cpuOf);
  const result = await autocannon({
    url: target,
    connections,
    duration: DURATION,
    requests: [
      {
        method: (request.method ?? 'GET') as 'GET',
        headers: request.headers,
        setupRequest: (req) => ({ ...req, path: request.path(), body: request.body?.() }),
      },
    ],
  });
  const row: Row = {
    scenario,
    connections,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    // autocannon counts every status but 2xx as an error; a scenario may expect another (304).
    errors: result.errors + result.non2xx - (request.expect ? Number(result.statusCodeStats?.[String(request.expect) as '304']?.count ?? 0) : 0),
    total: result.requests.total,
    note,
  };
  // A failed run says what failed: each unexpected status with its count, and connection errors.
  const failures = Object.entries(result.statusCodeStats ?? {})
    .filter(([status]) => !status.startsWith('2') && status !== String(request.expect))
    .map(([status, { count }]) => `${count} × ${status}`);
  if (result.errors) failures.push(`${result.errors} connection errors`);
  if (failures.length) row.failures = failures.join(', ');
  if (cpuOf !== undefined && row.total > 0) row.cpuUs = Math.round(((cpuMs(cpuOf) - cpuBefore) * 1000) / row.total);
  rows.push(row);
  log(
    `${scenario.padEnd(42)} c=${String(connections).padStart(2)} ${String(row.rps).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${row.errors}` +
      (row.cpuUs === undefined ? '' : `  CPU ${row.cpuUs} µs/request`),
  );
  return row;
}

/** Times single requests one after another (for the large bulk operations). */
async function timeEach(scenario: string, count: number, send: () => Promise<Response>, note?: string): Promise<Row> {
  const times: number[] = [];
  let errors = 0;
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    const res = await send();
    const body = await res.text();
    if (!res.ok) {
      errors++;
      log(`${scenario}: ${res.status} ${body.slice(0, 200)}`);
    }
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  const q = (p: number) => Math.round(times[Math.min(times.length - 1, Math.floor(p * times.length))]!);
  const row: Row = { scenario, connections: 1, rps: Math.round((1000 * count) / times.reduce((a, b) => a + b, 0)), p50: q(0.5), p99: q(0.99), errors, total: count, note };
  rows.push(row);
  log(`${scenario.padEnd(42)} c= 1 ${String(row.rps).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${errors}`);
  return row;
}

async function main(): Promise<void> {
  // The benchmark measures the server against a PostgreSQL server; the embedded database runs
  // one query at a time and would measure nothing. On a machine with only Node.js the smoke run
  // says so and passes; where the suite must run on a server (CI) it fails instead.
  if (quick && !process.env.BENCH_DATABASE_URL && !(await serverAnswers(adminUrl))) {
    if (process.env.TEST_REQUIRE_POSTGRES === '1') throw new Error(`no PostgreSQL server answers at ${new URL(adminUrl).host}`);
    log(`bench: no PostgreSQL server answers at ${new URL(adminUrl).host}; the benchmark needs one, so the smoke run is skipped`);
    return;
  }
  await ensureDatabase();
  // The server and the baselines run on this Node.js. The container image runs Node.js 24; on
  // Node.js 20 (V8 11) Express costs about twice the CPU per request (BENCHMARKS.md, issue 29).
  if (Number(process.versions.node.split('.')[0]) < 22) {
    log(`note: Node.js ${process.version} here; the image runs Node.js 24, on which Express and /check cost about half the CPU (BENCHMARKS.md)`);
  }
  log('building…');
  // A build of its own, not dist/: another run (or `npm run build`) may be writing that.
  const build = compileServer('bench');
  try {
    await measure(build.main);
  } finally {
    build.remove();
  }
}

async function measure(serverMain: string): Promise<void> {

  const db = await connectDatabase({ databaseUrl: url, dataDir: '.data', dbPoolMax: 2 }, pino({ level: 'silent' }));
  const keys = new KeyService(db.orm.em);
  const enterprise = (await keys.create({ role: 'enterprise' })).key;
  knownIps = (await db.pool.query<{ ip: string }>('select ip from ip_stats tablesample system (10) limit 20000')).rows.map((r) => r.ip);
  if (knownIps.length < 100) knownIps = (await db.pool.query<{ ip: string }>('select ip from ip_stats limit 20000')).rows.map((r) => r.ip);
  await db.close();

  const smtp = await startSmtp();
  // BENCH_CPU_PROF=<dir>: the server writes a CPU profile there when it stops
  // (summarised by scripts/support/profile-summary.ts).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`] : [];
  const appEnv = (extra: Record<string, string> = {}) => ({
    NODE_OPTIONS: NODE_OPTIONS,
    DATABASE_URL: url,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    RELAY_SMTP_URL: smtp.url,
    RELAY_MAIL_FROM: 'bench@example.net',
    RELAY_ENTERPRISE_MAIL_CEILING: '100000000',
    RELAY_SITE_DAILY_CAP: '100000000',
    // The snapshot the seed built is served as it is; no regeneration competes with the runs.
    BLACKLIST_INTERVAL_MINUTES: '1440',
    ...extra,
  });
  const children: ChildProcess[] = [];
  try {
    const appProcess = await start([...profile, serverMain], appEnv());
    children.push(appProcess.child);
    const app = appProcess.child;
    const base = appProcess.origin;
    await waitFor(`${base}/readyz`);
    const key = { 'X-Key': enterprise };
    const json = { ...key, 'content-type': 'application/json' };
    // The baselines answer a JSON body the size of /check's (the mean of a sample), so that the
    // comparison weighs the work around the body, not the body.
    let sampled = 0;
    for (let i = 0; i < 40; i++) sampled += (await (await fetch(`${base}/api/v2/check?ip=${freshIp()}`, { headers: key })).arrayBuffer()).byteLength;
    const bodyBytes = Math.round(sampled / 40);
    const started = await Promise.allSettled([
      start(['--import', 'tsx', 'scripts/bench/baseline.ts', 'http'], { DATABASE_URL: url, BODY_BYTES: String(bodyBytes) }),
      start(['--import', 'tsx', 'scripts/bench/baseline.ts', 'express'], { DATABASE_URL: url, BODY_BYTES: String(bodyBytes) }),
    ]);
    for (const s of started) if (s.status === 'fulfilled') children.push(s.value.child);
    const [httpProcess, expressProcess] = started.map((s) => {
      if (s.status === 'rejected') throw s.reason;
      return s.value;
    }) as [ListeningProcess, ListeningProcess];
    const ports = { http: httpProcess.port, express: expressProcess.port };
    const pids = { http: httpProcess.child.pid!, express: expressProcess.child.pid!, app: app.pid! };
    const beforeProcess = args.before ? await start([args.before], appEnv()) : undefined;
    if (beforeProcess) {
      children.push(beforeProcess.child);
      await waitFor(`${beforeProcess.origin}/readyz`);
      await autocannon({ url: `${beforeProcess.origin}/api/v2/check?ip=8.8.8.8`, connections: 10, duration: Math.min(3, DURATION), headers: key });
    }
    const headerBlocks = {
      before: beforeProcess && (await headerBytes(beforeProcess.origin, `/api/v2/check?ip=${knownIps[0]}`, key)),
      check: await headerBytes(base, `/api/v2/check?ip=${knownIps[0]}`, key),
      http: await headerBytes(`http://127.0.0.1:${ports.http}`, `/check?ip=${knownIps[0]}`),
      express: await headerBytes(`http://127.0.0.1:${ports.express}`, `/check?ip=${knownIps[0]}`),
    };
    log(
      `body: ${bodyBytes} bytes; header block: /check ${headerBlocks.check.bytes} B` +
        (headerBlocks.before ? ` (before: ${headerBlocks.before.bytes} B)` : '') +
        `, node:http ${headerBlocks.http.bytes} B, Express ${headerBlocks.express.bytes} B`,
    );
    log(headerBlocks.check.block);

    // Warm-up (JIT, connection pools, caches), not recorded.
    await autocannon({ url: `${base}/api/v2/check?ip=8.8.8.8`, connections: 10, duration: Math.min(3, DURATION), headers: key });
    if (onlyCost) return log('\n' + (await costPerMillion(base, pids.app, key)));
    // The baselines and /check in rounds, interleaved, so that each ratio compares runs made
    // moments apart; a target reads the median round.
    const baselines: Record<number, { http: Row; express: Row }> = {};
    const checks: Record<number, Row> = {};
    const checkRounds: CheckRound[] = [];
    let peakLoad = 0;
    for (let round = 0; round < ROUNDS; round++) {
      for (const c of [10, 50]) {
        const h = await run('baseline: node:http + pg, PK lookup', `http://127.0.0.1:${ports.http}`, c, { path: () => `/check?ip=${freshIp()}` }, undefined, pids.http);
        const e = await run('baseline: Express 5 + pg, PK lookup', `http://127.0.0.1:${ports.express}`, c, { path: () => `/check?ip=${freshIp()}` }, undefined, pids.express);
        baselines[c] = { http: h, express: e };
        peakLoad = Math.max(
          peakLoad,
          await peakRss([app.pid!], async () => {
            checks[c] = await run('GET /check (key, quota charged)', base, c, { path: () => `/api/v2/check?ip=${freshIp()}`, headers: key }, undefined, pids.app);
          }),
        );
        const b = beforeProcess
          ? await run('GET /check, before (the --before build)', beforeProcess.origin, c, { path: () => `/api/v2/check?ip=${freshIp()}`, headers: key }, undefined, beforeProcess.child.pid!)
          : undefined;
        checkRounds.push({
          c,
          http: h.rps,
          express: e.rps,
          check: checks[c]!.rps,
          p99: checks[c]!.p99,
          cpu: checks[c]!.cpuUs!,
          httpCpu: h.cpuUs!,
          expressCpu: e.cpuUs!,
          before: b && { rps: b.rps, p99: b.p99, cpu: b.cpuUs! },
        });
      }
    }
    if (onlyCheck) {
      const bulkCheck = await run('POST /bulk-check, 1,000 addresses', base, 10, {
        method: 'POST',
        path: () => '/api/v2/bulk-check',
        headers: json,
        body: () => JSON.stringify({ ips: Array.from({ length: 1000 }, freshIp) }),
      });
      log('\n' + render({ baselines, checks, peakLoad, headerBlocks, bodyBytes }) + '\n\n' + checkTargets(checkRounds, headerBlocks.check.bytes, bulkCheck));
      return;
    }
    for (const c of [10, 50]) await run('GET /check-public (key)', base, c, { path: () => `/api/v2/check-public?ip=${freshIp()}`, headers: key });
    const bulkCheck = await run('POST /bulk-check, 1,000 addresses', base, 10, {
      method: 'POST',
      path: () => '/api/v2/bulk-check',
      headers: json,
      body: () => JSON.stringify({ ips: Array.from({ length: 1000 }, freshIp) }),
    });
    const reports = await run('POST /report', base, 50, {
      method: 'POST',
      path: () => '/api/v2/report',
      headers: json,
      body: () => JSON.stringify({ ip: randomPublicIp(), categories: [18, 22], comment: 'bench' }),
    });
    const bulkReport = await timeEach('POST /bulk-report, 10,000 lines', quick ? 2 : 5, () =>
      fetch(`${base}/api/v2/bulk-report`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ csv: Array.from({ length: 10_000 }, () => `${randomPublicIp()},18|22,bench`).join('\n') }),
      }),
    );
    const blacklistPath = '/api/v2/blacklist?confidence=0&limit=10000';
    const first = await fetch(base + blacklistPath, { headers: key });
    const etag = first.headers.get('etag')!;
    await first.arrayBuffer();
    const lists: Row[] = [];
    for (const c of [10, 50]) lists.push(await run('GET /blacklist 10,000 entries (200)', base, c, { path: () => blacklistPath, headers: key }));
    const notModifiedRounds: { express: number; notModified: number }[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const e = await run('baseline: Express 5 + pg, PK lookup', `http://127.0.0.1:${ports.express}`, 50, { path: () => `/check?ip=${freshIp()}` });
      const n = await run('GET /blacklist (304)', base, 50, { path: () => blacklistPath, headers: { ...key, 'If-None-Match': etag }, expect: 304 });
      notModifiedRounds.push({ express: e.rps, notModified: n.rps });
    }
    const statistics: Row[] = [];
    for (const [name, p] of [
      ['GET /stats-public', '/api/v2/stats-public'],
      ['GET /statistics', '/api/v2/statistics'],
      ['GET /trends?period=24h', '/api/v2/trends?period=24h'],
      ['GET /trends?period=30d', '/api/v2/trends?period=30d'],
      ['GET /attack-map-data', '/api/v2/attack-map-data'],
      ['GET /blacklist-stats', '/api/v2/blacklist-stats'],
      ['GET /blacklist-categories', '/api/v2/blacklist-categories'],
    ] as const) {
      statistics.push(await run(name, base, 10, { path: () => p, headers: key }));
    }
    let mailSeq = 0;
    await run('POST /relay-mail', base, 10, {
      method: 'POST',
      path: () => '/api/v2/relay-mail',
      headers: json,
      body: () => JSON.stringify({ recipient: `u${mailSeq++}-${Date.now()}@example.org`, subject: 'Code', body_text: 'Your code is 123456' }),
    });

    // Memory: a 100,000-entry download against the resident set at rest.
    const rest = rssMb(app.pid!);
    const peakDownload = await peakRss([app.pid!], async () => {
      const res = await fetch(`${base}/api/v2/blacklist?confidence=0&limit=100000`, { headers: key });
      await res.arrayBuffer();
    });

    // Two processes against one.
    const two = await start([serverMain], appEnv({ WORKERS: '2' }));
    children.push(two.child);
    await waitFor(`${two.origin}/readyz`);
    await new Promise((r) => setTimeout(r, 1000));
    const twoRow = await run('GET /check, WORKERS=2', two.origin, 50, {
      path: () => `/api/v2/check?ip=${freshIp()}`,
      headers: key,
    });

    const verdicts = targets({ checkRounds, notModifiedRounds, bulkCheck, reports, bulkReport, list: lists[0]!, statistics, peakLoad, rest, peakDownload });
    const report = render({ baselines, checks, peakLoad, rest, peakDownload, twoRow, headerBlocks, bodyBytes }) + '\n\n' + verdicts;
    log('\n' + report);
    if (!args['no-write'] && !quick) writeResults(report);
    const failed = rows.filter((r) => r.errors > 0);
    if (failed.length) {
      log(`requests failed in: ${failed.map((r) => `${r.scenario}${r.failures ? ` (${r.failures})` : ''}`).join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    for (const child of children) child.kill('SIGTERM');
    await smtp.close();
    // A child killed by a signal keeps exitCode null: it has exited when either is set.
    const running = children.filter((child) => child.exitCode === null && child.signalCode === null);
    await Promise.all(running.map((child) => new Promise((r) => child.once('exit', r))));
  }
}

/**
 * Issue 27, the cost per million: the CPU time the server process and the PostgreSQL backends
 * serving the data set spend per operation (µs per operation is CPU-seconds per million), the
 * bytes an address and a report keep in the database, and from them what a deployment of 10M and
 * 100M checks a day needs. PostgreSQL's own background processes (WAL writer, checkpointer,
 * autovacuum) serve every database on the machine and are left out; so is the load generator.
 */
async function costPerMillion(base: string, appPid: number, key: Record<string, string>): Promise<string> {
  const json = { ...key, 'content-type': 'application/json' };
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const backends = async () =>
    new Map(
      (await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')).rows.flatMap((r) => {
        try {
          return [[r.pid, cpuMs(r.pid)] as const];
        } catch {
          return []; // gone between the query and the read
        }
      }),
    );
  const costs: { name: string; unit: string; perRequest: number; nodeUs: number; pgUs: number; rps: number }[] = [];
  const measured = async (name: string, unit: string, perRequest: number, work: () => Promise<Row>) => {
    const pgBefore = await backends();
    const nodeBefore = cpuMs(appPid);
    const row = await work();
    const nodeMs = cpuMs(appPid) - nodeBefore;
    let pgMs = 0;
    for (const [pid, ms] of await backends()) pgMs += ms - (pgBefore.get(pid) ?? 0);
    const units = row.total * perRequest;
    costs.push({ name, unit, perRequest, nodeUs: (nodeMs * 1000) / units, pgUs: (pgMs * 1000) / units, rps: row.rps * perRequest });
  };
  await measured('check', 'check', 1, () => run('GET /check (cost)', base, 50, { path: () => `/api/v2/check?ip=${freshIp()}`, headers: key }));
  await measured('report', 'report', 1, () =>
    run('POST /report (cost)', base, 50, {
      method: 'POST',
      path: () => '/api/v2/report',
      headers: json,
      body: () => JSON.stringify({ ip: randomPublicIp(), categories: [18, 22], comment: 'bench' }),
    }),
  );
  await measured('bulk-check address', 'address', 1000, () =>
    run('POST /bulk-check, 1,000 addresses (cost)', base, 10, {
      method: 'POST',
      path: () => '/api/v2/bulk-check',
      headers: json,
      body: () => JSON.stringify({ ips: Array.from({ length: 1000 }, freshIp) }),
    }),
  );
  await measured('bulk-report line', 'line', 10_000, () =>
    timeEach('POST /bulk-report, 10,000 lines (cost)', quick ? 2 : 5, () =>
      fetch(`${base}/api/v2/bulk-report`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ csv: Array.from({ length: 10_000 }, () => `${randomPublicIp()},18|22,bench`).join('\n') }),
      }),
    ),
  );
  const size = (
    await admin.query<{ addresses: number; reports: number; address_bytes: string; report_bytes: string }>(
      `select (select count(*) from ip_stats)::int as addresses, (select count(*) from reports)::int as reports,
              (select sum(pg_total_relation_size(t))::bigint from unnest(array['ip_stats', 'ip_reporters']::regclass[]) t) as address_bytes,
              (select sum(pg_total_relation_size(inhrelid))::bigint from pg_inherits where inhparent = 'reports'::regclass) as report_bytes`,
    )
  ).rows[0]!;
  await admin.end();
  const perAddress = Number(size.address_bytes) / size.addresses;
  const perReport = Number(size.report_bytes) / size.reports;
  const us = (n: number) => Math.round(n).toLocaleString('en');
  const lines = [
    `Run on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores, ${size.addresses.toLocaleString('en')} addresses and ${size.reports.toLocaleString('en')} reports in PostgreSQL.`,
    '',
    '| Operation | Server CPU (s per million) | PostgreSQL backends (s per million) | Total CPU-seconds per million | Rate here (operations/s) |',
    '|---|---|---|---|---|',
    ...costs.map((c) => `| ${c.name} | ${us(c.nodeUs)} | ${us(c.pgUs)} | ${us(c.nodeUs + c.pgUs)} | ${us(c.rps)} |`),
    '',
    `Stored: ${Math.round(perAddress)} bytes per address (ip_stats, ip_reporters, their indexes), ${Math.round(perReport)} bytes per report (the partitions and their indexes).`,
    '',
  ];
  // Sizing: the day's checks arrive at 3 × their mean rate at the peak, a core is planned at 60%
  // busy, a day brings one report for every hundred checks (1M reports a day at 100M checks: the
  // size of CrowdSec's network), and the database keeps 365 days of them with as many reports per
  // address as the data set measured.
  const check = costs[0]!;
  const report = costs[1]!;
  const millions = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)}B` : n >= 1e6 ? `${Math.round(n / 1e6)}M` : `${Math.round(n / 1e3)}k`);
  lines.push(
    '| Deployment | Peak checks/s | Peak reports/s | Server cores (processes) | PostgreSQL cores | Reports kept (365 days) | PostgreSQL data |',
    '|---|---|---|---|---|---|---|',
  );
  for (const perDay of [10_000_000, 100_000_000]) {
    const peak = (3 * perDay) / 86_400;
    const reportsPeak = peak / 100;
    const nodeCores = (peak * check.nodeUs + reportsPeak * report.nodeUs) / 1e6 / 0.6;
    const pgCores = (peak * check.pgUs + reportsPeak * report.pgUs) / 1e6 / 0.6;
    const kept = (perDay / 100) * 365;
    const bytes = kept * perReport + ((kept * size.addresses) / size.reports) * perAddress;
    lines.push(
      `| ${millions(perDay)} checks, ${millions(perDay / 100)} reports a day | ${Math.round(peak).toLocaleString('en')} | ${Math.round(reportsPeak)} | ` +
        `${nodeCores.toFixed(2)} (${Math.max(1, Math.ceil(nodeCores))}) | ${pgCores.toFixed(2)} | ${millions(kept)} | ${Math.round(bytes / 2 ** 30)} GiB |`,
    );
  }
  return lines.join('\n');
}

async function dropQuickDatabase(): Promise<void> {
  if (!dropAfterwards || !(await serverAnswers(adminUrl))) return;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${dbName} with (force)`);
  await admin.end();
}

function render(m: {
  baselines: Record<number, { http: Row; express: Row }>;
  checks: Record<number, Row>;
  peakLoad: number;
  rest?: number;
  peakDownload?: number;
  twoRow?: Row;
  headerBlocks: Record<'check' | 'http' | 'express', { bytes: number }> & { before?: { bytes: number } };
  bodyBytes: number;
}): string {
  const ratio = (row: Row, b: Row | undefined) => (b ? (row.rps / b.rps).toFixed(2) : '');
  const lines = [
    `Run on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${cpus()[0]?.model.trim()}), ${Math.round(totalmem() / 2 ** 30)} GiB,`,
    `Node ${process.version}; ${IPS.toLocaleString('en')} addresses and ${REPORTS.toLocaleString('en')} reports; ${DURATION} s per run;`,
    `server (NODE_ENV=production${NODE_OPTIONS ? `, NODE_OPTIONS=${NODE_OPTIONS}` : ''}), baselines, PostgreSQL and autocannon share the machine.`,
    '',
    `The baselines answer a JSON body of ${m.bodyBytes} bytes, the mean size of /check's. Header block of an answer: ` +
      `/check ${m.headerBlocks.check.bytes} bytes${m.headerBlocks.before ? ` (the --before build: ${m.headerBlocks.before.bytes})` : ''}, ` +
      `node:http ${m.headerBlocks.http.bytes}, Express ${m.headerBlocks.express.bytes}.`,
    '',
    '| Scenario | Conn. | req/s | p50 ms | p99 ms | × node:http | × Express | CPU µs/req | Errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows.map((r, i) => {
      // Against the baselines of its own round: the latest ones measured before it at its connections.
      const before = rows.slice(0, i).reverse();
      const b = {
        http: before.find((x) => x.connections === r.connections && x.scenario.startsWith('baseline: node:http')) ?? m.baselines[r.connections]?.http,
        express: before.find((x) => x.connections === r.connections && x.scenario.startsWith('baseline: Express')) ?? m.baselines[r.connections]?.express,
      };
      const isCheck = r.scenario.startsWith('GET /check') || r.scenario.startsWith('GET /blacklist (304)');
      return `| ${r.scenario} | ${r.connections} | ${r.rps} | ${r.p50} | ${r.p99} | ${isCheck ? ratio(r, b?.http) : ''} | ${
        isCheck ? ratio(r, b?.express) : ''
      } | ${r.cpuUs ?? ''} | ${r.errors} |`;
    }),
    '',
  ];
  if (m.rest === undefined || m.peakDownload === undefined || !m.twoRow) return lines.join('\n');
  lines.push(
    `Server resident memory: peak ${Math.round(m.peakLoad)} MB under /check load; ${Math.round(m.rest)} MB at rest before a ` +
      `100,000-entry blacklist download, peak ${Math.round(m.peakDownload)} MB during it (+${Math.round(m.peakDownload - m.rest)} MB).`,
    `WORKERS=2 against 1 process, /check at 50 connections: ${m.twoRow.rps} against ${m.checks[50]?.rps} req/s ` +
      `(×${m.checks[50] ? (m.twoRow.rps / m.checks[50].rps).toFixed(2) : '?'}).`,
  );
  return lines.join('\n');
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

interface CheckRound {
  c: number;
  http: number;
  express: number;
  check: number;
  p99: number;
  /** CPU µs per request: the server's, and each baseline's. */
  cpu: number;
  httpCpu: number;
  expressCpu: number;
  /** The --before build's /check in the same round. */
  before?: { rps: number; p99: number; cpu: number };
}

/** Issue 29's targets for /check, met or missed, from the medians of the interleaved rounds. */
function checkTargets(checkRounds: CheckRound[], headerBytes: number, bulkCheck: Row): string {
  const at50 = checkRounds.filter((r) => r.c === 50);
  const toHttp = median(at50.map((r) => r.check / r.http));
  const toExpress = median(at50.map((r) => r.check / r.express));
  const p99 = median(at50.map((r) => r.p99));
  const cpu = median(at50.map((r) => r.cpu));
  const rounds = at50.length > 1 ? ` (median of ${at50.length} rounds)` : '';
  const rows: [string, string, boolean | undefined][] = [
    ['`/check` at 50 connections ≥ 0.35 × node:http', `${toHttp.toFixed(2)} ×${rounds}`, toHttp >= 0.35],
    ['`/check` at 50 connections ≥ 0.7 × minimal Express', `${toExpress.toFixed(2)} ×${rounds}`, toExpress >= 0.7],
    ['`/check` p99 < 50 ms at 50 connections', `${p99} ms`, p99 < 50],
    [
      '`/check` CPU per request (server process)',
      `${cpu} µs (node:http ${median(at50.map((r) => r.httpCpu))} µs, Express ${median(at50.map((r) => r.expressCpu))} µs)`,
      undefined,
    ],
    ['`/check` answer header block (CrowdSec sends 125 bytes)', `${headerBytes} bytes`, undefined],
    ...(at50.every((r) => r.before)
      ? ([
          [
            '`/check` at 50 connections, this build against the --before build (same rounds)',
            `${median(at50.map((r) => r.check / r.before!.rps)).toFixed(2)} × (before: ${median(at50.map((r) => r.before!.rps))} req/s, ` +
              `${median(at50.map((r) => r.before!.cpu))} µs CPU/request, p99 ${median(at50.map((r) => r.before!.p99))} ms)`,
            undefined,
          ],
        ] as [string, string, boolean | undefined][])
      : []),
    ['`/bulk-check` of 1,000 p50 < 30 ms (10 connections)', `${bulkCheck.p50} ms`, bulkCheck.p50 < 30],
  ];
  const verdict = (met: boolean | undefined) => (met === undefined ? 'measured' : met ? 'met' : '**missed**');
  return ['| Target | Result | Verdict |', '|---|---|---|', ...rows.map(([t, r, met]) => `| ${t} | ${r} | ${verdict(met)} |`)].join('\n');
}

/** Each target of issues 7 and 15, met or missed, from the medians of the interleaved rounds. */
function targets(m: {
  checkRounds: CheckRound[];
  notModifiedRounds: { express: number; notModified: number }[];
  bulkCheck: Row;
  reports: Row;
  bulkReport: Row;
  list: Row;
  statistics: Row[];
  peakLoad: number;
  rest: number;
  peakDownload: number;
}): string {
  const at50 = m.checkRounds.filter((r) => r.c === 50);
  const toHttp = median(at50.map((r) => r.check / r.http));
  const toExpress = median(at50.map((r) => r.check / r.express));
  const p99 = median(at50.map((r) => r.p99));
  const notModified = median(m.notModifiedRounds.map((r) => r.notModified / r.express));
  const slowest = m.statistics.filter((r) => r.scenario !== 'GET /blacklist-categories').reduce((a, b) => (b.p50 > a.p50 ? b : a));
  const rounds = at50.length > 1 ? ` (median of ${at50.length} rounds)` : '';
  const rows: [string, string, boolean][] = [
    ['`/check` at 50 connections ≥ 0.35 × node:http', `${toHttp.toFixed(2)} ×${rounds}`, toHttp >= 0.35],
    ['`/check` at 50 connections ≥ 0.7 × minimal Express', `${toExpress.toFixed(2)} ×${rounds}`, toExpress >= 0.7],
    ['`/check` p99 < 50 ms at 50 connections', `${p99} ms`, p99 < 50],
    ['`/bulk-check` of 1,000 p50 < 30 ms (10 connections)', `${m.bulkCheck.p50} ms`, m.bulkCheck.p50 < 30],
    ['`/blacklist` 304 ≥ 0.8 × minimal Express (50 connections)', `${notModified.toFixed(2)} ×${rounds}`, notModified >= 0.8],
    ['`/blacklist` 10,000 entries p50 < 25 ms (10 connections)', `${m.list.p50} ms`, m.list.p50 < 25],
    ['`/report` ≥ 1,500 reports/s (50 connections)', `${m.reports.rps} /s`, m.reports.rps >= 1500],
    ['`/bulk-report` of 10,000 lines < 2 s', `p50 ${(m.bulkReport.p50 / 1000).toFixed(2)} s`, m.bulkReport.p50 < 2000],
    ['every statistics endpoint p50 < 20 ms (10 connections)', `slowest ${slowest.scenario.replace('GET ', '')} ${slowest.p50} ms`, slowest.p50 < 20],
    ['resident memory < 300 MB under /check load', `${Math.round(m.peakLoad)} MB`, m.peakLoad < 300],
    ['a 100,000-entry download adds < 50 MB', `+${Math.round(m.peakDownload - m.rest)} MB`, m.peakDownload - m.rest < 50],
  ];
  const lines = ['| Target | Result | Verdict |', '|---|---|---|', ...rows.map(([target, result, met]) => `| ${target} | ${result} | ${met ? 'met' : '**missed**'} |`)];
  return lines.join('\n');
}

const START = '<!-- results:start -->';
const END = '<!-- results:end -->';
function writeResults(report: string): void {
  const file = path.join(projectRoot, 'BENCHMARKS.md');
  const current = existsSync(file) ? readFileSync(file, 'utf8') : `# Benchmarks\n\n${START}\n${END}\n`;
  const next = current.includes(START)
    ? current.replace(new RegExp(`${START}[\\s\\S]*${END}`), `${START}\n${report}\n${END}`)
    : `${current}\n${START}\n${report}\n${END}\n`;
  writeFileSync(file, next);
  log('BENCHMARKS.md updated');
}

main()
  .catch((err: unknown) => {
    console.error(`bench: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  })
  .finally(dropQuickDatabase);
