import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES } from '../../src/roles.js';
import { loadApiArtifacts } from '../../src/openapi.js';
import { rawCall } from '../support/http.js';
import { dereferencer, DOCUMENTS } from '../support/documents.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { bouncersOf } from '../support/crowdsec.js';

/**
 * Contract fuzzing: thousands of invalid and edge-case requests generated from the OpenAPI
 * documents (/api/v2's, and the CrowdSec and AbuseIPDB protocols'), for every operation. Whatever arrives, the server answers without a 5xx, with a
 * status the document lists for the operation (or 404/405 for what matches none), in the
 * envelope (or the relay's error body), and a refused request stores and charges nothing.
 *
 * Seeded and reproducible: FUZZ_SEED (default 20261122), FUZZ_RUNS (default 3000; try 50000).
 */
const SEED = Number(process.env.FUZZ_SEED ?? 20261122);
const RUNS = Number(process.env.FUZZ_RUNS ?? 3000);

interface Operation {
  id: string;
  method: string;
  base: string;
  protocol: (typeof DOCUMENTS)[number]['protocol'];
  path: string;
  params: { name: string; in: 'query' | 'path' | 'header'; required: boolean; example: unknown }[];
  bodyExample: unknown;
  statuses: Set<number>;
  relay: boolean;
}

const operations: Operation[] = DOCUMENTS.flatMap(({ base, doc, protocol }) => {
  const resolve = dereferencer(doc);
  return Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({
      id: op.operationId as string,
      method: method.toUpperCase(),
      base,
      protocol,
      path,
      params: ((op.parameters ?? []) as any[]).map(resolve).map((p: any) => ({
        name: p.name,
        in: p.in,
        required: !!p.required,
        example: p.example ?? p.schema?.default ?? 'x',
      })),
      bodyExample: (() => {
        const content = resolve(op.requestBody)?.content?.['application/json'];
        const example = content && Object.values(content.examples ?? {})[0];
        return example ? resolve(example).value : undefined;
      })(),
      statuses: new Set(Object.keys(op.responses).filter((s) => /^\d+$/.test(s)).map(Number)),
      relay: /relay/i.test(op.operationId),
    })),
  );
});

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const keys: string[] = [];
let bouncerKey: string;

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  s = await startTestServer({
    config: { relay: { mail: { smtpUrl: smtp.url, from: 'relay@example.net' }, sms: { url: sms.url, token: sms.token } } },
  });
  for (const role of ROLES) keys.push((await s.createKey(role, role === 'business' ? { licences: 2 } : {})).key);
  bouncerKey = (await bouncersOf(s).add('fuzzed', { confidence: 0 })).key;
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

const NASTY = [
  '', ' ', '0', '-1', '1.5', '1e309', 'NaN', 'null', 'true', '[]', '{}', '\u0000', 'a\u0000b', '𝕏𝕐', '\uFFFF', '\u202Eevil',
  '../../etc/passwd', "' OR 1=1 --", '99999999999999999999', '2001:db8::1', '::ffff:1.2.3.4', '300.1.1.1', '1.2.3', 'AS',
  '<script>alert(1)</script>', '%', '%%', '%E0%A4%A', '%00', '%FF%FE', 'x'.repeat(70), 'LONG',
  // Header and recipient injection: line breaks, lists, groups, comments, display names.
  'a4@example.com\r\nBcc: evil4@attacker.test', 'v@example.com\nSender: x@attacker.test', '\r\n', 'x\u2028y',
  'victim@example.com (one)', 'Bob <victim@example.com>', 'a@example.com, b@example.com', 'grp: a@example.com;',
];
/** Mail headers a caller might try to add: identity, routing and encoding headers, and line breaks. */
const NASTY_HEADERS: unknown[] = [
  [{ name: 'Sender', value: 'ceo@example.com' }],
  [{ name: 'Return-Path', value: 'bounce@attacker.test' }],
  [{ name: 'Reply-To', value: 'x@attacker.test' }],
  [{ name: 'Bcc', value: 'x@attacker.test' }],
  [{ name: 'X-Ok', value: 'a\r\nBcc: x@attacker.test' }],
  [{ name: 'X-Ok\r\nBcc', value: 'x@attacker.test' }],
  [{ name: 'Content-Type', value: 'text/html; boundary="x"\r\n\r\n<script>' }],
  { 'X-Ok': 'fine', Bcc: 'x@attacker.test' },
];
const nastyText = fc.oneof(fc.constantFrom(...NASTY), fc.string({ maxLength: 40 }), fc.integer().map(String), fc.double().map(String));
const nastyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1e308, 2 ** 53 + 1, '', [], {}, [[[]]], { a: { b: { c: {} } } }),
  nastyText,
  fc.array(nastyText, { maxLength: 5 }),
  fc.integer({ min: 990, max: 1010 }).map((n) => `MANY:${n}`),
  fc.constantFrom(...NASTY_HEADERS),
  fc.record({ code: nastyText, expiry_min: fc.oneof(fc.integer({ min: -10, max: 100 }), nastyText) }),
);

