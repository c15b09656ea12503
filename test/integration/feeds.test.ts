import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { uuidV5 } from '../../src/blacklist/feeds.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The threat-intelligence feeds (issue 28 item 4): the STIX 2.1 bundle checked against the OASIS
 * STIX 2.1 JSON schemas (test/fixtures/stix2.1, BSD-3-Clause, from oasis-open/cti-stix2-json-schemas),
 * the MISP feed against MISP's feed format (the manifest's keys are the events' uuids, each event
 * file `{"Event": {...}}` with `ip-src` attributes), role access and ETags as /blacklist's.
 */
let s: TestServer;
let contributor: string;
const OLD = ['8.8.4.1', '8.8.4.2', '2001:4860::1']; // last reported on 2026-06-14
const NEW = ['9.9.8.1', '9.9.8.2']; // last reported on 2026-06-15

const api = (p: string, o: Parameters<typeof call>[2] = {}) => call(s.origin, `/api/v2${p}`, o);

/** The OASIS schemas, loaded under their own $ids, and the bundle's validator. */
function stixValidator() {
  // The schemas' patterns are ECMA-262 without the u flag (one escapes '-' outside a class).
  const ajv = new Ajv2020({ strict: false, allErrors: true, unicodeRegExp: false });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  const root = path.resolve('test/fixtures/stix2.1/schemas');
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((d) => (d.isDirectory() ? walk(path.join(dir, d.name)) : d.name.endsWith('.json') ? [path.join(dir, d.name)] : []));
  for (const file of walk(root)) ajv.addSchema(JSON.parse(readFileSync(file, 'utf8')));
  return ajv.getSchema('http://raw.githubusercontent.com/oasis-open/cti-stix2-json-schemas/stix2.1/schemas/common/bundle.json')!;
}

beforeAll(async () => {
  s = await startTestServer({ config: { web: { publicUrl: 'https://reputation.example.net' } } });
  contributor = (await s.createKey('contributor')).key;
  s.clock.set('2026-06-14T10:00:00Z');
  for (let r = 0; r < 20; r++) {
    const { key } = await s.createKey('enterprise');
    s.clock.advance(1000);
    expect((await api('/bulk-report', { key, json: { csv: OLD.map((ip) => `${ip},22|18,ssh`).join('\n') } })).status).toBe(200);
  }
  s.clock.set('2026-06-15T10:00:00Z');
  for (let r = 0; r < 20; r++) {
    const { key } = await s.createKey('enterprise');
    s.clock.advance(1000);
    expect((await api('/bulk-report', { key, json: { csv: NEW.map((ip) => `${ip},21`).join('\n') } })).status).toBe(200);
  }
  s.clock.set('2026-06-15T12:00:00Z');
  await blacklistSnapshots(s.pool, s.clock).regenerate();
});
afterAll(async () => {
  await s?.close();
});

describe('GET /feeds/stix', () => {
  it('is a STIX 2.1 bundle that the OASIS schemas accept: an identity, then an indicator per listed address', async () => {
    const res = await api('/feeds/stix', { key: contributor });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/stix+json;version=2.1');
    const validate = stixValidator();
    expect(validate(res.body), JSON.stringify(validate.errors)).toBe(true);
    const [identity, ...indicators] = res.body.objects;
    expect(identity).toMatchObject({ type: 'identity', identity_class: 'system', name: 'Threat-Reputation Service (reputation.example.net)' });
    expect(indicators.map((i: any) => i.name).sort()).toEqual([...OLD, ...NEW].sort());
    const v6 = indicators.find((i: any) => i.name === '2001:4860::1');
    expect(v6).toMatchObject({
      pattern: "[ipv6-addr:value = '2001:4860::1']",
      pattern_type: 'stix',
      indicator_types: ['malicious-activity'],
      created_by_ref: identity.id,
      valid_from: '2026-06-14T10:00:20.000Z',
    });
    expect(v6.labels.sort()).toEqual(['Brute-Force', 'SSH']);
    const v4 = indicators.find((i: any) => i.name === '9.9.8.1');
    expect(v4.pattern).toBe("[ipv4-addr:value = '9.9.8.1']");
    // confidence is the list's score, highest first, as /blacklist orders it
    const list = await api('/blacklist?format=json', { key: contributor });
    expect(indicators.map((i: any) => [i.name, i.confidence])).toEqual(list.body.data.map((e: any) => [e.ip, e.abuseConfidencePercentage]));
  });

  it('keeps each indicator id across pulls and regenerations, and the bundle id with the content', async () => {
    const first = await api('/feeds/stix', { key: contributor });
    s.clock.advance(60_000);
    await blacklistSnapshots(s.pool, s.clock).regenerate(undefined, { full: true });
    const again = await api('/feeds/stix', { key: contributor });
    const ids = (b: any) => Object.fromEntries(b.objects.slice(1).map((o: any) => [o.name, o.id]));
    expect(ids(again.body)).toEqual(ids(first.body));
    expect(ids(first.body)['8.8.4.1']).toBe(`indicator--${uuidV5(uuidV5('6ba7b811-9dad-11d1-80b4-00c04fd430c8', 'https://reputation.example.net'), 'indicator:8.8.4.1')}`);
  });

  it('filters like /blacklist and answers 304 to its ETag', async () => {
    const ssh = await api('/feeds/stix?category=22&confidence=0', { key: contributor });
    expect(ssh.body.objects.slice(1).map((o: any) => o.name).sort()).toEqual([...OLD].sort());
    const one = await api('/feeds/stix?limit=1', { key: contributor });
    expect(one.body.objects).toHaveLength(2);
    const etag = ssh.headers.get('etag')!;
    const cached = await api('/feeds/stix?category=22&confidence=0', { key: contributor, headers: { 'if-none-match': etag } });
    expect(cached.status).toBe(304);
    expect(one.headers.get('etag')).not.toBe(etag);
  });

  it('refuses bad input: a confidence out of range, an unknown parameter, an unknown category', async () => {
    expect((await api('/feeds/stix?confidence=101', { key: contributor })).status).toBe(400);
    expect((await api('/feeds/stix?format=csv', { key: contributor })).status).toBe(400);
    expect((await api('/feeds/stix?limit=0', { key: contributor })).status).toBe(400);
    const unknown = await api('/feeds/stix?category=999', { key: contributor });
    expect(unknown.status).toBe(422);
    expect(unknown.body.code).toBe('unknown_category');
  });
});

