import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dereferencer, DOCUMENTS } from '../support/documents.js';
import { call, rawCall, type CallResult } from '../support/http.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { bouncersOf } from '../support/crowdsec.js';

/**
 * Finding 1 (HIGH): paths that Express routed but the validator skipped. Every operation of the
 * documents (/api/v2, CrowdSec's, AbuseIPDB's) is tried under other spellings of its path, with
 * a valid key in its protocol's header; each answers 404, or exactly what the canonical path
 * answers (a percent-encoded letter is the same path); the same under the alias base of the
 * ReportedIP clients (`/wp-json/reportedip/v2`), whose canonical spelling is exactly the
 * canonical `/api/v2` answer. Then the attacks of the review are replayed through `/API/V2/...`
 * and the alias's other spellings, and the recipient attacks (a Bcc header injection, display
 * names and comments) on the canonical path: none is queued, delivered, charged (relay quota,
 * bundle ledger) or stored, or it goes to the one normalised mailbox.
 */
interface Operation {
  id: string;
  method: string;
  base: string;
  keyHeader: string;
  /** The path with its parameters filled from the document's examples. */
  path: string;
  /** A query string the document refuses (an unknown parameter): the canonical answer is 400 (AbuseIPDB: 422). */
  badQuery: string;
  body?: string;
}

const operations: Operation[] = DOCUMENTS.flatMap(({ base, doc, keyHeader }) => {
  const deref = dereferencer(doc);
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => {
      let filled = path;
      const query: string[] = [];
      for (const p of ((op.parameters ?? []) as any[]).map(deref)) {
        if (p.in === 'path') filled = filled.replace(`{${p.name}}`, encodeURIComponent(String(p.example)));
        else if (p.in === 'query' && p.required) query.push(`${p.name}=${encodeURIComponent(String(p.example))}`);
      }
      const content = deref(op.requestBody)?.content?.['application/json'];
      const example = content && deref(Object.values(content.examples ?? {})[0]);
      return {
        id: op.operationId as string,
        method: method.toUpperCase(),
        base,
        keyHeader,
        path: filled,
        badQuery: [...query, 'not_a_parameter=1'].join('&'),
        body: example ? JSON.stringify(example.value) : undefined,
      };
    }),
  );
});

const ALIAS = '/wp-json/reportedip/v2';

/** The same spellings under the alias base of the ReportedIP clients: each must be 404 too. */
const ALIAS_VARIANTS: Record<string, (path: string) => string> = {
  'upper-case alias base': (p) => `/WP-JSON/reportedip/v2${p}`,
  'upper-case alias segment': (p) => `/wp-json/REPORTEDIP/v2${p}`,
  'upper-case alias version': (p) => `/wp-json/reportedip/V2${p}`,
  'upper-case path under the alias': (p) => `${ALIAS}${p.replace(/^\/[a-z-]+/, (seg) => seg.toUpperCase())}`,
  'trailing slash under the alias': (p) => `${ALIAS}${p}/`,
  'double slash under the alias': (p) => `${ALIAS}/${p}`,
  'double slash inside the alias': (p) => `/wp-json//reportedip/v2${p}`,
  'dot segment under the alias': (p) => `${ALIAS}/x/..${p}`,
  'encoded slash under the alias': (p) => `${ALIAS}${p.replace(/^\//, '%2F')}`,
  'encoded slash inside the alias': (p) => `/wp-json%2Freportedip/v2${p}`,
  'NUL byte under the alias': (p) => `${ALIAS}${p}%00`,
};

