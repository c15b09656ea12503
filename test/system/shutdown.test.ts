import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase } from '../../src/db/connect.js';
import { KeyService } from '../../src/keys/service.js';
import { projectRoot } from '../../src/openapi.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';

/**
 * SIGTERM under load: the real server process answers every request it accepted, and no
 * queued relay message is lost: the next process delivers what the stopped one left queued.
 */
let db: TestDatabase;
const children: ChildProcess[] = [];

async function freePort(): Promise<number> {
  const srv = createServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

async function startProcess(env: Record<string, string>): Promise<{ child: ChildProcess; origin: string; logs: () => { msg: string; time: number }[] }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: projectRoot,
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', BLACKLIST_INTERVAL_MINUTES: '1440' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const logs = () =>
    out
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { msg: string; time: number });
  const origin = `http://127.0.0.1:${port}`;
  await eventually(async () => (await fetch(`${origin}/readyz`).catch(() => undefined))?.status === 200, 60_000);
  return { child, origin, logs };
}

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await db?.drop();
});

describe('graceful shutdown', () => {
  it('answers every in-flight request and leaves no queued relay message behind', async (ctx) => {
    if (db.embedded) return ctx.skip('needs two processes on one PostgreSQL server');
    const smtpPort = await freePort(); // nothing listens yet: deliveries fail and stay queued
    const env = {
      DATABASE_URL: db.url,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'trs-shutdown-')),
      RELAY_SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
      RELAY_MAIL_FROM: 'relay@example.net',
      RELAY_RETRY_LIMIT: '20',
      RELAY_RETRY_DELAY_SECONDS: '3', // few failed tries while SMTP is down, so the backoff stays short
      SHUTDOWN_DRAIN_SECONDS: '1',
    };
    const first = await startProcess(env);
    const admin = await connectDatabase({ databaseUrl: db.url, dataDir: '.data', dbPoolMax: 2 }, pino({ level: 'silent' }), { migrate: 'skip' });
    const { key } = await new KeyService(admin.orm.em).create({ role: 'enterprise' });
    await admin.close();

    const headers = { 'X-Key': key, 'content-type': 'application/json' };
    // Mails the relay accepts while no SMTP server answers: they wait in the queue.
    const mails = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${first.origin}/api/v2/relay-mail`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ recipient: `user${i}@example.org`, subject: 'Code', body_text: `Code ${1000 + i}` }),
        }),
      ),
    );
    expect(mails.every((r) => r.status === 200)).toBe(true);

    // Load: workers send requests on fresh connections until the server stops accepting.
    const answered: number[] = [];
    const failed: { code: string; at: number }[] = [];
    const worker = async (w: number) => {
      for (let i = 0; ; i++) {
        try {
          const res = await fetch(`${first.origin}/api/v2/check?ip=8.8.${w}.${i & 255}`, { headers: { ...headers, connection: 'close' } });
          await res.arrayBuffer();
          answered.push(res.status);
        } catch (err) {
          failed.push({ code: String((err as { cause?: { code?: string } }).cause?.code ?? err), at: Date.now() });
          return;
        }
      }
    };
    const load = Promise.all(Array.from({ length: 16 }, (_, w) => worker(w)));
    await new Promise((r) => setTimeout(r, 1000));
    first.child.kill('SIGTERM');
    const [code] = await once(first.child, 'exit');
    await load;
    expect(code).toBe(0);
    // A request fails only once the listener closed: refused at connect (ECONNREFUSED), or reset
    // because its connection still waited in the kernel's accept queue when the listening socket
    // closed (the kernel resets those; the server never read them). No reset before the close:
    // a request on a connection the server had accepted is never dropped.
    const closedAt = first.logs().find((l) => l.msg === 'stopping: no new connections, finishing in-flight requests')?.time;
    expect(closedAt).toBeDefined();
    const refused = failed.filter((f) => f.code === 'ECONNREFUSED').length;
    const resetAtClose = failed.filter((f) => f.code === 'ECONNRESET' && f.at >= closedAt!).length;
    expect(failed.filter((f) => f.code !== 'ECONNREFUSED' && !(f.code === 'ECONNRESET' && f.at >= closedAt!))).toEqual([]);
    // Every request the server accepted was answered, and answered well: each /check it
    // processed charged the check quota once, and that count equals the answers received, so
    // none of the resets above was a request the server had taken.
    expect(answered.length).toBeGreaterThan(10);
    expect(answered.every((status) => status === 200)).toBe(true);

    const direct = new pg.Client({ connectionString: db.url });
    await direct.connect();
    const charged = (await direct.query<{ n: number }>("select coalesce(sum(used), 0)::int as n from usage_counters where counter = 'check'")).rows[0]!.n;
    expect(charged).toBe(answered.length);
    const queued = (await direct.query<{ n: number }>("select count(*)::int as n from relay_messages where status = 'queued'")).rows[0]!.n;
    expect(queued).toBe(mails.length); // none was lost by the stop

    const smtp = await startSmtp(smtpPort);
    try {
      await startProcess(env);
      await eventually(async () => {
        const { rows } = await direct.query<{ n: number }>("select count(*)::int as n from relay_messages where status = 'sent'");
        return rows[0]!.n === mails.length;
      }, 150_000);
      // Each mail delivered once: as many deliveries as mails, each recipient once.
      const delivered = smtp.received.flatMap((m) => m.envelopeTo).sort();
      expect(delivered).toEqual(Array.from({ length: mails.length }, (_, i) => `user${i}@example.org`).sort());
      console.log(
        `shutdown: ${answered.length} requests answered under load, 0 failed, after the listener closed ${refused} refused at connect and ${resetAtClose} reset in the accept queue, ${charged} requests processed = answered, ` +
          `${mails.length} mails queued at SIGTERM, ${mails.length} delivered by the next process, 0 lost`,
      );
    } finally {
      await direct.end();
      await smtp.close();
    }
  }, 240_000);
});
