import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KEYLESS_BODY_LIMIT } from '../../src/http/body-limits.js';
import { call, rawCall, type CallResult } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * L9 (LOW) of the 2026-11-26 review: request bodies (JSON and forms up to 3 MiB, the AbuseIPDB
 * multipart file up to 2 MiB) were read and parsed before authentication, so a stranger could
 * make the server hold and parse 3 MiB per request. Now the key a request presents is looked up
 * before its body is read; without a valid key the body may be 64 KiB, refused with the 413 of
 * each document's shape before it is parsed (a larger declared length before it is read).
 */
let s: TestServer;
let ent: string;
let revoked: string;

const MiB = 1024 * 1024;
const UNKNOWN_KEY = `trs_${'Z'.repeat(43)}`;
const KEYLESS_MESSAGE = `The request body is larger than the limit of ${KEYLESS_BODY_LIMIT} bytes for a request without a valid API key.`;

beforeAll(async () => {
  s = await startTestServer();
  ent = (await s.createKey('enterprise')).key;
  const gone = await s.createKey('enterprise');
  await s.pool.query('update api_keys set revoked_at = now() where id = $1', [gone.keyId]);
  revoked = gone.key;
});
afterAll(async () => {
  await s?.close();
});

/** What was stored or charged: a refused body must change none of it. */
async function stored() {
  const { rows } = await s.pool.query<{ reports: number; counters: number }>(
    `select (select count(*)::int from reports) as reports, (select coalesce(sum(used), 0)::int from usage_counters) as counters`,
  );
  return rows[0]!;
}

/** A POST whose body goes out in chunks without a declared length (Transfer-Encoding: chunked). */
function streamed(path: string, headers: Record<string, string>, chunks: Iterable<string | Buffer>): Promise<CallResult> {
  const url = new URL(s.origin);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method: 'POST', headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON
        }
        const h = new Headers();
        for (const [name, value] of Object.entries(res.headers)) if (typeof value === 'string') h.set(name, value);
        resolve({ status: res.statusCode ?? 0, headers: h, body });
      });
    });
    req.on('error', reject);
    (async () => {
      for (const chunk of chunks) if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      req.end();
    })().catch(reject);
  });
}

function* repeated(chunk: string, times: number) {
  for (let i = 0; i < times; i++) yield chunk;
}

/** A multipart body of one file field, as a browser or curl -F sends it. */
function multipart(field: string, filename: string, content: string) {
  const boundary = '----trs-boundary-7d1f0c';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n`;
  return { type: `multipart/form-data; boundary=${boundary}`, head, tail: `\r\n--${boundary}--\r\n`, body: `${head}${content}\r\n--${boundary}--\r\n` };
}

/** 3 MiB that is not JSON: a parsed body would answer 400. */
const NOT_JSON = '{"csv": "' + 'x'.repeat(3 * MiB - 20);

describe('a body without a valid key', () => {
  const keys: [string, Record<string, string>][] = [
    ['no key', {}],
    ['an unknown key', { 'X-Key': UNKNOWN_KEY }],
    ['a malformed key', { 'X-Key': 'not-a-key' }],
    ['a revoked key', {}],
  ];

  for (const [who, headers] of keys) {
    it(`is refused above 64 KiB with the envelope's 413 before it is parsed (${who})`, async () => {
      const before = await stored();
      const withKey = who === 'a revoked key' ? { 'X-Key': revoked } : headers;
      const res = await rawCall(s.origin, '/api/v2/bulk-report', { method: 'POST', headers: { ...withKey, 'content-type': 'application/json' }, body: NOT_JSON });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ meta: { success: false, code: 413, message: KEYLESS_MESSAGE }, data: null, code: 'payload_too_large' });
      expect(await stored()).toEqual(before);
    });
  }

  it('is cut off at 64 KiB when it declares no length (JSON, forms), and a key in the query string counts as the header does', async () => {
    const json = await streamed('/api/v2/report', { 'content-type': 'application/json' }, ['{"comment": "', ...repeated('y'.repeat(16 * 1024), 200)]);
    expect(json.status).toBe(413);
    expect(json.body.meta.message).toBe(KEYLESS_MESSAGE);
    const form = await streamed(`/api/v2/report?key=${UNKNOWN_KEY}`, { 'content-type': 'application/x-www-form-urlencoded' }, ['ip=8.8.8.8&comment=', ...repeated('z'.repeat(16 * 1024), 200)]);
    expect(form.status).toBe(413);
    // The same body with a valid key in the query string is read (and then refused by the validator).
    const keyed = await streamed(`/api/v2/report?key=${ent}`, { 'content-type': 'application/x-www-form-urlencoded' }, ['ip=8.8.8.8&categories=18&comment=', ...repeated('z'.repeat(16 * 1024), 100)]);
    expect(keyed.status).toBe(400);
    expect(keyed.body.meta.errors).toEqual([expect.objectContaining({ name: 'comment' })]);
  });

  it('up to 64 KiB is read as before: malformed JSON is 400, a well-formed body 401', async () => {
    const malformed = await rawCall(s.origin, '/api/v2/report', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"ip": ' });
    expect(malformed.status).toBe(400);
    const small = await call(s.base, '/report', { json: { ip: '8.8.8.8', categories: [18], comment: 'c'.repeat(60_000) } });
    expect(small.status).toBe(401);
    expect(small.body.code).toBe('missing_api_key');
  });

  it("gets the relay's own 413 on relay paths", async () => {
    for (const headers of [{}, { 'X-Key': UNKNOWN_KEY }] as Record<string, string>[]) {
      const res = await rawCall(s.origin, '/api/v2/relay-mail', {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify({ recipient: 'a@example.org', subject: 's', body_text: 'b'.repeat(200_000) }),
      });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ ok: false, code: 'payload_too_large', message: KEYLESS_MESSAGE });
    }
    expect((await s.pool.query('select count(*)::int as n from relay_messages')).rows[0].n).toBe(0);
  });

  it("gets AbuseIPDB's error shape on its paths, multipart included, with or without a declared length", async () => {
    const before = await stored();
    const file = multipart('csv', 'reports.csv', 'IP,Categories,ReportDate,Comment\n' + '8.8.8.8,18,2026-11-26T00:00:00Z,'.padEnd(120, 'c').concat('\n').repeat(25_000));
    for (const headers of [{}, { Key: UNKNOWN_KEY }, { Key: revoked }] as Record<string, string>[]) {
      const res = await rawCall(s.origin, '/abuseipdb/api/v2/bulk-report', { method: 'POST', headers: { ...headers, 'content-type': file.type }, body: file.body });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ errors: [{ detail: KEYLESS_MESSAGE, status: 413 }] });
      const json = await rawCall(s.origin, '/abuseipdb/api/v2/report', { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: NOT_JSON });
      expect(json.status).toBe(413);
      expect(json.body).toEqual({ errors: [{ detail: KEYLESS_MESSAGE, status: 413 }] });
    }
    // Without a declared length, multer stops the file at 64 KiB.
    const chunked = await streamed('/abuseipdb/api/v2/bulk-report', { 'content-type': file.type, Key: UNKNOWN_KEY }, [file.head, ...repeated('8.8.8.8,18,,'.padEnd(1024, 'c') + '\n', 2_000), file.tail]);
    expect(chunked.status).toBe(413);
    expect(chunked.body.errors[0]).toMatchObject({ status: 413 });
    expect(await stored()).toEqual(before);
  });

  it('is not read at all on a path no API answers', async () => {
    const res = await rawCall(s.origin, '/API/V2/bulk-report', { method: 'POST', headers: { 'content-type': 'application/json' }, body: NOT_JSON });
    expect(res.status).toBe(404);
  });
});

