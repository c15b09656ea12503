import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { projectRoot } from '../../src/openapi.js';
import { startPasswordAskingPostgres } from '../support/fake-postgres.js';
import { withDatabase } from '../support/global-setup.js';

/**
 * "The first hour", the start of the server process (`src/main.ts`, as `npm start` runs it): a
 * bad setting is refused before anything heavy is loaded; a port in use is found before any
 * database is created or migrated; a DATABASE_URL that cannot work is explained in terms of
 * DATABASE_URL and its host, without its password.
 */
const CENSUS = path.join(projectRoot, 'test', 'support', 'loaded-packages.mjs');
/** What loading the server pulls in; a refusal before the heavy imports loads none of it. */
const HEAVY = ['@mikro-orm/core', 'pg', 'express', 'pino', 'maxmind', 'pg-boss', 'express-openapi-validator'];
const folders: string[] = [];

afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

const scratch = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'trs-start-'));
  folders.push(dir);
  return dir;
};

/** Runs the server with only these settings; resolves when it exits. */
async function runServer(env: Record<string, string>) {
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', 'tsx', '--import', CENSUS, 'src/main.ts'], {
    cwd: projectRoot,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn', DATA_DIR: scratch(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  const census = /^loaded packages: (.*)$/m.exec(out)?.[1]?.split(' ') ?? [];
  return { code, out: out.replace(/^loaded packages: .*\n/m, ''), packages: census, ms: Math.round(performance.now() - started) };
}

describe('a bad setting', () => {
  it('is refused (exit 2) before the ORM, pg, Express or the GeoIP data are loaded', async () => {
    const res = await runServer({ PORT: 'eighty', DATABASE_URL: 'mysql://x' });
    expect(res.code, res.out).toBe(2);
    expect(res.out).toMatch(/^Invalid configuration:\n {2}PORT: .*\n {2}DATABASE_URL: must be a postgres:\/\/ or postgresql:\/\/ URL/);
    expect(res.packages).toContain('tsx'); // the census works
    expect(res.packages.filter((p) => HEAVY.includes(p))).toEqual([]);
    console.log(`a bad setting refused in ${res.ms} ms (node --import tsx, this machine)`);
  }, 60_000);
});

describe('a port in use', () => {
  it('is refused before a database is created, migrated or started', async () => {
    const holder = createServer().listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const port = (holder.address() as { port: number }).port;
    try {
      // The embedded database: nothing may be made under DATA_DIR.
      const dataDir = scratch();
      const embedded = await runServer({ PORT: String(port), HOST: '127.0.0.1', DATA_DIR: dataDir });
      expect(embedded.code, embedded.out).toBe(1);
      expect(embedded.out).toContain(`failed to start: 127.0.0.1:${port} is already in use (another server, or this one still running): stop it, or set PORT (and HOST) to a free one.`);
      expect(readdirSync(dataDir)).toEqual([]);
      expect(embedded.packages.filter((p) => HEAVY.includes(p))).toEqual([]);

      // A PostgreSQL server: the database DATABASE_URL names is not created.
      const provided = inject('database');
      if (provided) {
        const name = `trs_never_${randomBytes(4).toString('hex')}`;
        const server = await runServer({ PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: withDatabase(provided.adminUrl, name) });
        expect(server.code, server.out).toBe(1);
        expect(server.out).toContain(`127.0.0.1:${port} is already in use`);
        const admin = new pg.Client({ connectionString: provided.adminUrl });
        await admin.connect();
        const { rows } = await admin.query('select 1 from pg_database where datname = $1', [name]);
        await admin.end();
        expect(rows).toEqual([]);
      }
    } finally {
      holder.close();
    }
  }, 120_000);
});

describe('a DATABASE_URL that cannot work', () => {
  it('without a password, against a server that asks for one: says so, and which variable', async () => {
    const fake = await startPasswordAskingPostgres();
    try {
      const res = await runServer({ PORT: '0', DATABASE_URL: `postgres://trs@127.0.0.1:${fake.port}/trs` });
      expect(res.code, res.out).toBe(1);
      expect(res.out).toContain(
        `failed to start: the PostgreSQL server at 127.0.0.1:${fake.port} asks for a password for user "trs", and DATABASE_URL has none: ` +
          `put it in DATABASE_URL, as in postgres://trs:<password>@127.0.0.1:${fake.port}/trs`,
      );
      expect(res.out).not.toContain('SCRAM-SERVER-FIRST-MESSAGE');
      expect(res.out).not.toMatch(/\n\s+at /); // no stack trace
    } finally {
      await fake.close();
    }
  }, 60_000);

  it('with a mistyped host: names DATABASE_URL and the host, never the password', async () => {
    const res = await runServer({ PORT: '0', DATABASE_URL: 'postgres://trs:Sup3r-Secret@db.invalid:5432/trs' });
    expect(res.code, res.out).toBe(1);
    expect(res.out).toContain('failed to start: the database host "db.invalid" in DATABASE_URL does not resolve (ENOTFOUND): correct the host name in DATABASE_URL.');
    expect(res.out).toContain('DATABASE_URL is postgres://trs:***@db.invalid:5432/trs.');
    expect(res.out).not.toContain('Sup3r-Secret');
  }, 60_000);

  it('where no server answers: names the address and DATABASE_URL', async () => {
    const closed = createServer().listen(0, '127.0.0.1');
    await once(closed, 'listening');
    const port = (closed.address() as { port: number }).port;
    await new Promise((resolve) => closed.close(resolve));
    const res = await runServer({ PORT: '0', DATABASE_URL: `postgres://trs:Sup3r-Secret@127.0.0.1:${port}/trs` });
    expect(res.code, res.out).toBe(1);
    expect(res.out).toContain(`failed to start: no PostgreSQL server answers at 127.0.0.1:${port} (connection refused)`);
    expect(res.out).not.toContain('Sup3r-Secret');
  }, 60_000);
});