describe('the MISP feed', () => {
  it('has a manifest keyed by event uuid, one event per day of last reports, each event file in MISP feed format', async () => {
    const manifest = await api('/feeds/misp/manifest.json', { key: contributor });
    expect(manifest.status).toBe(200);
    expect(manifest.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const uuids = Object.keys(manifest.body);
    expect(Object.values(manifest.body).map((e: any) => e.date).sort()).toEqual(['2026-06-14', '2026-06-15']);
    for (const uuid of uuids) {
      expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      const entry = manifest.body[uuid];
      expect(entry).toMatchObject({ analysis: 2, threat_level_id: 2, Orgc: { name: 'Threat-Reputation Service (reputation.example.net)' } });
      expect(entry.timestamp).toMatch(/^\d+$/);
      // MISP fetches <feed url>/<uuid>.json for each key of the manifest
      const file = await api(`/feeds/misp/${uuid}.json`, { key: contributor });
      expect(file.status).toBe(200);
      const event = file.body.Event;
      expect(event).toMatchObject({ uuid, date: entry.date, info: entry.info, timestamp: entry.timestamp, published: true, analysis: '2', threat_level_id: '2', Orgc: entry.Orgc });
      for (const a of event.Attribute) {
        expect(a).toMatchObject({ type: 'ip-src', category: 'Network activity', to_ids: true, deleted: false });
        expect(a.comment).toMatch(/^score \d+$/);
        expect(a.uuid).toMatch(/^[0-9a-f-]{36}$/);
      }
      const values = event.Attribute.map((a: any) => a.value).sort();
      expect(values).toEqual(entry.date === '2026-06-14' ? [...OLD].sort() : [...NEW].sort());
    }
    const old = Object.values(manifest.body).find((e: any) => e.date === '2026-06-14') as any;
    const oldUuid = uuids.find((u) => manifest.body[u] === old)!;
    const oldEvent = (await api(`/feeds/misp/${oldUuid}.json`, { key: contributor })).body.Event;
    expect(oldEvent.Attribute[0].Tag.map((t: any) => t.name).sort()).toEqual(['threat-reputation:category="Brute-Force"', 'threat-reputation:category="SSH"']);
    // every attribute uuid is unique across the feed (MISP keys attributes by uuid)
    const all = await Promise.all(uuids.map(async (u) => (await api(`/feeds/misp/${u}.json`, { key: contributor })).body.Event.Attribute.map((a: any) => a.uuid)));
    expect(new Set(all.flat()).size).toBe(all.flat().length);
  });

  it('answers 404 for an event the list does not hold, 400 for what is not a uuid, 304 to an ETag', async () => {
    const missing = await api('/feeds/misp/1f6b1c0e-5a43-5c3d-9b7e-3d1f0c8a2e41.json', { key: contributor });
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe('not_found');
    expect((await api('/feeds/misp/not-a-uuid.json', { key: contributor })).status).toBe(400);
    expect((await api('/feeds/misp/manifest.json?confidence=10', { key: contributor })).status).toBe(400);
    const manifest = await api('/feeds/misp/manifest.json', { key: contributor });
    const again = await api('/feeds/misp/manifest.json', { key: contributor, headers: { 'if-none-match': manifest.headers.get('etag')! } });
    expect(again.status).toBe(304);
    const uuid = Object.keys(manifest.body)[0]!;
    const event = await api(`/feeds/misp/${uuid}.json`, { key: contributor });
    const other = await api(`/feeds/misp/${Object.keys(manifest.body)[1]}.json`, { key: contributor });
    expect(event.headers.get('etag')).not.toBe(other.headers.get('etag'));
    expect((await api(`/feeds/misp/${uuid}.json`, { key: contributor, headers: { 'if-none-match': event.headers.get('etag')! } })).status).toBe(304);
  });
});

describe('feed access by role', () => {
  it('needs a key whose role has the blacklist, as /blacklist does, and charges as it does', async () => {
    const uuid = Object.keys((await api('/feeds/misp/manifest.json', { key: contributor })).body)[0]!;
    for (const p of ['/feeds/stix', '/feeds/misp/manifest.json', `/feeds/misp/${uuid}.json`]) {
      expect((await api(p)).status).toBe(401);
      expect((await api(p, { key: 'not-a-key' })).status).toBe(401);
      const free = await s.createKey('free');
      const list = await api('/blacklist', { key: free.key });
      const feed = await api(p, { key: free.key });
      expect(feed.status).toBe(list.status);
      expect(feed.status).toBe(403);
      const ok = await api(p, { key: contributor });
      expect(ok.status).toBe(200);
      expect(ok.headers.get('x-ratelimit-limit')).toBe((await api('/blacklist', { key: contributor })).headers.get('x-ratelimit-limit'));
    }
  });
});
