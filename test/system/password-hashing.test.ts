import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { get } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../src/account/passwords.js';
import { projectRoot } from '../../src/openapi.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { freePort } from '../support/processes.js';
import { eventually } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { heading, WebClient } from '../support/web.js';

/**
 * Finding M4 (review 2026-11-26): every admitted sign-in, sign-up and reset ran scrypt (32 MiB)
 * on libuv's 4-thread pool with no bound but per source (/64), so a modest botnet or one IPv6
 * /48 saturated the pool: a relay send waited 6.7 s for its outbox write.
 *
 * Now (a) one gate per process runs at most PASSWORD_HASH_CONCURRENCY hashes at once with
 * PASSWORD_HASH_QUEUE waiting, and the pages answer 503 with Retry-After beyond; (b) the auth
 * throttle counts every IPv6 /48 (PUBLIC_V6_AGGREGATE_PREFIX) beside its /64s; (c) hashing
 * leaves 2 of libuv's threads free, and a supervisor starts its workers with a pool sized for it.
 * The hashes are counted where scrypt runs (`hashActivity`, on /metrics), not where the gate
 * admits them.
 */
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ config: { trustProxy: ['loopback'] } });
});
afterAll(async () => {
  await s?.close();
});

/** /metrics (read from loopback, as the review did), on a connection of its own: under WORKERS, from any worker. */
function metricsText(server: { origin: string }): Promise<string> {
  return new Promise((resolve, reject) => {
    get(`${server.origin}/metrics`, { agent: false }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve(text));
    }).on('error', reject);
  });
}

const metricIn = (text: string, name: string): number => {
  const match = new RegExp(`^${name} (\\d+(?:\\.\\d+)?)$`, 'm').exec(text);
  if (!match) throw new Error(`no ${name} on /metrics`);
  return Number(match[1]);
};

const metric = async (server: { origin: string }, name: string) => metricIn(await metricsText(server), name);

const digest = (action: string, email: string) => `${action}:a:${createHash('sha256').update(email).digest('base64url')}`;

async function addressAttempts(pool: TestServer['pool'], action: string, email: string): Promise<number> {
  const { rows } = await pool.query('select coalesce(sum(attempts), 0)::int as n from auth_throttle where subject = $1', [digest(action, email)]);
  return rows[0].n;
}

describe('the hashing gate', () => {
  it('runs at most PASSWORD_HASH_CONCURRENCY hashes at once; past the queue the pages answer 503 with Retry-After, having hashed, stored and counted nothing', async () => {
    // The production cost (32 MiB), two at once and two waiting.
    const busy = await startTestServer({ config: { trustProxy: ['loopback'], web: { scryptCost: 15, hashConcurrency: 2, hashQueue: 2 } } });
    try {
      const PASSWORD = 'the owner knows this';
      await busy.pool.query(
        "insert into accounts (email, role, licences, created_at, password_hash, email_verified_at) values ('hashed@example.org', 'free', 1, now(), $1, now())",
        [await hashPassword(PASSWORD, 15)],
      );
      // The dummy of unknown addresses is made at its first use: made here, before counting.
      const warm = new WebClient(busy.origin, { 'X-Forwarded-For': '192.0.2.250' });
      await warm.get('/account/sign-in');
      expect((await warm.post('/account/sign-in', { email: 'warm@example.org', password: 'not a password' })).status).toBe(401);

      // 36 browsers at 36 addresses: sign-ins for unknown addresses, wrong passwords for a known
      // one, and sign-ups; every form loaded first, then all sent at once.
      type Attempt = { kind: 'unknown' | 'wrong' | 'sign-up'; email: string; web: WebClient };
      const attempts: Attempt[] = Array.from({ length: 36 }, (_, i) => ({
        kind: (['unknown', 'wrong', 'sign-up'] as const)[i % 3]!,
        email: i % 3 === 1 ? 'hashed@example.org' : `flood${i}@example.org`,
        web: new WebClient(busy.origin, { 'X-Forwarded-For': `192.0.2.${i + 1}` }),
      }));
      await Promise.all(attempts.map((a) => a.web.get(a.kind === 'sign-up' ? '/account/register' : '/account/sign-in')));
      const [total, refused] = [await metric(busy, 'trs_password_hashes_total'), await metric(busy, 'trs_password_hash_refusals_total')];
      const pages = await Promise.all(
        attempts.map((a) =>
          a.kind === 'sign-up'
            ? a.web.post('/account/register', { email: a.email, password: 'a new long password' })
            : a.web.post('/account/sign-in', { email: a.email, password: `guess ${a.email} 123` }),
        ),
      );

      const busyPages = pages.filter((p) => p.status === 503);
      expect(busyPages.length).toBeGreaterThan(0);
      for (const [i, page] of pages.entries()) {
        expect(page.status, attempts[i]!.kind).toBe(page.status === 503 ? 503 : attempts[i]!.kind === 'sign-up' ? 200 : 401);
      }
      for (const page of busyPages) {
        expect(page.headers.get('retry-after')).toBe('2');
        expect(heading(page)).toBe('Not done');
        expect(page.text).toContain('busy');
      }
      // Never more than 2 at once, the dummy's and the sign-ups' included.
      expect(await metric(busy, 'trs_password_hashes_running_peak')).toBeLessThanOrEqual(2);
      // One hash per attempt answered, none for those refused.
      expect((await metric(busy, 'trs_password_hashes_total')) - total).toBe(pages.length - busyPages.length);
      expect((await metric(busy, 'trs_password_hash_refusals_total')) - refused).toBe(busyPages.length);
      // A refused sign-up made no account; a refused sign-in counted nothing against its address.
      for (const [i, page] of pages.entries()) {
        const { kind, email } = attempts[i]!;
        if (kind === 'sign-up') {
          const { rows } = await busy.pool.query('select count(*)::int as n from accounts where email = $1', [email]);
          expect(rows[0].n, email).toBe(page.status === 503 ? 0 : 1);
        } else if (kind === 'unknown') {
          expect(await addressAttempts(busy.pool, 'sign-in', email), email).toBe(page.status === 503 ? 0 : 1);
        }
      }
      // The burst over, the owner signs in.
      const owner = new WebClient(busy.origin, { 'X-Forwarded-For': '192.0.2.251' });
      await owner.get('/account/sign-in');
      expect((await owner.post('/account/sign-in', { email: 'hashed@example.org', password: PASSWORD })).status).toBe(303);
    } finally {
      await busy.close();
    }
  });
});

