import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maintainReports, purgeAccounts, purgeSettingsOf } from '../../src/account/job.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { DAY_MS, HOUR_MS, ManualClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { connectDatabase } from '../../src/db/connect.js';
import { BlacklistJob } from '../../src/blacklist/job.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { withDatabase } from '../support/global-setup.js';
import { call } from '../support/http.js';
import { pgbouncerMissing, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { serverProcesses } from '../support/processes.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';
import { startTestServerOn, type TestServer } from '../support/server.js';
import { requireTools } from '../support/tools.js';

/**
 * Issue 27, item 4: the server behind a real PgBouncer 1.18 in transaction mode. DATABASE_URL is
 * the bouncer's; DATABASE_DIRECT_URL reaches PostgreSQL for what keeps session state
 * (migrations and their lock, pg-boss, the relay's LISTEN). Every statement of the API, the
 * relay's dispatch and the jobs goes through the bouncer: named prepared statements would fail
 * ("prepared statement does not exist") as soon as two transactions of one client land on two
 * server connections, and session state would leak between clients.
 */
const missing = pgbouncerMissing();
const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

let db: TestDatabase;
let bouncer: PgBouncer;
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let dbName: string;

beforeAll(async () => {
  if (missing) return;
  db = await createTestDatabase();
  cleanups.push(() => db.drop());
  if (db.embedded) return;
  // Under TEST_PGBOUNCER=1 the database is already behind one: this test starts its own in front of PostgreSQL.
  const direct = db.directUrl ?? db.url;
  dbName = decodeURIComponent(new URL(direct).pathname.slice(1));
  bouncer = await startPgBouncer(direct, { poolSize: 6 });
  cleanups.push(() => bouncer.stop());
  smtp = await startSmtp();
  cleanups.push(() => smtp.close());
  s = await startTestServerOn(
    { url: bouncer.through(direct), directUrl: direct, embedded: false, drop: async () => undefined },
    {
      config: {
        relay: { mail: { smtpUrl: smtp.url, from: 'Relay <relay@mail.example.net>' }, delivery: { pollSeconds: 300 } as never },
        reportBatching: { ms: 5, max: 100 },
      },
    },
  );
  cleanups.push(() => s.close());
  s.clock.set('2026-06-15T12:00:00Z');
}, 60_000);

const api = (path: string, o: Parameters<typeof call>[2] = {}, server = s) => call(server.origin, `/api/v2${path}`, o);

describe('through PgBouncer in transaction mode', () => {
  it('runs on the bouncer: unnamed statements, the statement timeout from connect_query', async (ctx) => {
    requireTools(ctx, missing);
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const before = await bouncer.stats(dbName);
    const { rows } = await s.pool.query<{ statement_timeout: string }>('show statement_timeout');
    expect(rows[0]!.statement_timeout).toBe('15s');
    const after = await bouncer.stats(dbName);
    expect(after.transactions).toBeGreaterThan(before.transactions);
  });

  it('migrates an empty database on the direct URL while the pool goes through the bouncer', async (ctx) => {
    requireTools(ctx, missing);
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const direct = db.directUrl ?? db.url;
    const name = `trs_pgb_${Date.now().toString(36)}`;
    cleanups.push(async () => {
      const c = new pg.Client({ connectionString: withDatabase(direct, 'postgres') });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    });
    // The database does not exist: it is created on the direct URL (a pooler creates none), then migrated there.
    const database = await connectDatabase(
      { databaseUrl: bouncer.through(withDatabase(direct, name)), databaseDirectUrl: withDatabase(direct, name), dataDir: '.', dbPoolMax: 2 },
      pino({ level: 'silent' }),
      { migrate: 'apply' },
    );
    try {
      expect(database.pooled).toBe(true);
      expect(database.applied.length).toBeGreaterThan(5);
      const { rows } = await database.pool.query<{ n: number }>('select count(*)::int as n from mikro_orm_migrations');
      expect(rows[0]!.n).toBe(database.applied.length);
      expect((await bouncer.stats(name)).transactions).toBeGreaterThan(0);
    } finally {
      await database.close();
    }
  }, 120_000);

  it('keys, /check, batched /report, /bulk-report and the blacklist job', async (ctx) => {
    requireTools(ctx, missing);
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const reporters = await Promise.all([s.createKey('professional'), s.createKey('professional'), s.createKey('professional')]);
    // 60 reports at once: gathered into group commits (REPORT_BATCH_MS=5), each a transaction on one server connection.
    const ips = Array.from({ length: 20 }, (_, i) => `45.77.1.${i + 1}`);
    const reports = await Promise.all(
      reporters.flatMap((r) => ips.map((ip) => api('/report', { key: r.key, json: { ip, categories: [18, 22], comment: 'ssh brute force' } }))),
    );
    expect(reports.map((r) => r.status)).toEqual(reports.map(() => 200));
    const checked = await api(`/check?ip=${ips[0]}&verbose=true`, { key: reporters[0]!.key });
    expect(checked.status, JSON.stringify(checked.body)).toBe(200);
    expect(checked.body.data).toMatchObject({ ip: ips[0], totalReports: 3 });

    const bulkKey = await s.createKey('enterprise');
    const csv = ['IP,Categories,Comment', ...Array.from({ length: 500 }, (_, i) => `45.77.${2 + (i % 2)}.${(i % 250) + 1},18|22,bulk ${i}`)].join('\n');
    const bulk = await api('/bulk-report', { key: bulkKey.key, json: { csv } });
    expect(bulk.status).toBe(200);
    expect(bulk.body.data).toMatchObject({ success_count: 500, error_count: 0 });
    expect((await api('/check?ip=45.77.2.1', { key: bulkKey.key })).body.data.totalReports).toBeGreaterThanOrEqual(1);

    const job = new BlacklistJob(blacklistSnapshots(s.pool, s.clock), 15 * 60_000, pino({ level: 'silent' }));
    expect(await job.runIfDue()).toBe(true);
    const list = await api('/blacklist?format=txt&confidence=0&confidenceMinimum=25', { key: reporters[2]!.key });
    expect(list.status).toBe(200);
    const listed = String(list.body).trim().split('\n');
    expect(listed).toEqual(expect.arrayContaining(ips));
    const etag = list.headers.get('etag')!;
    expect((await api('/blacklist?format=txt&confidence=0&confidenceMinimum=25', { key: reporters[2]!.key, headers: { 'If-None-Match': etag } })).status).toBe(304);
  }, 60_000);

  it("hands the relay's mail to SMTP at once (pg-boss and LISTEN on the direct URL), then the purge jobs run through the bouncer", async (ctx) => {
    requireTools(ctx, missing);
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const { key } = await s.createKey('professional');
    const recipient = 'pgbouncer-relay@example.org';
    const res = await api('/relay-mail', { key, json: { recipient, subject: 'Your code', body_text: 'Code 482910' } });
    expect(res.status).toBe(200);
    // Polling is every 300 s: an arrival within seconds is the LISTEN wake-up on commit.
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(recipient)), 10_000);
    await eventually(async () => (await s.pool.query<{ status: string }>('select status from relay_messages where id = $1', [res.body.queue_id])).rows[0]?.status === 'sent');
    // pg-boss and the listener hold direct connections; nothing else of the server does.
    const direct = new pg.Client({ connectionString: db.directUrl ?? db.url });
    await direct.connect();
    const { rows: sessions } = await direct.query<{ application_name: string }>(
      "select distinct application_name from pg_stat_activity where datname = current_database() and application_name like 'trs-%'",
    );
    await direct.end();
    expect(sessions.map((r) => r.application_name).sort()).toEqual(['trs-relay', 'trs-relay-listener']);

    s.clock.advance(48 * HOUR_MS);
    const settings = purgeSettingsOf(loadConfig({}));
    const purged = await purgeAccounts(s.pool, s.clock, settings);
    expect(purged?.relayPayloads).toBeGreaterThanOrEqual(1);
    expect(purged?.usageCounters).toBeGreaterThanOrEqual(1);
    // 400 days on, the partitions job makes that month and the 3 after it, and takes out June 2026's
    // reports past the retention, recomputing their addresses (DDL and all through the bouncer).
    const partitions = async () => (await s.pool.query<{ n: number }>("select count(*)::int as n from pg_inherits where inhparent = 'reports'::regclass")).rows[0]!.n;
    const before = await partitions();
    const reports = await maintainReports(s.pool, new ManualClock(new Date(s.clock.now().getTime() + 400 * DAY_MS)), settings);
    expect(reports.created).toHaveLength(4);
    // June's rows: the 60 reports, and the bulk report's 500 lines on 250 addresses, each address's two merged (the 5-minute rule).
    expect(reports.reports).toBe(310);
    expect(await partitions()).toBe(before + reports.created.length - reports.partitions.length);
    const { rows: gone } = await s.pool.query<{ n: number }>("select count(*)::int as n from ip_stats where ip like '45.77.%'");
    expect(gone[0]!.n).toBe(0);
  }, 60_000);

  it('counts daily quotas exactly across two server processes sharing the bouncer', async (ctx) => {
    requireTools(ctx, missing);
    if (db.embedded) return ctx.skip('needs a PostgreSQL server');
    const processes = serverProcesses();
    cleanups.push(() => processes.killAll());
    const env = {
      DATABASE_URL: bouncer.through(db.directUrl ?? db.url),
      DATABASE_DIRECT_URL: db.directUrl ?? db.url,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'trs-pgbouncer-')),
      MIGRATE_ON_START: 'false',
    };
    const [a, b] = await Promise.all([processes.start(env), processes.start(env)]);
    const free = await s.createKey('free');
    // A Free key has 50 reports a day: 70 at once, alternating between the processes.
    const answers = await Promise.all(
      Array.from({ length: 70 }, (_, i) => call(i % 2 ? a.origin : b.origin, '/api/v2/report', { key: free.key, json: { ip: `45.77.3.${i + 1}`, categories: [4] } })),
    );
    const statuses = answers.reduce<Record<number, number>>((t, r) => ({ ...t, [r.status]: (t[r.status] ?? 0) + 1 }), {});
    expect(statuses).toEqual({ 200: 50, 429: 20 });
    const { rows } = await s.pool.query<{ used: number; stored: number }>(
      `select (select coalesce(sum(used), 0)::int from usage_counters where subject = $1 and counter = 'report') as used,
              (select count(*)::int from reports where account_id = $2) as stored`,
      [`a:${free.accountId}`, free.accountId],
    );
    expect(rows[0]).toEqual({ used: 50, stored: 50 });
    processes.killAll();
  }, 120_000);
});
