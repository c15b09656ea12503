import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { ROLES, hasFeature, type Role } from '../../src/roles.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Attacks on the threat-intelligence feeds (issue 28, item 4): they are the blacklist in other
 * words, so whoever may not download the blacklist may not read them either, by any of the three
 * operations, by either key location, or by guessing an event's uuid; and the path parameter
 * takes a uuid and nothing else.
 */
let s: TestServer;
const keys = {} as Record<Role, string>;
const LISTED = ['8.8.4.1', '8.8.4.2'];
let eventPath = '';

const api = (path: string, o: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${path}`, o);

beforeAll(async () => {
  s = await startTestServer();
  s.clock.set('2026-06-15T12:00:00Z');
  for (const role of ROLES) keys[role] = (await s.createKey(role, role === 'business' ? { licences: 2 } : {})).key;
  for (let r = 0; r < 20; r++) {
    const { key } = await s.createKey('enterprise');
    s.clock.advance(1000);
    expect((await api('/bulk-report', { key, json: { csv: LISTED.map((ip) => `${ip},22|27`).join('\n') } })).status).toBe(200);
  }
  await blacklistSnapshots(s.pool, s.clock).regenerate();
  const manifest = await api('/feeds/misp/manifest.json', { key: keys.contributor });
  eventPath = `/feeds/misp/${Object.keys(manifest.body)[0]}.json`;
});
afterAll(async () => {
  await s?.close();
});

const feeds = () => ['/feeds/stix', '/feeds/misp/manifest.json', eventPath];

describe('who reads the feeds', () => {
  it('every role without the blacklist feature gets 403 and no listed address, by header or query key', async () => {
    expect(eventPath).toMatch(/^\/feeds\/misp\/[0-9a-f-]{36}\.json$/);
    const without = ROLES.filter((role) => !hasFeature(role, 'blacklist'));
    expect(without).toContain('free');
    for (const role of without) {
      for (const path of feeds()) {
        for (const res of [await api(path, { key: keys[role] }), await api(`${path}?key=${keys[role]}`)]) {
          expect({ role, path, status: res.status }).toEqual({ role, path, status: 403 });
          expect(res.body.code).toBe('tier_forbidden');
          for (const ip of LISTED) expect(JSON.stringify(res.body)).not.toContain(ip);
        }
      }
    }
  });

  it('without a key, or with a wrong or revoked-looking one, answers 401 and no listed address', async () => {
    for (const path of feeds()) {
      for (const res of [await api(path), await api(path, { key: 'trs_' + 'x'.repeat(40) }), await api(path, { key: '' })]) {
        expect({ path, status: res.status }).toEqual({ path, status: 401 });
        for (const ip of LISTED) expect(JSON.stringify(res.body)).not.toContain(ip);
      }
    }
  });

  it('every role with the blacklist feature reads all three', async () => {
    for (const role of ROLES.filter((r) => hasFeature(r, 'blacklist'))) {
      for (const path of feeds()) {
        const res = await api(path, { key: keys[role] });
        expect({ role, path, status: res.status }).toEqual({ role, path, status: 200 });
        if (path !== '/feeds/misp/manifest.json') expect(JSON.stringify(res.body)).toContain(LISTED[0]);
      }
    }
  });

  it('a forbidden role gets no 304 either: a stolen ETag tells it nothing', async () => {
    const etag = (await api('/feeds/stix', { key: keys.contributor })).headers.get('etag')!;
    const res = await api('/feeds/stix', { key: keys.free, headers: { 'If-None-Match': etag } });
    expect(res.status).toBe(403);
    expect(res.headers.get('etag')).toBeNull();
  });
});

describe('the event path takes a uuid and nothing else', () => {
  it('refuses traversal, injection and odd spellings without reaching another file', async () => {
    for (const name of ['..%2Fmanifest', '%2e%2e', "x'%20or%201=1", '00000000-0000-4000-8000-00000000000', 'manifest.json', '%00', 'a'.repeat(300)]) {
      const res = await api(`/feeds/misp/${name}.json`, { key: keys.contributor });
      expect({ name, status: [400, 404].includes(res.status) ? 'refused' : res.status }).toEqual({ name, status: 'refused' });
      for (const ip of LISTED) expect(JSON.stringify(res.body)).not.toContain(ip);
    }
    for (const query of ['confidence=75;drop%20table%20x', 'confidence=1e3', 'limit=-5', 'confidence[]=1']) {
      expect((await api(`/feeds/stix?${query}`, { key: keys.contributor })).status).toBe(400);
    }
  });
});