describe('a body with a valid key', () => {
  it('may still be up to 3 MiB: a 2.9 MiB bulk report is stored', { timeout: 120_000 }, async () => {
    // 100 lines with long comments (shortened when stored), non-ASCII written as \\u escapes as
    // PHP's json_encode does: a CSV within its 2 MiB in a JSON body of about 2.9 MiB.
    const comment = 'x'.repeat(14_500) + 'é'.repeat(2_600);
    const csv = ['IP,Categories,Comment', ...Array.from({ length: 100 }, (_, i) => `8.8.4.${i + 1},18,${comment}`)].join('\n');
    const body = JSON.stringify({ csv }).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    expect(Buffer.byteLength(csv)).toBeLessThanOrEqual(2 * MiB);
    expect(body.length).toBeGreaterThan(2.85 * MiB);
    expect(body.length).toBeLessThan(3 * MiB);
    const res = await rawCall(s.origin, '/api/v2/bulk-report', { method: 'POST', key: ent, headers: { 'content-type': 'application/json' }, body });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ success_count: 100, error_count: 0 });
    // Above 3 MiB it is refused with the limit for keys.
    const over = await rawCall(s.origin, '/api/v2/bulk-report', { method: 'POST', key: ent, headers: { 'content-type': 'application/json' }, body: NOT_JSON + 'x'.repeat(MiB) });
    expect(over.status).toBe(413);
    expect(over.body.meta.message).toBe(`The request body is larger than the limit of ${3 * MiB} bytes.`);
  });

  it('may still send AbuseIPDB a CSV file of up to 2 MiB', { timeout: 120_000 }, async () => {
    const line = (i: number) => `8.8.5.${i + 1},18,2026-11-26T00:00:00Z,${'d'.repeat(19_000)}\n`;
    const file = multipart('csv', 'reports.csv', 'IP,Categories,ReportDate,Comment\n' + Array.from({ length: 100 }, (_, i) => line(i)).join(''));
    expect(file.body.length).toBeGreaterThan(1.8 * MiB);
    expect(file.body.length).toBeLessThan(2 * MiB);
    const res = await rawCall(s.origin, '/abuseipdb/api/v2/bulk-report', { method: 'POST', headers: { Key: ent, 'content-type': file.type }, body: file.body });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ savedReports: 100, invalidReports: [] });
  });
});