const capitalised = (base: string) => base.replace(/[a-z]/, (c) => c.toUpperCase());
const VARIANTS: Record<string, (base: string, path: string) => string> = {
  'upper-case base': (b, p) => `${b.toUpperCase()}${p}`,
  'upper-case path': (b, p) => `${b}${p.replace(/^\/[a-z-]+/, (seg) => seg.toUpperCase())}`,
  'mixed-case base': (b, p) => `${capitalised(b)}${p}`,
  'trailing slash': (b, p) => `${b}${p}/`,
  'double slash before': (b, p) => `${b}/${p}`,
  'double slash inside': (b, p) => `/${b}${p}`,
  'dot segment': (b, p) => `${b}/x/..${p}`,
  'encoded dot segment': (b, p) => `${b}/x/%2e%2e${p}`,
  'encoded slash': (b, p) => `${b}${p.replace(/^\//, '%2F')}`,
  'encoded backslash': (b, p) => `${b}${p}%5C`,
  'NUL byte': (b, p) => `${b}${p}%00`,
};

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
let key: string;
let bouncerKey: string;

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  s = await startTestServer({
    config: { relay: { mail: { smtpUrl: smtp.url, from: 'relay@example.net' }, sms: { url: sms.url, token: sms.token } } },
  });
  key = (await s.createKey('enterprise')).key;
  bouncerKey = (await bouncersOf(s).add('variants')).key;
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

async function send(op: Operation, path: string, query: string): Promise<CallResult> {
  return rawCall(s.origin, `${path}${query ? `?${query}` : ''}`, {
    method: op.method,
    headers: {
      [op.keyHeader]: op.keyHeader === 'X-Api-Key' ? bouncerKey : key,
      ...(op.method === 'POST' ? { 'content-type': 'application/json' } : {}),
    },
    ...(op.method === 'POST' ? { body: op.body ?? '{}' } : {}),
  });
}

/** What a test compares: the status and the body, without what differs per request. */
const answer = (res: CallResult) => ({ status: res.status, body: res.body });

/** An error body in one of the server's shapes: the envelope, the relay's, the LAPI's, AbuseIPDB's. */
const isErrorBody = (body: any) =>
  (body?.meta?.success === false && body.meta.code === 404) || body?.ok === false || typeof body?.message === 'string' || body?.errors?.[0]?.status === 404;

/** Everything a request could change: reports, relay messages and their charges, bundles, counters. */
async function stored() {
  const { rows } = await s.pool.query(
    `select (select count(*) from reports)::int as reports, (select count(*) from relay_messages)::int as relay,
            (select coalesce(sum(used), 0) from usage_counters where counter <> 'faults')::int as used,
            (select coalesce(sum(inclusive_used), 0) from relay_usage)::int as relay_inclusive_used,
            (select count(*) from bundle_ledger)::int as ledger_rows,
            (select coalesce(sum(amount), 0) from bundle_ledger)::int as ledger_balance`,
  );
  return rows[0];
}

