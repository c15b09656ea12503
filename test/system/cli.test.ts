import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The operator's command line: migrations on demand (in this process, as every other CLI test
 * runs it), and the one smoke test of the real process: an import with its progress on stderr
 * and its exit code.
 */
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

const settings = (env: Record<string, string>) => ({ ...process.env, DATABASE_URL: db.url, DATA_DIR: path.join(work, 'data'), ...env });
const trs = (args: string[], env: Record<string, string> = {}) => runCli(settings(env), ...args);

describe('trs', () => {
  it('migrates only when asked under MIGRATE_ON_START=false, and names what it applied', async (ctx) => {
    if (db.embedded) return ctx.skip('needs a PostgreSQL server to make an empty database on');
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    await admin.query('create database trs_cli_empty_probe');
    await admin.end();
    const empty = Object.assign(new URL(db.url), { pathname: '/trs_cli_empty_probe' }).toString();
    try {
      const refused = await trs(['keys', 'list'], { DATABASE_URL: empty, MIGRATE_ON_START: 'false' });
      expect(refused.code).toBe(1);
      expect(refused.err).toMatch(/lacks \d+ migration\(s\) .*run `trs db migrate` first/);
      const migrated = await trs(['db', 'migrate', '--json'], { DATABASE_URL: empty, MIGRATE_ON_START: 'false' });
      expect(migrated.code, migrated.err).toBe(0);
      expect((JSON.parse(migrated.out) as { applied: string[] }).applied).toContain('Migration20261121000000Init');
      const listed = await trs(['keys', 'list'], { DATABASE_URL: empty, MIGRATE_ON_START: 'false' });
      expect(listed.code, listed.err).toBe(0);
      expect(listed.out).toContain('no keys');
      const again = await trs(['db', 'migrate', '--json'], { DATABASE_URL: empty });
      expect(again.code, again.err).toBe(0);
      expect(JSON.parse(again.out)).toEqual({ applied: [] });
    } finally {
      const drop = new pg.Client({ connectionString: db.url });
      await drop.connect();
      await drop.query('drop database if exists trs_cli_empty_probe with (force)');
      await drop.end();
    }
  }, 120_000);

  it('imports a CSV larger than one request, numbering refused lines in the file, one log line per step', async () => {
    const created = await trs(['keys', 'create', '--role', 'honeypot', '--json']);
    expect(created.code, created.err).toBe(0);
    const account = JSON.parse(created.out) as { accountId: number };
    const lines = ['ip,categories,comment'];
    for (let i = 0; i < 10_004; i++) lines.push(`45.${130 + Math.floor(i / 65_536)}.${Math.floor(i / 256) % 256}.${(i % 254) + 1},18|22,import`);
    lines[10_002] = '10.0.0.1,18,a private address'; // line 10,003 of the file, in its second chunk
    const file = path.join(work, 'reports.csv');
    writeFileSync(file, lines.join('\n') + '\n');
    // The real process (src/cli/index.ts): its exit code is 1, since a line was refused.
    const { out: stdout, err: stderr, code } = await spawnCli(settings({}), 'reports', 'import', file, '--account', String(account.accountId), '--json');
    expect(code, stderr).toBe(1);
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