/**
 * Other spellings of a path: each must answer 404, or (a percent-encoded letter, which is the
 * canonical path itself) exactly what the canonical path answers.
 */
const PATH_VARIANTS = ['upper-base', 'upper-path', 'trailing-slash', 'double-slash', 'encoded-letter', 'dot-segment', 'encoded-slash'] as const;
function pathVariant(base: string, path: string, variant: (typeof PATH_VARIANTS)[number]): string {
  switch (variant) {
    case 'upper-base':
      return base.toUpperCase() + path;
    case 'upper-path':
      return base + path.toUpperCase();
    case 'trailing-slash':
      return base + path + '/';
    case 'double-slash':
      return base + '/' + path;
    case 'encoded-letter':
      return base + path.replace(/[a-z]/, (c) => '%' + c.charCodeAt(0).toString(16));
    case 'dot-segment':
      return base + '/x/..' + path;
    case 'encoded-slash':
      return base + path.replace('/', '%2F');
  }
}
/** Large values are generated as short tags and built when the request is made, so that a
 *  failing case prints small. */
const expand = (value: unknown): unknown =>
  typeof value === 'string' && value.startsWith('MANY:')
    ? Array.from({ length: Number(value.slice(5)) }, (_, i) => `8.8.${i >> 8}.${i & 255}`)
    : value;
const LARGE: Record<string, () => string> = {
  DEEP: () => '['.repeat(5000) + ']'.repeat(5000),
  OVERSIZE: () => JSON.stringify({ csv: 'z'.repeat(3_200_000) }),
};