describe('every operation under every other spelling of its path', () => {
  it('covers all operations of the documents', () => {
    expect(operations.length).toBeGreaterThanOrEqual(22 + 2 + 6);
  });

  for (const op of operations) {
    it(`${op.method} ${op.base}${op.path} (${op.id})`, async () => {
      const before = await stored();
      const canonical = answer(await send(op, `${op.base}${op.path}`, op.badQuery));
      // The canonical path reaches its validator: the unknown parameter is refused (AbuseIPDB
      // says 422; a bulk report sent as JSON is refused for its media type first).
      expect([400, 415, 422], 'the canonical path validates the query').toContain(canonical.status);
      for (const [name, variant] of Object.entries(VARIANTS)) {
        const res = await send(op, variant(op.base, op.path), op.badQuery);
        expect(res.status, `${name}: ${variant(op.base, op.path)}`).toBe(404);
        expect(isErrorBody(res.body), `${name}: ${JSON.stringify(res.body)}`).toBe(true);
      }
      // A percent-encoded letter is the same path: exactly the canonical answer.
      const encoded = `${op.base}${op.path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
      expect(answer(await send(op, encoded, op.badQuery)), encoded).toEqual(canonical);
      expect(await stored()).toEqual(before);
    });

    if (op.base !== '/api/v2') continue; // the alias stands for /api/v2 only
    it(`${op.method} ${ALIAS}${op.path} (${op.id}) and its other spellings`, async () => {
      const before = await stored();
      const canonical = answer(await send(op, `/api/v2${op.path}`, op.badQuery));
      // The alias is the same operation behind the same validator: an unknown query parameter
      // is exactly the canonical 400.
      expect(answer(await send(op, `${ALIAS}${op.path}`, op.badQuery)), 'the alias validates the query').toEqual(canonical);
      const encoded = `${ALIAS}${op.path.replace(/[a-z]/, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
      expect(answer(await send(op, encoded, op.badQuery)), encoded).toEqual(canonical);
      for (const [name, variant] of Object.entries(ALIAS_VARIANTS)) {
        const res = await send(op, variant(op.path), op.badQuery);
        expect(res.status, `${name}: ${variant(op.path)}`).toBe(404);
      }
      expect(await stored()).toEqual(before);
    });
  }

  it('decodes an IPv6 address sent percent-encoded in the path, as the canonical path', async () => {
    const plain = await call(s.origin, '/api/v2/reports/2001:db8::1', { key });
    const encoded = await call(s.origin, '/api/v2/reports/2001%3Adb8%3A%3A1', { key });
    expect(plain.status).toBe(200);
    expect(encoded.body).toEqual(plain.body);
  });

  it('takes the LAPI\'s own base /v1 as an alias of /crowdsec/v1, in its one spelling', async () => {
    const headers = { 'X-Api-Key': bouncerKey };
    expect((await rawCall(s.origin, '/v1/decisions/stream?startup=true', { headers })).status).toBe(200);
    for (const path of ['/V1/decisions/stream', '/v1/decisions/stream/', '/v1//decisions/stream', '/v1/Decisions/stream', '/v1/decisions%2Fstream']) {
      expect((await rawCall(s.origin, path, { headers })).status, path).toBe(404);
    }
  });
});

describe('the attacks of the review, through /API/V2', () => {
  const attacks: [string, unknown][] = [
    ['/relay-mail', { recipient: 'a@example.com', subject: 's', body_text: 't', headers: [{ name: 'Sender', value: 'ceo@example.com' }, { name: 'Return-Path', value: 'b@attacker.test' }, { name: 'Reply-To', value: 'c@attacker.test' }] }],
    ['/relay-mail', { recipient: 'victim@example.com (one)', subject: 's', body_text: 't' }],
    ['/relay-mail', { recipient: 'Bob <victim@example.com>', subject: 's', body_text: 't' }],
    ['/relay-mail', { recipient: 'a4@example.com\r\nBcc: evil4@attacker.test', subject: 's', body_text: 't' }],
    ['/relay-sms', { recipient_phone: '+4915112345678', template_code: '2fa_code', template_vars: { code: '0000. Your account is locked, call +44 909 8790000', expiry_min: -5 } }],
    ['/relay-sms', { recipient_phone: '+4915112345678', message: 'x'.repeat(5000) }],
    ['/bulk-check', { ips: Array.from({ length: 100_000 }, (_, i) => `8.${i >> 16}.${(i >> 8) & 255}.${i & 255}`) }],
  ];

  for (const [path, body] of attacks) {
    it(`refuses POST /API/V2${path} and its alias spellings with ${JSON.stringify(body).slice(0, 80)}`, async () => {
      const before = await stored();
      for (const base of ['/API/V2', '/Api/V2', '/api/V2', '/WP-JSON/reportedip/v2', '/wp-json/REPORTEDIP/V2']) {
        const res = await rawCall(s.origin, base + path, { key, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expect(res.status).toBe(404);
      }
      for (const trailing of [`/api/v2${path}/`, `${ALIAS}${path}/`]) {
        const res = await rawCall(s.origin, trailing, { key, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
        expect(res.status, trailing).toBe(404);
      }
      await new Promise((r) => setTimeout(r, 700)); // a queued message would be delivered by now
      expect(await stored()).toEqual(before);
      expect(smtp.received).toHaveLength(0);
      expect(sms.requests).toHaveLength(0);
    });
  }
});

describe('the recipient attacks of the review, replayed on the canonical /api/v2', () => {
  const mail = (recipient: string) => ({ recipient, subject: 'Your code', body_text: 'Code 123456' });
  /** Bodies as the wire carries them: JSON with the escapes \r\n, JSON with raw CR LF, a form. */
  const bcc = 'a4@example.com\r\nBcc: evil@attacker.test';
  const injections: [string, string, string][] = [
    ['JSON, escaped CR LF', 'application/json', JSON.stringify(mail(bcc))],
    ['JSON, raw CR LF in the string', 'application/json', `{"recipient":"a4@example.com\r\nBcc: evil@attacker.test","subject":"Your code","body_text":"Code 123456"}`],
    ['JSON, LF only', 'application/json', JSON.stringify(mail('a4@example.com\nBcc: evil@attacker.test'))],
    ['JSON, CR only', 'application/json', JSON.stringify(mail('a4@example.com\rBcc: evil@attacker.test'))],
    ['form', 'application/x-www-form-urlencoded', new URLSearchParams(mail(bcc)).toString()],
  ];

  for (const [name, contentType, body] of injections) {
    it(`refuses a Bcc header injection in the recipient (${name}); nothing is queued, charged or delivered`, async () => {
      const before = await stored();
      const received = smtp.received.length;
      const res = await rawCall(s.origin, '/api/v2/relay-mail', { key, body, headers: { 'content-type': contentType } });
      expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      await new Promise((r) => setTimeout(r, 700)); // a queued message would be delivered by now
      expect(await stored()).toEqual(before);
      expect(smtp.received.length).toBe(received);
      expect(smtp.received.some((m) => m.envelopeTo.some((to) => to.includes('attacker.test')))).toBe(false);
    });
  }

  it('takes a display name or a comment as one recipient: the same normalised mailbox and the same throttle key', async () => {
    // Three messages to one recipient in 24 hours are free (RELAY_RECIPIENT_FREE); the fourth
    // waits. Each spelling must count against the one mailbox, so the fourth is refused too.
    for (const recipient of ['victim@example.com', 'victim@example.com (one)', 'Bob <victim@example.com>']) {
      const received = smtp.received.length;
      const res = await call(s.origin, '/api/v2/relay-mail', { key, json: mail(recipient) });
      expect(res.status, recipient).toBe(200);
      const { rows } = await s.pool.query('select recipient from relay_messages where id = $1', [res.body.queue_id]);
      expect(rows[0].recipient, recipient).toBe('victim@example.com');
      await eventually(() => smtp.received.length === received + 1);
      expect(smtp.received.at(-1)!.envelopeTo, recipient).toEqual(['victim@example.com']);
    }
    const before = await stored();
    const received = smtp.received.length;
    const fourth = await call(s.origin, '/api/v2/relay-mail', { key, json: mail('"Bob, Alice" <VICTIM@example.com>') });
    expect(fourth.status).toBe(429);
    expect(fourth.body).toMatchObject({ ok: false, code: 'recipient_backoff' });
    await new Promise((r) => setTimeout(r, 700));
    expect(await stored()).toEqual(before);
    expect(smtp.received.length).toBe(received);
    const { rows } = await s.pool.query("select count(distinct recipient)::int as keys, count(*)::int as n from relay_messages where recipient ilike '%victim%'");
    expect(rows[0]).toEqual({ keys: 1, n: 3 });
    // Two addresses are never one recipient.
    const two = await call(s.origin, '/api/v2/relay-mail', { key, json: mail('victim@example.com, evil@attacker.test') });
    expect(two.status).toBeGreaterThanOrEqual(400);
    expect(two.status).toBeLessThan(500);
  });
});
