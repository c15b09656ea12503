import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { call } from '../support/http.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { startTestServerOn, type TestServer } from '../support/server.js';

/**
 * PostgreSQL stops and starts again under load (through a proxy that drops every connection
 * and refuses new ones): requests fail fast with 503 in the envelope, /readyz reports the
 * outage, the server recovers by itself, and every report answered 200 is stored exactly once
 * and charged exactly once.
 */
let db: TestDatabase;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let s: TestServer;

beforeAll(async () => {
  db = await createTestDatabase();
  const target = new URL(db.url);
  proxy = await startTcpProxy(target.hostname, Number(target.port || 5432));
  const viaProxy = new URL(db.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  s = await startTestServerOn({ ...db, url: viaProxy.toString() });
});
afterAll(async () => {
  await s?.close();
  await proxy?.close();
  await db?.drop();
});

describe('the database stops and starts under load', () => {
  it('fails fast with 503, reports the outage, recovers, and loses or doubles nothing', async () => {
    const { key, accountId } = await s.createKey('enterprise');
    const answered = new Map<string, number>();
    const durations: number[] = [];
    let next = 0;
    let running = true;
    const worker = async () => {
      while (running) {
        const ip = `8.${(next >> 16) & 255}.${(next >> 8) & 255}.${next++ & 255}`;
        const started = Date.now();
        const res = await call(s.origin, '/api/v2/report', { key, json: { ip, categories: [14] } });
        durations.push(Date.now() - started);
        answered.set(ip, res.status);
        if (res.status >= 500) {
          expect(res.status).toBe(503);
          expect(res.body.meta).toMatchObject({ success: false, code: 503 });
        }
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, worker));
    await new Promise((r) => setTimeout(r, 800));
    await proxy.cut();
    await new Promise((r) => setTimeout(r, 300));
    const ready = await call(s.origin, '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: 'unavailable', database: 'down' });
    const during = await call(s.origin, '/api/v2/check?ip=8.8.8.8', { key: 'trs_' + 'Z'.repeat(43) });
    expect(during.status).toBe(503);
    await new Promise((r) => setTimeout(r, 1200));
    await proxy.restore();
    let recovered = false;
    for (let i = 0; i < 100 && !recovered; i++) {
      recovered = (await call(s.origin, '/readyz')).status === 200;
      if (!recovered) await new Promise((r) => setTimeout(r, 100));
    }
    expect(recovered).toBe(true);
    await new Promise((r) => setTimeout(r, 800));
    running = false;
    await load;

    const ok = [...answered].filter(([, status]) => status === 200).map(([ip]) => ip);
    const failed = [...answered].filter(([, status]) => status === 503);
    expect(ok.length).toBeGreaterThan(10);
    expect(failed.length).toBeGreaterThan(0);
    expect([...answered.values()].every((status) => status === 200 || status === 503)).toBe(true);
    expect(Math.max(...durations)).toBeLessThan(6_000); // no request hangs

    const direct = new pg.Client({ connectionString: db.url });
    await direct.connect();
    try {
      const { rows } = await direct.query<{ ip: string; n: number }>(
        'select ip, count(*)::int as n from reports where ip = any($1::text[]) group by ip',
        [ok],
      );
      expect(rows).toHaveLength(ok.length);
      expect(rows.every((r) => r.n === 1)).toBe(true);
      const { rows: stored } = await direct.query<{ n: number }>('select count(*)::int as n from reports');
      const { rows: charged } = await direct.query<{ used: number }>(
        `select coalesce(sum(used), 0)::int as used from usage_counters where subject = $1 and counter = 'report'`,
        [`a:${accountId}`],
      );
      // A charge commits with its report: what is stored is what is charged.
      expect(charged[0]!.used).toBe(stored[0]!.n);
      console.log(`faults: ${answered.size} reports sent, ${ok.length} answered 200, ${failed.length} answered 503, 1 outage, 0 lost, 0 doubled`);
    } finally {
      await direct.end();
    }
  });

  it('answers the web pages 503 with Retry-After while the database is down, logged once', async () => {
    const page = (path: string) => fetch(s.origin + path, { headers: { 'X-Forwarded-For': '203.0.113.7' } });
    expect((await page('/')).status).toBe(200);
    const logged = () => s.logs.filter((line) => line.includes('"component":"web"')).length;
    const before = logged();
    await proxy.cut();
    try {
      for (const path of ['/', '/lookup?ip=8.8.8.8', '/']) {
        const res = await page(path);
        expect(res.status, path).toBe(503);
        expect(res.headers.get('retry-after')).toBe('5');
        expect(res.headers.get('content-type')).toMatch(/^text\/html/);
        expect(await res.text()).toContain('cannot reach its database');
      }
      expect(logged() - before).toBe(1); // one line for the incident, not one per page
    } finally {
      await proxy.restore();
    }
    let back = 0;
    for (let i = 0; i < 100 && back !== 200; i++) {
      back = (await page('/')).status;
      if (back !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(back).toBe(200);
  });
});