describe('the auth throttle per IPv6 /48', () => {
  it('takes 60 sign-ins per 15 minutes from all the /64s of one /48 together; another /48 is not refused', async () => {
    s.clock.advance(15 * 60_000);
    const from = (net: number, sub: number) => new WebClient(s.origin, { 'X-Forwarded-For': `2001:db8:${net}:${sub}::1` });
    // Two /64s of 2001:db8:1::/48, 30 attempts each (their own limit), two at a time.
    const run = async (web: WebClient, tag: string) => {
      await web.get('/account/sign-in');
      const statuses: number[] = [];
      for (let i = 0; i < 30; i++) statuses.push((await web.post('/account/sign-in', { email: `v6-${tag}-${i}@example.org`, password: 'not a password' })).status);
      return statuses;
    };
    const [a, b] = await Promise.all([run(from(1, 1), 'a'), run(from(1, 2), 'b')]);
    expect([...a, ...b].every((st) => st === 401)).toBe(true);
    // A third /64 of the same /48 is refused at once: no hash, nothing counted for the address.
    const third = from(1, 3);
    await third.get('/account/sign-in');
    const total = await metric(s, 'trs_password_hashes_total');
    const refused = await third.post('/account/sign-in', { email: 'v6-c@example.org', password: 'not a password' });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await metric(s, 'trs_password_hashes_total')).toBe(total);
    expect(await addressAttempts(s.pool, 'sign-in', 'v6-c@example.org')).toBe(0);
    // Another /48 is counted on its own.
    const other = from(2, 1);
    await other.get('/account/sign-in');
    expect((await other.post('/account/sign-in', { email: 'v6-d@example.org', password: 'not a password' })).status).toBe(401);
  });

  it('takes 20 resets an hour from one /48, whatever its /64s', async () => {
    const statuses: number[] = [];
    for (let sub = 1; sub <= 21; sub++) {
      const web = new WebClient(s.origin, { 'X-Forwarded-For': `2001:db8:7:${sub}::1` });
      await web.get('/account/reset');
      statuses.push((await web.post('/account/reset', { email: `reset-${sub}@example.org` })).status);
    }
    expect(statuses.slice(0, 20).every((st) => st === 200)).toBe(true);
    expect(statuses[20]).toBe(429);
    const other = new WebClient(s.origin, { 'X-Forwarded-For': '2001:db8:8:1::1' });
    await other.get('/account/reset');
    expect((await other.post('/account/reset', { email: 'reset-other@example.org' })).status).toBe(200);
  });
});

describe("libuv's thread pool", () => {
  let db: TestDatabase;
  const children: ChildProcess[] = [];
  /** This environment without a pool size of its own (the operator set none). */
  const withoutPoolSize = () => Object.fromEntries(Object.entries(process.env).filter(([k, v]) => k !== 'UV_THREADPOOL_SIZE' && v !== undefined)) as Record<string, string>;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await db?.drop();
  });

  it('a single process refuses to start with more hashes at once than its pool leaves room for, naming UV_THREADPOOL_SIZE', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: projectRoot,
      env: { ...withoutPoolSize(), DATABASE_URL: db.url, PORT: '0', HOST: '127.0.0.1', PASSWORD_HASH_CONCURRENCY: '6' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const [code] = await once(child, 'exit');
    expect(code).toBe(2);
    expect(err).toMatch(/PASSWORD_HASH_CONCURRENCY: 6 hashes at once .*UV_THREADPOOL_SIZE=8/);
  }, 60_000);

  it('the workers of a supervisor start with a pool sized for the hashing and 2 threads more', async (t) => {
    if (db.embedded) return t.skip(); // workers join a server database
    const port = await freePort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
      cwd: projectRoot,
      env: {
        ...withoutPoolSize(),
        DATABASE_URL: db.url,
        DATA_DIR: mkdtempSync(path.join(tmpdir(), 'trs-pool-')),
        LOG_LEVEL: 'info',
        BLACKLIST_INTERVAL_MINUTES: '1440',
        SHUTDOWN_DRAIN_SECONDS: '0',
        WORKERS: '2',
        PASSWORD_HASH_CONCURRENCY: '6',
        PORT: String(port),
        HOST: '127.0.0.1',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(child);
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = once(child, 'exit');
    // Both workers listening (a stop told to a worker still starting would be lost).
    const listening = () => new Set(out.split('\n').filter((l) => l.includes('"msg":"listening"')).map((l) => JSON.parse(l).pid)).size;
    await eventually(() => listening() === 2, 90_000);
    // Each answer comes from one of the two workers, a connection each: all have the pool.
    for (let i = 0; i < 6; i++) expect(await metric({ origin: `http://127.0.0.1:${port}` }, 'trs_libuv_threadpool_size')).toBe(8);
    expect(out).toMatch(/"hashConcurrency":6,"hashQueue":12,"threadPool":8,"msg":"password hashing/);
    child.kill('SIGTERM');
    expect((await exited)[0]).toBe(0);
  }, 120_000);
});