/** Encodes a query value, sometimes leaving raw percent signs (bad encodings) as they are. */
const encode = (value: string, raw: boolean) => (raw ? value.replace(/[&#\s]/g, '') : encodeURIComponent(value));

type Mutation =
  | { kind: 'valid' }
  | { kind: 'param'; index: number; value: string; raw: boolean }
  | { kind: 'drop'; index: number }
  | { kind: 'unknown'; name: string }
  | { kind: 'repeat'; index: number }
  | { kind: 'field'; field: string; value: unknown }
  | { kind: 'body'; text: string; contentType: string; encoding?: string }
  | { kind: 'path'; variant: (typeof PATH_VARIANTS)[number] };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  { weight: 1, arbitrary: fc.constant<Mutation>({ kind: 'valid' }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('param' as const), index: fc.nat(20), value: nastyText, raw: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), index: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unknown' as const), name: fc.constantFrom('admin', 'debug', 'sort', '__proto__', 'ip[]') }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('repeat' as const), index: fc.nat(20) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('path' as const), variant: fc.constantFrom(...PATH_VARIANTS) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('field' as const),
      field: fc.constantFrom('ip', 'ips', 'categories', 'comment', 'csv', 'recipient', 'subject', 'headers', 'reply_to', 'recipient_phone', 'template_vars', 'message', 'site_url', 'extra'),
      value: nastyJson,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.oneof(
      fc.constant<Mutation>({ kind: 'body', text: '{"ip": "8.8.8.8", "ip": "9.9.9.9", "categories": [4], "categories": []}', contentType: 'application/json' }),
      fc.constant<Mutation>({ kind: 'body', text: 'DEEP', contentType: 'application/json' }),
      fc.constant<Mutation>({ kind: 'body', text: '{"ip": ', contentType: 'application/json' }),
      fc.constant<Mutation>({ kind: 'body', text: 'ip=8.8.8.8', contentType: 'application/x-www-form-urlencoded' }),
      fc.constant<Mutation>({ kind: 'body', text: '{}', contentType: 'text/plain' }),
      fc.constant<Mutation>({ kind: 'body', text: '{"csv": "8.8.8.8,4"}', contentType: 'application/json; charset=latin1' }),
      fc.constant<Mutation>({ kind: 'body', text: '{"ips": ["8.8.8.8"]}', contentType: 'application/json', encoding: 'gzip' }),
      fc.constant<Mutation>({ kind: 'body', text: 'OVERSIZE', contentType: 'application/json' }),
      fc.constant<Mutation>({ kind: 'body', text: '\u0000\u0001\u0002', contentType: 'application/json' }),
    ),
  },
);

/** A request whose path goes on the wire exactly as given; answers like fetch's Response (status, text). */
async function onTheWire(path: string, query: string[], method: string, headers: Record<string, string>, body: string | undefined) {
  const res = await rawCall(s.origin, `${path}${query.length ? '?' + query.join('&') : ''}`, { method, headers, body });
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  return { status: res.status, text: async () => text };
}

async function counts(): Promise<string> {
  const { rows } = await s.pool.query(
    `select (select count(*) from reports) as r, (select coalesce(sum(used), 0) from usage_counters) as u,
            (select count(*) from relay_messages) as m, (select coalesce(sum(inclusive_used), 0) from relay_usage) as i`,
  );
  return JSON.stringify(rows[0]);
}

describe('contract fuzzing', () => {
  it(`answers ${RUNS} generated requests within the contract (seed ${SEED})`, async () => {
    let cases = 0;
    const pathChecks = { notFound: 0, sameAsCanonical: 0 };
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.nat(operations.length - 1), fc.nat(ROLES.length + 1), mutation, async (opIndex, keyIndex, m) => {
        const op = operations[opIndex]!;
        cases++;
        const params = op.params.map((p) => ({ ...p, value: String(p.example), raw: false }));
        const extraQuery: string[] = [];
        let body: string | undefined = op.bodyExample === undefined ? undefined : JSON.stringify(op.bodyExample);
        let contentType = 'application/json';
        let encoding: string | undefined;
        if (m.kind === 'param' && params.length) {
          Object.assign(params[m.index % params.length]!, { value: m.value === 'LONG' ? 'y'.repeat(5000) : m.value, raw: m.raw });
        }
        if (m.kind === 'drop' && params.length) params.splice(m.index % params.length, 1);
        if (m.kind === 'unknown') extraQuery.push(`${m.name}=1`);
        if (m.kind === 'repeat' && params.length) {
          const p = params[m.index % params.length]!;
          if (p.in === 'query') extraQuery.push(`${p.name}=${encodeURIComponent(p.value)}`);
        }
        if (m.kind === 'field' && op.bodyExample !== undefined) body = JSON.stringify({ ...(op.bodyExample as object), [m.field]: expand(m.value) });
        if (m.kind === 'body' && op.method === 'POST') {
          ({ contentType, encoding } = m);
          body = LARGE[m.text]?.() ?? m.text;
        }

        let path = op.path;
        const query: string[] = [];
        const headers: Record<string, string> = {};
        for (const p of params) {
          if (p.in === 'path') path = path.replace(`{${p.name}}`, encode(p.value, p.raw) || '%20');
          else if (p.in === 'query') query.push(`${p.name}=${encode(p.value, p.raw)}`);
          else if (p.in === 'header' && !/[\r\n\u0000-\u001f\u007f-\uffff]/.test(p.value)) headers[p.name] = p.value;
        }
        query.push(...extraQuery);
        // Each protocol's key in its own header: a role's key, an unknown one, or none.
        const keyHeader = op.protocol === 'crowdsec' ? 'X-Api-Key' : op.protocol === 'abuseipdb' ? 'Key' : 'X-Key';
        if (op.protocol === 'crowdsec') {
          if (keyIndex < ROLES.length) headers[keyHeader] = bouncerKey;
          else if (keyIndex === ROLES.length) headers[keyHeader] = 'trsb_' + 'F'.repeat(43);
        } else if (keyIndex < ROLES.length) headers[keyHeader] = keys[keyIndex]!;
        else if (keyIndex === ROLES.length) headers[keyHeader] = 'trs_' + 'F'.repeat(43);
        if (op.method === 'POST') {
          headers['content-type'] = contentType;
          if (encoding) headers['content-encoding'] = encoding;
        }
        const fullPath = m.kind === 'path' ? pathVariant(op.base, path, m.variant) : op.base + path;
        const url = `${s.origin}${fullPath}${query.length ? '?' + query.join('&') : ''}`;
        const before = await counts();
        let res: Pick<Response, 'status' | 'text'>;
        try {
          // A path variant goes on the wire as written (fetch would resolve a dot segment first).
          res = m.kind === 'path' ? await onTheWire(fullPath, query, op.method, headers, op.method === 'POST' ? body : undefined) : await fetch(url, { method: op.method, headers, body: op.method === 'POST' ? body : undefined });
        } catch (err) {
          // The client refused to send it (an invalid URL or header); nothing reached the server.
          // A "fetch failed" is the server going away: that is a failure, never a pass.
          if (err instanceof TypeError && err.message !== 'fetch failed') return;
          throw err;
        }
        const text = await res.text();
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        const where = `${op.method} ${url.slice(0, 200)} (${m.kind}${m.kind === 'path' ? ` ${m.variant}` : ''}) -> ${res.status} ${text.slice(0, 200)}`;
        expect(res.status, where).toBeLessThan(500);
        if (res.status !== 404 && res.status !== 405) expect(op.statuses.has(res.status), where).toBe(true);
        // Another spelling of the path has no canonical form (404), but a percent-encoded letter
        // is the canonical path itself.
        if (m.kind === 'path' && m.variant !== 'encoded-letter') {
          expect(res.status, where).toBe(404);
          pathChecks.notFound++;
        }
        if (res.status >= 400) {
          const json = JSON.parse(text);
          const fromProtocol = fullPath.startsWith(op.base + '/') && res.status !== 405;
          if (op.relay && res.status !== 404 && res.status !== 405) {
            expect(json, where).toMatchObject({ ok: false, code: expect.any(String), message: expect.any(String) });
          } else if (op.protocol === 'crowdsec' && fromProtocol) {
            expect(json, where).toEqual({ message: expect.any(String), ...(json.errors ? { errors: expect.any(String) } : {}) });
          } else if (op.protocol === 'abuseipdb' && fromProtocol) {
            expect(json.errors?.[0], where).toMatchObject({ detail: expect.any(String), status: res.status });
          } else {
            expect(json.meta, where).toMatchObject({ success: false, code: res.status, message: expect.any(String) });
          }
          expect(text, where).not.toMatch(/\n\s+at |node_modules|syntax error at/);
          // Asking for a delisting, or after one, costs the call whether it is taken or refused
          // (x-charge, a plain charge made before the handler): a stranger probing addresses or
          // tokens spends allowance too. Everything else a refusal leaves as it was.
          const after = await counts();
          if (/^(create|get)DelistRequest$/.test(op.id) && (res.status === 422 || res.status === 404)) {
            const [a, b] = [JSON.parse(after), JSON.parse(before)];
            expect({ ...a, u: 0 }, where).toEqual({ ...b, u: 0 });
            expect(Number(a.u) - Number(b.u), where).toBeLessThanOrEqual(1);
          }
          else expect(after, `${where}: a refused request changed stored data`).toBe(before);
        }
        if (m.kind === 'path' && m.variant === 'encoded-letter') {
          // The same request on the canonical path, right after: the same answer. A refusal
          // changed nothing (asserted above) and a read changes nothing it shows, so those must
          // match exactly. An accepted write is a second write: the same status, unless the
          // first used up a limit (a relay recipient's free messages), which is then a 429.
          const again = await onTheWire(`${op.base}${path}`, query, op.method, headers, op.method === 'POST' ? body : undefined);
          const againText = await again.text();
          const canonicalWhere = `${where}; canonical ${op.base}${path} -> ${again.status} ${againText.slice(0, 200)}`;
          if (res.status >= 400 || op.method === 'GET') {
            expect(again.status, canonicalWhere).toBe(res.status);
            expect(againText, canonicalWhere).toBe(text);
          } else {
            expect([res.status, 429], canonicalWhere).toContain(again.status);
          }
          pathChecks.sameAsCanonical++;
        }
      }),
      { seed: SEED, numRuns: RUNS, endOnFailure: true },
    );
    console.log(`fuzz: ${cases} cases, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort()))}, path variants ${JSON.stringify(pathChecks)}`);
    expect(pathChecks.notFound + pathChecks.sameAsCanonical).toBeGreaterThan(0);
  }, 600_000);
});
