import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { connectDatabase } from '../../src/db/connect.js';
import { startEmbedded, type EmbeddedDatabase } from '../../src/db/embedded.js';
import { projectRoot } from '../../src/openapi.js';

/**
 * Finding 2 (MEDIUM): the embedded database accepted anyone on loopback as superuser, and its
 * port was in a world-readable file. It now listens on a Unix socket inside a folder only its
 * user may enter, opens no TCP port, and keeps its marker file private.
 */
let dataDir: string;
let db: EmbeddedDatabase;

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'trs-embedded-'));
  db = await startEmbedded(path.join(dataDir, 'data'));
});
afterAll(async () => {
  await db?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

const mode = async (p: string) => (await stat(p)).mode & 0o777;

describe('the embedded database', () => {
  it('listens on a Unix socket in a private folder under DATA_DIR, not on TCP', async () => {
    const host = decodeURIComponent(new URL(db.url).hostname);
    expect(host).toBe(path.join(dataDir, 'data', 'run'));
    expect(await mode(host)).toBe(0o700);
    expect(await mode(path.join(dataDir, 'data'))).toBe(0o700);
    expect((await stat(path.join(host, '.s.PGSQL.5432'))).isSocket()).toBe(true);
    const marker = path.join(dataDir, 'data', 'embedded.json');
    expect(await mode(marker)).toBe(0o600);
    expect(JSON.parse(await readFile(marker, 'utf8')).url).toBe(db.url);
    expect(db.url).not.toMatch(/127\.0\.0\.1|localhost/);
  });

  it('opens no TCP listener: its only server in this process is the Unix socket (on any platform, as any user)', () => {
    // Every listening server of this process, as Node holds it: a TCP one has an address
    // object with a port, a Unix socket's address is its path. This test file starts nothing else.
    const handles = (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
    const listening = handles.filter((h): h is net.Server => h instanceof net.Server && h.listening).map((h) => h.address());
    const socketPath = path.join(decodeURIComponent(new URL(db.url).hostname), '.s.PGSQL.5432');
    expect(listening).toContain(socketPath);
    expect(listening.filter((a) => typeof a !== 'string')).toEqual([]);
  });

  it('keeps its folders closed to group and others, and owned by its user', async () => {
    const host = decodeURIComponent(new URL(db.url).hostname);
    for (const dir of [host, path.join(dataDir, 'data')]) {
      const info = await stat(dir);
      expect(info.mode & 0o077, dir).toBe(0);
      if (process.getuid) expect(info.uid, dir).toBe(process.getuid());
    }
  });

  it('serves its own user', async () => {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    expect((await client.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    await client.end();
  });

  it('refuses another local user', (ctx) => {
    ctx.skip(process.getuid?.() !== 0, 'needs root, to run a client as the user nobody');
    // Run as `nobody`: the socket's folder is closed to it, whatever PGlite would accept.
    const script = `const pg = require('pg'); const c = new pg.Client({ connectionString: process.argv[1] });
      c.connect().then(() => { console.log('CONNECTED'); return c.end(); }, (e) => { console.log('REFUSED ' + e.code); });`;
    const result = spawnSync(process.execPath, ['-e', script, db.url], { uid: 65534, gid: 65534, cwd: projectRoot, encoding: 'utf8', timeout: 20_000 });
    expect(result.stdout.trim()).toBe('REFUSED EACCES');
  });

  it('takes every migration on a fresh data folder, as `npm start` without DATABASE_URL does', { timeout: 120_000 }, async () => {
    // The embedded database is PostgreSQL 17: a migration that only the server's version
    // accepts (the partitioned reports did, once) would stop the first start of a newcomer.
    const fresh = await connectDatabase({ databaseUrl: undefined, dataDir: path.join(dataDir, 'fresh'), dbPoolMax: 2 }, pino({ level: 'silent' }), { migrate: 'apply' });
    try {
      const { rows } = await fresh.pool.query<{ partitions: number }>("select count(*)::int as partitions from pg_inherits where inhparent = 'reports'::regclass");
      expect(rows[0]!.partitions).toBeGreaterThanOrEqual(5);
    } finally {
      await fresh.close();
    }
  });
});
