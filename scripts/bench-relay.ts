/**
 * The relay delivery benchmark: how long a 2FA message takes from its 200 to the mail server or
 * the SMS provider, on an idle server and in a burst, through a real server process and real
 * peers on loopback (an SMTP server, an HTTP SMS endpoint).
 *
 *   npm run bench:relay                  PostgreSQL (a database of its own, dropped afterwards)
 *   npm run bench:relay -- --embedded    the embedded PostgreSQL
 *   options: --burst N (200 per channel), --senders C (20 at a time), --idle N (30 per channel),
 *            --no-write (do not touch BENCHMARKS.md), --quick (small: a smoke test)
 *
 * Targets (issue 13): idle accepted -> delivered p99 < 1 s; a burst of 200 per channel sent 20 at a
 * time delivered with p99 < 5 s and at >= 50 messages/s per channel; nothing left undelivered.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { projectRoot } from '../src/openapi.js';
import { serverAnswers } from './support/postgres.js';
import { startListening } from './support/processes.js';
import { startSmsProvider, startSmtp } from './support/sinks.js';

const { values: args } = parseArgs({
  options: {
    embedded: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    burst: { type: 'string' },
    senders: { type: 'string' },
    idle: { type: 'string' },
    'no-write': { type: 'boolean', default: false },
  },
});
const BURST = Number(args.burst ?? (args.quick ? 40 : 200));
const SENDERS = Number(args.senders ?? 20);
const IDLE = Number(args.idle ?? (args.quick ? 5 : 30));
const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const TARGETS = { idleP99: 1_000, burstP99: 5_000, burstRate: 50 };

type Channel = 'mail' | 'sms';
interface Sample {
  to: string;
  acceptedAt: number;
}

const log = (line: string) => process.stdout.write(line + '\n');

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

async function waitFor(url: string, ms = 120_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if ((await fetch(url).catch(() => undefined))?.status === 200) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

async function main(): Promise<void> {
  const smtp = await startSmtp();
  const sms = await startSmsProvider();
  const deliveredAt = (channel: Channel) => {
    const at = new Map<string, number>();
    if (channel === 'mail') for (const m of smtp.received) for (const to of m.envelopeTo) at.set(to, m.at);
    else for (const r of sms.requests) at.set(String(r.body.to), r.at);
    return at;
  };

  const dataDir = mkdtempSync(path.join(tmpdir(), 'trs-bench-relay-'));
  let databaseUrl: string | undefined;
  const dbName = `trs_bench_relay_${randomBytes(4).toString('hex')}`;
  // Without a PostgreSQL server the benchmark runs on the embedded database (it measures the
  // relay there too); where the suite must run on a server (CI), a missing one is an error.
  if (!args.embedded && !(await serverAnswers(adminUrl))) {
    if (process.env.TEST_REQUIRE_POSTGRES === '1') throw new Error(`no PostgreSQL server answers at ${new URL(adminUrl).host}`);
    log(`bench:relay: no PostgreSQL server answers at ${new URL(adminUrl).host}; running on the embedded database`);
    args.embedded = true;
  }
  if (!args.embedded) {
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
    databaseUrl = adminUrl.replace(/\/[^/]*$/, `/${dbName}`);
  }
  const env: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: dataDir,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    RELAY_SMTP_URL: smtp.url,
    RELAY_MAIL_FROM: 'Bench Relay <relay@bench.example.net>',
    RELAY_SMS_PROVIDER: 'webhook',
    RELAY_SMS_URL: sms.url,
    RELAY_SMS_TOKEN: sms.token,
    BLACKLIST_INTERVAL_MINUTES: '1440',
  };
  if (databaseUrl) env.DATABASE_URL = databaseUrl;
  else delete env.DATABASE_URL;

  const results: { scenario: string; channel: Channel; n: number; p50: number; p99: number; max: number; rate?: number; lost: number }[] = [];
  let server: ChildProcess | undefined;
  try {
    // On a port the system chooses (scripts/support/processes.ts): nothing else can answer for it.
    const started = await startListening([...(process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', process.env.BENCH_CPU_PROF] : []), '--import', 'tsx', 'src/main.ts'], env, {
      // BENCH_SERVER_LOG=<file> keeps the server's log lines (warnings and errors) for a look.
      stdout: process.env.BENCH_SERVER_LOG ? openSync(process.env.BENCH_SERVER_LOG, 'w') : 'ignore',
    });
    server = started.child;
    const origin = started.origin;
    await waitFor(`${origin}/readyz`);
    // The operator's CLI makes the key (on the embedded database it joins the running server's).
    const made = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', 'keys', 'create', '--role', 'enterprise', '--json'], {
      cwd: projectRoot,
      env: { ...env, LOG_LEVEL: 'error' },
      encoding: 'utf8',
    });
    if (made.status !== 0) throw new Error(`keys create failed: ${made.stderr}`);
    const key = JSON.parse(made.stdout).key as string;

    let seq = 0;
    const send = async (channel: Channel): Promise<Sample> => {
      const n = ++seq;
      const to = channel === 'mail' ? `bench${n}@example.org` : `+4915115${String(n).padStart(6, '0')}`;
      const body = channel === 'mail' ? { recipient: to, subject: 'Your code', body_text: `Code ${n}` } : { recipient_phone: to, template_code: '2fa_code', template_vars: { code: String(100000 + (n % 900000)), expiry_min: 10 } };
      const res = await fetch(`${origin}/api/v2/relay-${channel}`, {
        method: 'POST',
        headers: { 'X-Key': key, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`relay-${channel} answered ${res.status}: ${text}`);
      return { to, acceptedAt: Date.now() };
    };

    /** Waits for every sample to arrive (30 s at most), then measures. */
    const measure = async (scenario: string, channel: Channel, samples: Sample[], firstSentAt: number) => {
      const until = Date.now() + 30_000;
      let at = deliveredAt(channel);
      while (samples.some((s) => !at.has(s.to)) && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 50));
        at = deliveredAt(channel);
      }
      const latencies = samples.filter((s) => at.has(s.to)).map((s) => Math.max(0, at.get(s.to)! - s.acceptedAt)).sort((a, b) => a - b);
      const last = Math.max(...samples.map((s) => at.get(s.to) ?? 0));
      results.push({
        scenario,
        channel,
        n: samples.length,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        max: latencies.at(-1) ?? NaN,
        rate: scenario.startsWith('burst') ? (latencies.length / (last - firstSentAt)) * 1000 : undefined,
        lost: samples.length - latencies.length,
      });
    };

    // Warm-up: a few of each, not measured (connections, JIT).
    for (let i = 0; i < 3; i++) await Promise.all([send('mail'), send('sms')]);

    for (const channel of ['mail', 'sms'] as const) {
      const samples: Sample[] = [];
      const started = Date.now();
      for (let i = 0; i < IDLE; i++) {
        const sample = await send(channel);
        samples.push(sample);
        // Idle: the previous message has gone out before the next is sent.
        const until = Date.now() + 5_000;
        while (!deliveredAt(channel).has(sample.to) && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
        await new Promise((r) => setTimeout(r, 100));
      }
      await measure('idle, one at a time', channel, samples, started);
    }

    // The burst: both channels at once, each with SENDERS concurrent senders.
    const burst = async (channel: Channel) => {
      const samples: Sample[] = [];
      const started = Date.now();
      let left = BURST;
      await Promise.all(
        Array.from({ length: SENDERS }, async () => {
          while (left > 0) {
            left--;
            samples.push(await send(channel));
          }
        }),
      );
      return { samples, started };
    };
    const [mailBurst, smsBurst] = await Promise.all([burst('mail'), burst('sms')]);
    await measure(`burst of ${BURST}, ${SENDERS} at a time, both channels at once`, 'mail', mailBurst.samples, mailBurst.started);
    await measure(`burst of ${BURST}, ${SENDERS} at a time, both channels at once`, 'sms', smsBurst.samples, smsBurst.started);
  } finally {
    if (server && server.exitCode === null && server.signalCode === null) {
      const exited = new Promise((r) => server!.once('exit', r));
      server.kill('SIGTERM');
      await exited;
    }
    await smtp.close();
    await sms.close();
    rmSync(dataDir, { recursive: true, force: true });
    if (!args.embedded) {
      const admin = new pg.Client({ connectionString: adminUrl });
      await admin.connect();
      await admin.query(`drop database if exists ${dbName} with (force)`);
      await admin.end();
    }
  }

  const database = args.embedded ? 'embedded PostgreSQL (PGlite)' : 'PostgreSQL 15';
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  const lines = [
    `Run on ${new Date().toISOString().slice(0, 10)}: ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${database};`,
    'server (one process, NODE_ENV=production), database, sinks and senders share the machine.',
    '',
    '| Scenario | Channel | Messages | p50 ms | p99 ms | max ms | msg/s | Undelivered | Target |',
    '|---|---|---:|---:|---:|---:|---:|---:|---|',
    ...results.map((r) => {
      const idle = r.scenario.startsWith('idle');
      const target = idle
        ? `p99 < ${TARGETS.idleP99} ms: ${met(r.p99 < TARGETS.idleP99 && r.lost === 0)}`
        : `p99 < ${TARGETS.burstP99} ms and >= ${TARGETS.burstRate}/s: ${met(r.p99 < TARGETS.burstP99 && (r.rate ?? 0) >= TARGETS.burstRate && r.lost === 0)}`;
      return `| ${r.scenario} | ${r.channel} | ${r.n} | ${Math.round(r.p50)} | ${Math.round(r.p99)} | ${Math.round(r.max)} | ${r.rate === undefined ? '' : Math.round(r.rate)} | ${r.lost} | ${target} |`;
    }),
  ];
  log('\n' + lines.join('\n'));
  if (!args['no-write'] && !args.quick) {
    const file = path.join(projectRoot, 'BENCHMARKS.md');
    const marker = args.embedded ? 'relay-embedded' : 'relay-postgres';
    const start = `<!-- ${marker}:start -->`;
    const end = `<!-- ${marker}:end -->`;
    const text = readFileSync(file, 'utf8');
    if (!text.includes(start)) throw new Error(`BENCHMARKS.md has no ${start} marker`);
    writeFileSync(file, text.slice(0, text.indexOf(start) + start.length) + '\n' + lines.join('\n') + '\n' + text.slice(text.indexOf(end)));
    log('BENCHMARKS.md updated');
  }
  if (results.some((r) => r.lost > 0)) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(`bench:relay: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
