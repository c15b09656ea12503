import { once } from 'node:events';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** The OWASP API Security Top 10 (2023), each with what this server does about it. */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const seenBodies: string[] = [];

const api = async (path: string, o: Parameters<typeof call>[2] = {}) => {
  const res = await call(s.origin, `/api/v2${path}`, o);
  seenBodies.push(typeof res.body === 'string' ? res.body : JSON.stringify(res.body));
  return res;
};

async function tableCounts() {
  const { rows } = await s.pool.query<{ reports: number; ips: number; used: number; relay: number; keys: number }>(
    `select (select count(*) from reports)::int as reports, (select count(*) from ip_stats)::int as ips,
            (select coalesce(sum(used), 0) from usage_counters)::int as used,
            (select count(*) from relay_messages)::int as relay, (select count(*) from api_keys)::int as keys`,
  );
  return rows[0]!;
}

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  s = await startTestServer({
    config: { relay: { mail: { smtpUrl: smtp.url, from: 'relay@example.net' }, sms: { url: sms.url, token: sms.token }, smsFreeTextRoles: ['professional'] } },
    timeouts: { headersMs: 1_000, requestMs: 2_000, keepAliveMs: 1_000 },
  });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

describe('API1 broken object level authorization', () => {
  it('shows every account only its own usage and relay data', async () => {
    const a = await s.createKey('professional');
    const b = await s.createKey('professional');
    await api('/check?ip=8.8.8.8', { key: a.key });
    await api('/relay-mail', { key: a.key, json: { recipient: 'one@example.org', subject: 'x', body_text: 'y' } });
    expect((await api('/verify-key', { key: b.key })).body.data.usage).toEqual({ checksToday: 0, reportsToday: 0 });
    expect((await api('/relay-quota', { key: b.key })).body.mail).toMatchObject({ queued_total: 0, inclusive_used: 0 });
    expect((await api('/relay-quota', { key: a.key })).body.mail).toMatchObject({ queued_total: 1 });
  });

  it('never names the reporting account in report data', async () => {
    const reporter = await s.createKey('free', { email: 'reporter@example.org' });
    await api('/report', { key: reporter.key, json: { ip: '8.8.8.77', categories: [14], comment: 'seen' } });
    const reader = await s.createKey('professional');
    for (const res of [await api('/reports/8.8.8.77', { key: reader.key }), await api('/check?ip=8.8.8.77&include_reports=true&verbose=true', { key: reader.key })]) {
      const text = JSON.stringify(res.body);
      expect(text).not.toContain('reporter@example.org');
      expect(text).not.toMatch(/accountId|account_id|"email"/);
    }
  });
});

describe('API2 broken authentication', () => {
  it('refuses malformed, unknown and near-miss keys alike, and never echoes a key', async () => {
    const real = await s.createKey('free');
    const nearMiss = real.key.slice(0, -1) + (real.key.endsWith('A') ? 'B' : 'A');
    for (const key of ['', 'x', nearMiss, real.key.toUpperCase(), real.key.slice(0, -1), real.key + 'A']) {
      const res = await api('/verify-key', { headers: { 'X-Key': key } });
      expect(res.status).toBe(401);
      expect(JSON.stringify(res.body)).not.toContain(real.key.slice(4, 20));
    }
  });
});

describe('API3 broken object property level authorization', () => {
  it('refuses unknown properties in every request body', async () => {
    const ent = await s.createKey('enterprise');
    const bodies: [string, object][] = [
      ['/report', { ip: '8.8.8.8', categories: [4], role: 'enterprise' }],
      ['/bulk-check', { ips: ['8.8.8.8'], admin: true }],
      ['/bulk-report', { csv: '8.8.8.8,4', account_id: 1 }],
      ['/relay-mail', { recipient: 'a@example.org', subject: 'x', body_text: 'y', from: 'ceo@example.org' }],
      ['/relay-sms', { recipient_phone: '+4915112345678', message: 'x', smsc: 'http://evil.example' }],
    ];
    const before = await tableCounts();
    for (const [path, json] of bodies) {
      const res = await api(path, { key: ent.key, json });
      expect({ path, status: res.status }).toEqual({ path, status: 400 });
    }
    expect(await tableCounts()).toEqual(before);
  });
});

