import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** `trs bouncers add|list|set|delete`, run as an operator runs them, seen through the bouncer API. */
let s: TestServer;
let dir: string;

beforeAll(async () => {
  s = await startTestServer();
  dir = mkdtempSync(path.join(tmpdir(), 'trs-bouncers-'));
});
afterAll(async () => {
  await s?.close();
  rmSync(dir, { recursive: true, force: true });
});

function trs(...args: string[]) {
  const env = { ...process.env, DATABASE_URL: s.db.url, DATA_DIR: dir, LOG_LEVEL: 'warn' };
  return runCli(env, ...args);
}

const pull = (key: string) => call(s.origin, '/crowdsec/v1/decisions/stream?startup=true', { headers: { 'X-Api-Key': key } });

describe('trs bouncers', () => {
  it('adds a bouncer and shows its key once; lists without it; sets its choice; deletes it', async (t) => {
    if (s.db.embedded) return t.skip(); // the CLI joins the server's database: a second process on a server
    const added = await trs('bouncers', 'add', 'edge-fw', '--confidence', '80', '--categories', '22,18');
    expect(added.code).toBe(0);
    const key = /^\s+(trsb_[A-Za-z0-9_-]{43})$/m.exec(added.out)![1]!;
    expect(added.out).toContain("API key for 'edge-fw':");
    expect(added.out).toContain('api_url: https://<this server>/crowdsec/');
    expect((await pull(key)).status).toBe(200);

    const listed = JSON.parse((await trs('bouncers', 'list', '--json')).out);
    expect(listed).toEqual([expect.objectContaining({ name: 'edge-fw', confidence: 80, categories: [18, 22], limit: null, keyPrefix: key.slice(0, 13) })]);
    expect(JSON.stringify(listed)).not.toContain(key);
    const text = (await trs('bouncers', 'list')).out;
    expect(text).toMatch(/^edge-fw {2}trsb_\S+… {2}confidence >= 80, categories 18,22 {2}last pull 20/m);
    expect(text).not.toContain(key);

    const set = JSON.parse((await trs('bouncers', 'set', 'edge-fw', '--confidence', '95', '--categories', 'all', '--limit', '5000', '--json')).out);
    expect(set).toMatchObject({ confidence: 95, categories: null, limit: 5000 });

    const json = JSON.parse((await trs('bouncers', 'add', 'second', '--json')).out);
    expect(json).toMatchObject({ name: 'second', confidence: 90, key: expect.stringMatching(/^trsb_/) });

    expect((await trs('bouncers', 'delete', 'edge-fw')).code).toBe(0);
    expect((await pull(key)).status).toBe(403);
    expect((await trs('bouncers', 'delete', 'edge-fw')).code).toBe(1);
  }, 120_000);

  it('refuses a taken name, a bad name, unknown categories and bad scores, in one sentence', async (t) => {
    if (s.db.embedded) return t.skip();
    await trs('bouncers', 'add', 'taken');
    const again = await trs('bouncers', 'add', 'taken');
    expect(again.code).toBe(1);
    expect(again.err).toMatch(/exists already/);
    expect((await trs('bouncers', 'add', 'bad name')).err).toMatch(/is not a bouncer name/);
    expect((await trs('bouncers', 'add', 'x', '--categories', '9999')).err).toMatch(/Unknown threat-category id 9999/);
    expect((await trs('bouncers', 'add', 'y', '--confidence', '101')).code).not.toBe(0);
    expect((await trs('bouncers', 'set', 'nobody', '--confidence', '50')).err).toMatch(/no bouncer named 'nobody'/);
  }, 120_000);
});
