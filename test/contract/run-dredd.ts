/**
 * The contract test: starts the real server (src/main.ts) on a fresh database, creates a key
 * for every role, and runs Dredd over the bundled document with test/contract/hooks.cjs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import pino from 'pino';
import { connectDatabase } from '../../src/db/connect.js';
import { ROLES } from '../../src/db/entities.js';
import { KeyService } from '../../src/keys/keys.js';
import { projectRoot } from '../../src/openapi.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';

const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

async function serverDatabase(): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const adminUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? DEFAULT_URL;
  const admin = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 2_000 });
  try {
    await admin.connect();
  } catch {
    return undefined;
  }
  const name = `trs_dredd_${randomBytes(5).toString('hex')}`;
  await admin.query(`create database ${name}`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = '/' + name;
  return {
    url: u.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

async function waitForReady(origin: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    try {
      const res = await fetch(origin + '/readyz');
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('server did not become ready in 60 s');
}

async function main(): Promise<number> {
  const database = await serverDatabase();
  // The relay delivers to a real SMTP server and an HTTP SMS provider on loopback.
  const [smtp, sms] = await Promise.all([startSmtp(), startSmsProvider()]);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'trs-dredd-'));
  const port = await freePort();
  const env = {
    ...process.env,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    DATABASE_URL: database?.url ?? '',
    RELAY_SMTP_URL: smtp.url,
    RELAY_MAIL_FROM: 'Relay <relay@example.net>',
    RELAY_SMS_URL: sms.url,
    RELAY_SMS_TOKEN: sms.token,
  };
  if (!database) delete (env as Record<string, string>).DATABASE_URL;
  console.log(`contract: server on port ${port}, ${database ? 'PostgreSQL server' : 'embedded PostgreSQL'}`);
  const server = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: projectRoot, env, stdio: 'inherit' });
  try {
    const origin = `http://127.0.0.1:${port}`;
    await waitForReady(origin, server);
    const db = await connectDatabase(
      { databaseUrl: database?.url, dataDir, dbPoolMax: 2 },
      pino({ level: 'silent' }),
      { migrate: false },
    );
    const keys: Record<string, string> = {};
    try {
      const service = new KeyService(db.orm.em);
      for (const role of ROLES) {
        keys[role] = (await service.create({ role, licences: role === 'business' ? 2 : undefined })).key;
      }
    } finally {
      await db.close();
    }
    const dredd = spawn(
      path.join(projectRoot, 'node_modules', '.bin', 'dredd'),
      ['generated/openapi.yaml', origin, '--hookfiles', 'test/contract/hooks.cjs', '--loglevel', 'error'],
      { cwd: projectRoot, env: { ...process.env, TRS_KEYS: JSON.stringify(keys) }, stdio: 'inherit' },
    );
    return await new Promise<number>((resolve) => dredd.on('exit', (code) => resolve(code ?? 1)));
  } finally {
    server.kill('SIGTERM');
    await new Promise((r) => server.once('exit', r));
    await database?.drop();
    await Promise.all([smtp.close(), sms.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
