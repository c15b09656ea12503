import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { bouncersOf } from '../support/crowdsec.js';
import { call, rawCall } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The routes of the enforcement protocols under attack: bad keys get each protocol's refusal,
 * SQL and line-break junk is refused or taken as plain data (never a 5xx, never run), and no
 * key, bouncer key or AbuseIPDB key reaches a log line.
 */
let s: TestServer;
let apiKey: string;
let bouncerKey: string;
const JUNK = ["' OR 1=1 --", '1.2.3.4; drop table bouncers; --', '1.2.3.4\r\nX-Injected: 1', '%00', '../../etc/passwd', '$(id)', '<script>'];

beforeAll(async () => {
  s = await startTestServer();
  apiKey = (await s.createKey('enterprise')).key;
  bouncerKey = (await bouncersOf(s).add('attacked', { confidence: 0 })).key;
  for (let r = 0; r < 3; r++) {
    const { key } = await s.createKey('enterprise');
    await call(s.origin, '/api/v2/report', { key, json: { ip: '45.155.205.99', categories: [18] } });
  }
  await blacklistSnapshots(s.pool, s.clock).regenerate();
});
afterAll(async () => {
  await s?.close();
});

const tables = async () => (await s.pool.query("select count(*)::int as n from pg_tables where tablename in ('bouncers', 'reports', 'ip_stats')")).rows[0].n;

describe('CrowdSec bouncer API under attack', () => {
  it('refuses every bad key with 403 access forbidden', async () => {
    for (const key of [...JUNK.filter((j) => !/[\r\n]/.test(j)), apiKey, `${bouncerKey}x`, bouncerKey.slice(0, -1), 'trsb_']) {
      const res = await call(s.origin, '/crowdsec/v1/decisions/stream?startup=true', { headers: { 'X-Api-Key': key } });
      expect(res.status, key).toBe(403);
      expect(res.body).toEqual({ message: 'access forbidden' });
    }
    // A key in the query string authenticates nothing.
    expect((await call(s.origin, `/crowdsec/v1/decisions/stream?api_key=${bouncerKey}`)).status).toBe(400);
  });

  it('refuses junk values with 4xx and takes junk filter words as plain words', async () => {
    const headers = { 'X-Api-Key': bouncerKey };
    for (const junk of JUNK) {
      for (const name of ['ip', 'range', 'scopes', 'contains', 'startup', 'origins']) {
        const op = name === 'scopes' || name === 'startup' ? 'decisions/stream' : 'decisions';
        const res = await rawCall(s.origin, `/crowdsec/v1/${op}?${name}=${encodeURIComponent(junk)}`, { headers });
        expect(res.status, `${name}=${junk}`).toBeLessThan(500);
        if (res.status >= 400) expect(res.body, `${name}=${junk}`).toEqual({ message: expect.any(String) });
      }
      const words = await call(s.origin, `/crowdsec/v1/decisions/stream?startup=true&scenarios_containing=${encodeURIComponent(junk.replace(/[\r\n%]/g, ''))}`, { headers });
      expect(words.status).toBe(200);
      expect(words.body).toEqual({ new: [], deleted: [] });
    }
    expect(await tables()).toBe(3);
  });
});

describe('AbuseIPDB API under attack', () => {
  it('refuses every bad key with AbuseIPDB\'s 401, in header or query', async () => {
    for (const key of [...JUNK.filter((j) => !/[\r\n]/.test(j)), bouncerKey, apiKey.toUpperCase()]) {
      const header = await call(s.origin, '/abuseipdb/api/v2/check?ipAddress=8.8.8.8', { headers: { Key: key } });
      expect(header.status, key).toBe(401);
      expect(header.body.errors[0]).toMatchObject({ status: 401 });
      const query = await call(s.origin, `/abuseipdb/api/v2/check?ipAddress=8.8.8.8&key=${encodeURIComponent(key)}`);
      expect(query.status, key).toBe(401);
    }
  });

  it('refuses junk parameters with 422 and stores junk comments as plain text, control characters removed', async () => {
    const headers = { Key: apiKey };
    for (const junk of JUNK) {
      for (const [method, path] of [['GET', `/check?ipAddress=${encodeURIComponent(junk)}`], ['GET', `/check-block?network=${encodeURIComponent(junk)}`], ['DELETE', `/clear-address?ipAddress=${encodeURIComponent(junk)}`], ['GET', `/blacklist?onlyCountries=${encodeURIComponent(junk)}`]] as const) {
        const res = await rawCall(s.origin, `/abuseipdb/api/v2${path}`, { method, headers });
        expect(res.status, `${method} ${path}`).toBe(422);
        expect(res.body.errors[0].status).toBe(422);
      }
      const reported = await call(s.origin, '/abuseipdb/api/v2/report', { headers, json: { ip: junk, categories: '18' } });
      expect(reported.status, junk).toBe(422);
    }
    const comment = "x'); drop table reports; --\r\nInjected: \u0000yes";
    const stored = await call(s.origin, '/abuseipdb/api/v2/report', { headers, json: { ip: '45.155.205.98', categories: '18', comment } });
    expect(stored.status).toBe(200);
    const [row] = (await s.pool.query("select comment from reports where ip = '45.155.205.98'")).rows;
    expect(row.comment).toBe("x'); drop table reports; --\nInjected: yes");
    expect(await tables()).toBe(3);
  });
});

describe('the blacklist\'s new parameters under attack', () => {
  it('refuses junk since, format and aggregate values with 400', async () => {
    for (const junk of JUNK) {
      for (const name of ['since', 'format', 'aggregate']) {
        const res = await rawCall(s.origin, `/api/v2/blacklist?${name}=${encodeURIComponent(junk)}`, { headers: { 'X-Key': apiKey } });
        expect(res.status, `${name}=${junk}`).toBe(400);
      }
      const network = await rawCall(s.origin, `/api/v2/check-block?network=${encodeURIComponent(junk)}`, { headers: { 'X-Key': apiKey } });
      expect(network.status, junk).toBe(400);
    }
  });
});

describe('keys of every protocol stay out of the logs', () => {
  it('logs neither bouncer keys nor AbuseIPDB keys, in headers or queries', async () => {
    await call(s.origin, '/crowdsec/v1/decisions/stream?startup=true', { headers: { 'X-Api-Key': bouncerKey } });
    await call(s.origin, `/crowdsec/v1/decisions?ip=8.8.8.8&x=${bouncerKey}`, { headers: { 'X-Api-Key': bouncerKey } });
    await call(s.origin, `/v1/decisions/stream?${bouncerKey}`, { headers: { 'X-Api-Key': 'wrong' } });
    await call(s.origin, '/abuseipdb/api/v2/check?ipAddress=8.8.8.8', { headers: { Key: apiKey } });
    await call(s.origin, `/abuseipdb/api/v2/check?ipAddress=8.8.8.8&key=${apiKey}`);
    await call(s.origin, `/abuseipdb/api/v2/check?ipAddress=8.8.8.8&KEY=${encodeURIComponent(apiKey)}`);
    await new Promise((r) => setTimeout(r, 50));
    expect(s.logs.filter((l) => l.includes('request completed')).length).toBeGreaterThanOrEqual(6);
    for (const line of s.logs) {
      expect(line).not.toContain(bouncerKey.slice(10));
      expect(line).not.toContain(apiKey.slice(10));
    }
  });
});
