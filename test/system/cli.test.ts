import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/openapi.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/** The operator's command line as a process: migrations on demand, imports with their progress. */
const exec = promisify(execFile);
let db: TestDatabase;
let work: string;

beforeAll(async () => {
  db = await createTestDatabase();
  work = mkdtempSync(path.join(tmpdir(), 'trs-cli-'));
});
afterAll(async () => {
  await db?.drop();
  rmSync(work, { recursive: true, force: true });
});

const trs = (args: string[], env: Record<string, string> = {}) =>
  exec(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], {
    cwd: projectRoot,
    env: { ...process.env, DATABASE_URL: db.url, DATA_DIR: path.join(work, 'data'), ...env },
    maxBuffer: 16 * 1024 * 1024,
  });

describe('trs', () => {
  it('migrates only when asked under MIGRATE_ON_START=false, and names what it applied', async (ctx) => {
    if (db.embedded) return ctx.skip('needs a PostgreSQL server to make an empty database on');
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query('create database trs_cli_empty_probe');
    await admin.end();
    const empty = Object.assign(new URL(db.url), { pathname: '/trs_cli_empty_probe' }).toString();
    try {
      await expect(trs(['keys', 'list'], { DATABASE_URL: empty, MIGRATE_ON_START: 'false' })).rejects.toThrow(
        /lacks \d+ migration\(s\) .*run `trs db migrate` first/,
      );
      const { stdout } = await trs(['db', 'migrate', '--json'], { DATABASE_URL: empty, MIGRATE_ON_START: 'false' });
      expect((JSON.parse(stdout) as { applied: string[] }).applied).toContain('Migration20261121000000Init');
      expect((await trs(['keys', 'list'], { DATABASE_URL: empty, MIGRATE_ON_START: 'false' })).stdout).toContain('no keys');
      expect(JSON.parse((await trs(['db', 'migrate', '--json'], { DATABASE_URL: empty })).stdout)).toEqual({ applied: [] });
    } finally {
      const drop = new pg.Client({ connectionString: db.url });
      await drop.connect();
      await drop.query('drop database if exists trs_cli_empty_probe with (force)');
      await drop.end();
    }
  }, 120_000);

  it('imports a CSV larger than one request, numbering refused lines in the file, one log line per step', async () => {
    const account = JSON.parse((await trs(['keys', 'create', '--role', 'honeypot', '--json'])).stdout) as { accountId: number };
    const lines = ['ip,categories,comment'];
    for (let i = 0; i < 10_004; i++) lines.push(`45.${130 + Math.floor(i / 65_536)}.${Math.floor(i / 256) % 256}.${(i % 254) + 1},18|22,import`);
    lines[10_002] = '10.0.0.1,18,a private address'; // line 10,003 of the file, in its second chunk
    const file = path.join(work, 'reports.csv');
    writeFileSync(file, lines.join('\n') + '\n');
    const { stdout, stderr } = await trs(['reports', 'import', file, '--account', String(account.accountId), '--json']).catch(
      (err: { stdout: string; stderr: string }) => err, // exit code 1: a line was refused
    );
    const result = JSON.parse(stdout) as { stored: number; refused: number; errors: { line: number; input: string }[] };
    expect(result.stored).toBe(10_003);
    expect(result.refused).toBe(1);
    expect(result.errors[0]).toMatchObject({ line: 10_003, input: '10.0.0.1,18,a private address' });
    // Not a terminal: no bars, a line when each step ends (GeoIP loading, the import).
    expect(stderr).not.toMatch(/\u001b\[/);
    expect(stderr.match(/^importing .*reports\.csv: done \(.*stored=10003, refused=1\)$/gm)).toHaveLength(1);
    expect(stderr).toMatch(/^GeoIP: country database: done/m);
  }, 120_000);
});
