/**
 * The blacklist regeneration, full against incremental (issue 27 item 3), in one run:
 * for each size (100,000 and 1,000,000 addresses by default) a fresh migrated database with
 * that many aggregates (written by generate_series in PostgreSQL, no reports needed: the
 * regeneration reads ip_stats and the whitelist only), a first full pass, then for each change
 * (0.1% and 1% of the addresses reported again) one interval of the clock (15 minutes), an
 * incremental regeneration and a full one at the same moment. Prints the table, the target
 * (after a 1% change at 1M addresses the incremental one takes at most a tenth of the full
 * one: met or missed), the peak resident memory of this process, and the extrapolation to
 * 10M and 100M addresses; writes them into BENCHMARKS.md unless --no-write.
 *
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx scripts/bench-regeneration.ts [--sizes 100000,1000000] [--no-write]
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import pino from 'pino';
import { blacklistSnapshots, type RegenerationResult } from '../src/blacklist/repository.js';
import { ManualClock } from '../src/clock.js';
import { openDatabase } from '../src/db/connect.js';
import { projectRoot } from '../src/openapi.js';
import { decayContribution } from '../src/reputation/score.js';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: '100000,1000000' },
    changes: { type: 'string', default: '0.001,0.01' },
    'no-write': { type: 'boolean', default: false },
  },
});
const SIZES = args.sizes.split(',').map(Number);
const CHANGES = args.changes.split(',').map(Number);
const INTERVAL_MS = 15 * 60_000;
const NOW = new Date('2026-11-28T12:00:00Z');

const adminUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const logger = pino({ level: 'warn' });

/** Peak resident memory of this process, sampled every 50 ms. */
let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 50);
sampler.unref();

interface Row {
  size: number;
  change: number;
  changed: number;
  incremental: { ms: number; rescored: number };
  full: { ms: number; rescored: number };
  entries: number;
}

const fmt = (n: number) => n.toLocaleString('en-US');
const seconds = (ms: number) => (ms / 1000).toFixed(2);

async function timed(work: () => Promise<RegenerationResult>): Promise<{ ms: number; result: RegenerationResult }> {
  const started = process.hrtime.bigint();
  const result = await work();
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, result };
}

/** Synthetic aggregates: `n` public IPv4 addresses, reported over the 60 days before NOW by 1-30 accounts. */
async function seed(pool: pg.Pool, n: number): Promise<void> {
  await pool.query(
    `insert into ip_stats (ip, total_reports, report_rows, unique_reporters, honeypot_reports, first_reported_at, last_reported_at,
                           categories, max_severity, decay_sum, country_code, asn, isp, positive_feedback)
     select ((11 + (i >> 24)) & 255) || '.' || ((i >> 16) & 255) || '.' || ((i >> 8) & 255) || '.' || (i & 255),
            t, t, least(t, 1 + (h % 30)), case when h % 10 = 0 then 1 else 0 end,
            last - make_interval(days => (h % 20)), last,
            case h % 3 when 0 then '{22,18}'::smallint[] when 1 then '{14,15}'::smallint[] else '{21,15}'::smallint[] end,
            case h % 3 when 0 then 6 when 1 then 4 else 6 end,
            t * power(2, extract(epoch from (last - $2::timestamptz)) * 1000 / $3::float8),
            (array['US','DE','CN','RU','BR','IN','NL','FR'])[1 + h % 8], 64500 + h % 100, null, case when h % 50 = 0 then 1 else 0 end
       from (select i, abs(hashint4(i)) as h,
                    1 + abs(hashint4(i + 7)) % 40 as t,
                    $1::timestamptz - make_interval(secs => abs(hashint4(i + 13)) % (60 * 86400)) as last
               from generate_series(0, $4::int - 1) as i) g`,
    [NOW, new Date(Date.UTC(2025, 0, 1)), 14 * 86_400_000, n],
  );
  await pool.query('analyze ip_stats');
}

/** Reports `fraction` of the addresses again at `at` (as a report does: counts, last time, age weight). */
async function change(pool: pg.Pool, n: number, fraction: number, at: Date): Promise<number> {
  const { rowCount } = await pool.query(
    `update ip_stats set total_reports = total_reports + 1, report_rows = report_rows + 1, last_reported_at = $1, decay_sum = decay_sum + $2
      where ip in (select ip from ip_stats tablesample bernoulli ($3) repeatable (${Math.floor(Math.random() * 1e6)}))`,
    [at, decayContribution(at), fraction * 100],
  );
  return rowCount ?? 0;
}