describe('API4 unrestricted resource consumption', () => {
  it('bounds bodies, arrays, pages, strings and list sizes', async () => {
    const pro = await s.createKey('enterprise');
    const cases: [string, Parameters<typeof call>[2], number][] = [
      ['/bulk-check', { json: { ips: Array.from({ length: 1001 }, () => '8.8.8.8') } }, 400],
      ['/bulk-report', { body: JSON.stringify({ csv: 'x'.repeat(3.5 * 1024 * 1024) }), headers: { 'content-type': 'application/json' } }, 413],
      ['/reports/8.8.8.8?per_page=101', {}, 400],
      ['/reports/8.8.8.8?page=10001', {}, 400],
      ['/search-public?q=' + 'a'.repeat(65), {}, 400],
      ['/blacklist?limit=1000001', {}, 400],
      ['/report', { json: { ip: '8.8.8.8', categories: [4], comment: 'x'.repeat(65_537) } }, 400],
      ['/report', { json: { ip: '8.8.8.8', categories: Array.from({ length: 31 }, (_, i) => i + 1) } }, 400],
      ['/relay-mail', { json: { recipient: 'a@example.org', subject: 'x', body_text: 'y'.repeat(100_001) } }, 400],
    ];
    for (const [path, o, status] of cases) {
      const res = await api(path, { ...o, key: pro.key });
      expect({ path, status: res.status }).toEqual({ path, status });
    }
  });

  it('closes a connection whose headers never finish (slowloris)', async () => {
    const port = Number(new URL(s.origin).port);
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString()));
    socket.write('GET /api/v2/categories HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    const started = Date.now();
    const closed = await Promise.race([
      once(socket, 'close').then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 5_000)),
    ]);
    socket.destroy();
    expect(closed).toBe(true);
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describe('API7 server-side request forgery', () => {
  it('never fetches an address taken from a request', async () => {
    const hits: string[] = [];
    const trap = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end();
    });
    trap.listen(0, '127.0.0.1');
    await once(trap, 'listening');
    const url = `http://127.0.0.1:${(trap.address() as AddressInfo).port}/hook`;
    const { key } = await s.createKey('professional');
    expect((await api('/relay-mail', { key, json: { recipient: 'x@example.org', subject: 'x', body_text: 'y', site_url: url } })).status).toBe(200);
    expect((await api('/relay-sms', { key, json: { recipient_phone: '+4915112345670', message: 'x', site_url: url } })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    trap.close();
    expect(hits).toEqual([]);
  });
});

describe('API8 security misconfiguration', () => {
  it('sets security headers, hides the framework and sends no CORS grant', async () => {
    const res = await api('/categories');
    expect(res.headers.get('x-powered-by')).toBeNull();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    // What a browser renders keeps the page policies: the pages, the reference, a page's 404.
    for (const path of ['/', '/no-such-page']) {
      const page = await fetch(s.origin + path);
      expect(page.headers.get('x-powered-by')).toBeNull();
      expect(page.headers.get('x-content-type-options')).toBe('nosniff');
      expect(page.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(page.headers.get('content-security-policy')).toMatch(/default-src '(self|none)'/);
      expect(page.headers.get('strict-transport-security')).toContain('max-age=');
    }
  });

  it('keeps the page policies off API answers: they carry only the headers they need', async () => {
    const a = await s.createKey('enterprise');
    for (const res of [await api('/categories'), await api('/check?ip=8.8.8.8', { key: a.key }), await api('/check?ip=nonsense', { key: a.key })]) {
      for (const name of ['content-security-policy', 'x-frame-options', 'strict-transport-security', 'cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control']) {
        expect(res.headers.get(name), name).toBeNull();
      }
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('answers SQL injection attempts in every kind of parameter without effect or leaks', async () => {
    const ent = await s.createKey('enterprise');
    const payloads = ["' OR '1'='1", "1; DROP TABLE reports; --", "8.8.8.8' --", '"; select pg_sleep(5); --', '\\x00', "%27%20OR%201=1"];
    const before = await tableCounts();
    for (const p of payloads) {
      const q = encodeURIComponent(p);
      const responses = [
        await api(`/check?ip=${q}`, { key: ent.key }),
        await api(`/search-public?q=${q}`, { key: ent.key }),
        await api(`/reports/${q}`, { key: ent.key }),
        await api(`/blacklist?category=${q}`, { key: ent.key }),
        await api(`/trends?period=${q}`, { key: ent.key }),
        await api('/bulk-check', { key: ent.key, json: { ips: [p] } }),
        await api('/report', { key: ent.key, json: { ip: p, categories: [4] } }),
        await api('/bulk-report', { key: ent.key, json: { csv: `${p},4,x` } }),
        await api('/verify-key', { headers: { 'X-Key': p } }),
      ];
      for (const res of responses) {
        expect(res.status).toBeLessThan(500);
        // Refusals explain what was wrong, never how the database saw it.
        if (res.status >= 400) expect(JSON.stringify(res.body)).not.toMatch(/syntax error|pg_|relation "|\bselect\b.*\bfrom\b|\n\s+at /i);
      }
    }
    const after = await tableCounts();
    expect(after.reports).toBe(before.reports);
    expect(after.ips).toBe(before.ips);
    // a comment full of SQL is stored as text, no more
    await api('/report', { key: ent.key, json: { ip: '8.8.8.78', categories: [16], comment: "'); DROP TABLE reports; --" } });
    const history = await api('/reports/8.8.8.78', { key: ent.key });
    expect(history.body.data.reports[0].comment).toBe("'); DROP TABLE reports; --");
  });
});

describe('API9 improper inventory management', () => {
  it('serves only what the document describes under /api/v2', async () => {
    for (const path of ['/admin', '/keys', '/reports', '/v1/check', '/blacklist-export', '/accounts/1']) {
      const res = await api(path);
      expect([404, 405]).toContain(res.status);
    }
    const doc = (await api('/openapi.json')).body;
    expect(Object.keys(doc.paths)).toHaveLength(36);
  });
});

describe('keys stay secret', () => {
  it('never appear in any response or log line of this file', async () => {
    const key = await s.createKey('enterprise');
    await api(`/verify-key?key=${key.key}`);
    await api('/check?ip=bad', { key: key.key });
    await api(`/check?ip=8.8.8.8&key=${key.key}&extra=1`);
    const secret = key.key.slice(4);
    expect(seenBodies.join('\n')).not.toContain(secret);
    expect(s.logs.join('')).not.toContain(secret);
  });
});
