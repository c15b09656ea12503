/**
 * A bounded soak on loopback: the built server under a mix of every operation at a high rate
 * for a few minutes, watching for server errors and memory growth.
 *
 *   npm run soak -- [--minutes 3] [--connections 20]
 *
 * Uses the benchmark's quick data set database (created and seeded if needed). Fails when any
 * response is a 5xx or the resident memory at the end exceeds the level after warm-up by more
 * than 10%.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import pino from 'pino';
import { connectDatabase } from '../src/db/connect.js';
import { KeyService } from '../src/keys/service.js';
import { projectRoot } from '../src/openapi.js';
import { startListening } from './support/processes.js';
import { startSmsProvider, startSmtp } from './support/sinks.js';

const { values: args } = parseArgs({ options: { minutes: { type: 'string', default: '3' }, connections: { type: 'string', default: '20' } } });
const MINUTES = Number(args.minutes);
const url = process.env.SOAK_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/trs_bench_quick';

const rss = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024;

async function main(): Promise<void> {
  // The quick benchmark data set (seeded by `bench --quick` when missing).
  execFileSync(process.execPath, ['--import', 'tsx', 'scripts/bench.ts', '--quick', '--no-write', '--duration', '1'], {
    cwd: projectRoot,
    stdio: 'ignore',
  });
  const db = await connectDatabase({ databaseUrl: url, dataDir: '.data', dbPoolMax: 2 }, pino({ level: 'silent' }));
  const service = new KeyService(db.orm.em);
  const enterprise = (await service.create({ role: 'enterprise' })).key;
  const professional = (await service.create({ role: 'professional' })).key;
  await db.close();
  const [smtp, sms] = await Promise.all([startSmtp(), startSmsProvider()]);
  // On a port the system chooses (scripts/support/processes.ts): nothing else can answer for it.
  const { child: server, origin: base } = await startListening(['dist/src/main.js'], {
    ...process.env,
    DATABASE_URL: url,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    RELAY_SMTP_URL: smtp.url,
    RELAY_MAIL_FROM: 'soak@example.net',
    RELAY_SMS_URL: sms.url,
    RELAY_SMS_TOKEN: sms.token,
    RELAY_ENTERPRISE_MAIL_CEILING: '100000000',
    RELAY_ENTERPRISE_SMS_CEILING: '100000000',
    RELAY_SITE_DAILY_CAP: '100000000',
    RELAY_RECIPIENT_FREE: '100000000',
  });
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${base}/readyz`).catch(() => undefined))?.ok) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const ip = () => `${11 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${1 + Math.floor(Math.random() * 254)}`;
  const key = { 'X-Key': enterprise };
  const json = { ...key, 'content-type': 'application/json' };
  let n = 0;
  const mix: { method?: 'GET' | 'POST'; path: () => string; headers: Record<string, string>; body?: () => string }[] = [
    { path: () => `/api/v2/check?ip=${ip()}&verbose=true`, headers: key },
    { path: () => `/api/v2/check-public?ip=${ip()}`, headers: key },
    { path: () => `/api/v2/search-public?q=8.8`, headers: key },
    { path: () => '/api/v2/categories', headers: key },
    { path: () => '/api/v2/verify-key', headers: key },
    { method: 'POST', path: () => '/api/v2/report', headers: json, body: () => JSON.stringify({ ip: ip(), categories: [14, 18] }) },
    { method: 'POST', path: () => '/api/v2/bulk-check', headers: json, body: () => JSON.stringify({ ips: Array.from({ length: 50 }, ip) }) },
    { method: 'POST', path: () => '/api/v2/bulk-report', headers: json, body: () => JSON.stringify({ csv: Array.from({ length: 20 }, () => `${ip()},22`).join('\n') }) },
    { path: () => '/api/v2/blacklist?confidence=50&limit=500', headers: key },
    { path: () => '/api/v2/blacklist-detailed?format=csv&limit=200', headers: key },
    { path: () => '/api/v2/stats-public', headers: key },
    { path: () => '/api/v2/statistics', headers: key },
    { path: () => '/api/v2/trends?period=24h', headers: key },
    { path: () => '/api/v2/attack-map-data', headers: key },
    { path: () => '/api/v2/blacklist-stats', headers: key },
    { path: () => '/api/v2/reports/8.8.8.8', headers: key },
    { path: () => '/api/v2/relay-quota', headers: { 'X-Key': professional } },
    { method: 'POST', path: () => '/api/v2/relay-mail', headers: json, body: () => JSON.stringify({ recipient: `s${n++}@example.org`, subject: 'Code', body_text: 'Code 1234' }) },
    { method: 'POST', path: () => '/api/v2/relay-sms', headers: json, body: () => JSON.stringify({ recipient_phone: '+4915112345678', template_code: '2fa_code', template_vars: { code: '1234', expiry_min: 5 } }) },
    { path: () => '/api/v2/check?ip=not-an-ip', headers: key },
  ];
  const samples: number[] = [];
  const timer = setInterval(() => samples.push(rss(server.pid!)), 1000);
  const started = Date.now();
  const result = await autocannon({
    url: base,
    connections: Number(args.connections),
    duration: MINUTES * 60,
    requests: mix.map((r) => ({ method: r.method ?? 'GET', headers: r.headers, setupRequest: (req) => ({ ...req, path: r.path(), body: r.body?.() }) })),
  });
  clearInterval(timer);
  server.kill('SIGTERM');
  await Promise.all([smtp.close(), sms.close()]);
  const stats = result.statusCodeStats ?? {};
  const serverErrors = Object.entries(stats).filter(([code]) => Number(code) >= 500).reduce((sum, [, v]) => sum + (v.count ?? 0), 0);
  const warm = samples.slice(30, 40);
  const warmRss = warm.reduce((a, b) => a + b, 0) / Math.max(1, warm.length);
  const endRss = samples.slice(-10).reduce((a, b) => a + b, 0) / Math.min(10, samples.length);
  const growth = (endRss - warmRss) / warmRss;
  console.log(
    `soak: ${Math.round((Date.now() - started) / 1000)} s, ${result.requests.total} requests (${Math.round(result.requests.average)}/s), ` +
      `statuses ${JSON.stringify(Object.fromEntries(Object.entries(stats).map(([k, v]) => [k, v.count])))}, ${serverErrors} server errors, ` +
      `RSS after warm-up ${Math.round(warmRss)} MB, at the end ${Math.round(endRss)} MB (${(growth * 100).toFixed(1)}%), peak ${Math.round(Math.max(...samples))} MB`,
  );
  if (serverErrors > 0 || growth > 0.1 || result.errors > 0) process.exitCode = 1;
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