async function measure(size: number): Promise<Row[]> {
  const name = `trs_bench_regen_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const db = await openDatabase(url.toString(), logger, { embedded: false, poolMax: 4, migrate: 'apply' });
  const raw = new pg.Pool({ connectionString: url.toString(), max: 2 });
  const rows: Row[] = [];
  try {
    const started = Date.now();
    await seed(raw, size);
    console.error(`${fmt(size)} addresses seeded in ${seconds(Date.now() - started)} s`);
    const clock = new ManualClock(NOW);
    const snapshots = blacklistSnapshots(db.pool, clock, 2);
    const first = await timed(() => snapshots.regenerate(undefined, { full: true }));
    console.error(`first full pass: ${seconds(first.ms)} s, ${fmt(first.result.entries)} entries`);
    for (const fraction of CHANGES) {
      clock.advance(INTERVAL_MS);
      const changed = await change(raw, size, fraction, clock.now());
      const incremental = await timed(() => snapshots.regenerate());
      if (incremental.result.full) throw new Error('the incremental regeneration made a full pass');
      // The full pass at the same moment, on the same data (its own snapshot: the same content).
      const full = await timed(() => snapshots.regenerate(undefined, { full: true }));
      const row: Row = {
        size,
        change: fraction,
        changed,
        incremental: { ms: incremental.ms, rescored: incremental.result.rescored },
        full: { ms: full.ms, rescored: full.result.rescored },
        entries: full.result.entries,
      };
      console.error(
        `${fmt(size)} addresses, ${fraction * 100}% changed (${fmt(changed)}): incremental ${seconds(row.incremental.ms)} s (${fmt(row.incremental.rescored)} scored), full ${seconds(row.full.ms)} s`,
      );
      rows.push(row);
    }
  } finally {
    await raw.end();
    await db.close();
    await admin.query(`drop database if exists ${name} with (force)`);
    await admin.end();
  }
  return rows;
}

/**
 * On paper: the full pass costs the same per listed address as at the largest size measured;
 * the incremental pass the same per address it scored again (each a few index lookups and
 * writes: the versions closed and written, the score replaced), with the share scored (the
 * change plus one interval of decay) taken to stay the same share of a larger list.
 */
function extrapolate(rows: Row[]): { size: number; change: number; full: number; incremental: number }[] {
  const largest = Math.max(...rows.map((r) => r.size));
  const at = rows.filter((r) => r.size === largest);
  const perAddress = at.reduce((sum, r) => sum + r.full.ms / largest, 0) / at.length;
  const out = [];
  for (const size of [10_000_000, 100_000_000]) {
    for (const r of at) {
      const rescored = (r.incremental.rescored / largest) * size;
      out.push({ size, change: r.change, full: (perAddress * size) / 1000, incremental: ((r.incremental.ms / r.incremental.rescored) * rescored) / 1000 });
    }
  }
  return out;
}

/**
 * The PostgreSQL server and the setting an incremental pass depends on most: how much of the
 * list's indexes its buffer cache holds (each new version writes one entry at a random page of
 * four of them). The figures are only comparable between runs with the same.
 */
async function serverSettings(): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    const { rows: [r] } = await client.query<{ version: string; shared_buffers: string }>(
      "select current_setting('server_version') as version, current_setting('shared_buffers') as shared_buffers",
    );
    return `PostgreSQL ${r!.version.split(' ')[0]} with shared_buffers ${r!.shared_buffers}`;
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const load = loadavg();
  const rows: Row[] = [];
  for (const size of SIZES) rows.push(...(await measure(size)));
  const loadAfter = loadavg();
  const lines: string[] = [];
  lines.push(
    `Run on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores (${cpus()[0]?.model.trim() ?? '?'}), ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ` +
      `${await serverSettings()}; load average ${load[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after (the machine is shared); one interval (15 min) of decay between passes.`,
    '',
    '| Addresses | Change | Addresses changed | Incremental: scored | Incremental s | Full s | Incremental / full |',
    '|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const r of rows) {
    lines.push(
      `| ${fmt(r.size)} | ${r.change * 100}% | ${fmt(r.changed)} | ${fmt(r.incremental.rescored)} | ${seconds(r.incremental.ms)} | ${seconds(r.full.ms)} | ${(r.incremental.ms / r.full.ms).toFixed(3)} |`,
    );
  }
  lines.push('', `Peak resident memory of the regenerating process: ${Math.round(peakRss / 2 ** 20)} MB.`, '');
  const target = rows.find((r) => r.size === 1_000_000 && r.change === 0.01);
  if (target) {
    const ratio = target.incremental.ms / target.full.ms;
    lines.push(
      '| Target | Result | Verdict |',
      '|---|---|---|',
      `| after a 1% change at 1M addresses, incremental ≤ 0.1 × full (same run) | ${ratio.toFixed(3)} × (${seconds(target.incremental.ms)} s against ${seconds(target.full.ms)} s) | **${ratio <= 0.1 ? 'met' : 'missed'}** |`,
      '',
    );
  }
  lines.push('On paper, from the largest size (linear fit; see the text below the table):', '', '| Addresses | Change | Full s | Incremental s |', '|---:|---:|---:|---:|');
  for (const e of extrapolate(rows)) lines.push(`| ${fmt(e.size)} | ${e.change * 100}% | ${e.full.toFixed(0)} | ${e.incremental.toFixed(1)} |`);
  const text = lines.join('\n');
  console.log(text);
  if (!args['no-write']) {
    const file = path.join(projectRoot, 'BENCHMARKS.md');
    const doc = readFileSync(file, 'utf8');
    const start = '<!-- regeneration:start -->';
    const end = '<!-- regeneration:end -->';
    if (!doc.includes(start)) throw new Error(`BENCHMARKS.md has no ${start} marker`);
    writeFileSync(file, doc.slice(0, doc.indexOf(start) + start.length) + '\n' + text + '\n' + doc.slice(doc.indexOf(end)));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
