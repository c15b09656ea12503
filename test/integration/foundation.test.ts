import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../support/server.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const JSON_TYPE = 'application/json; charset=utf-8';

async function raw(path: string, init: RequestInit = {}) {
  const res = await fetch(s.origin + path, init);
  const text = await res.text();
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: res.status, headers: res.headers, body };
}

function expectErrorEnvelope(body: any, status: number) {
  expect(body.meta.success).toBe(false);
  expect(body.meta.code).toBe(status);
  expect(typeof body.meta.message).toBe('string');
  expect(body.meta.message).not.toMatch(/\n\s+at /); // no stack trace
}

describe('GET /categories', () => {
  it('lists the 30 threat categories in the envelope', async () => {
    const { data, response } = await s.client.GET('/categories');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(JSON_TYPE);
    expect(data!.meta.success).toBe(true);
    expect(data!.data).toHaveLength(30);
    expect(data!.data[0]).toEqual({
      id: 1,
      name: 'DNS Compromise',
      description: expect.any(String),
      severity_level: expect.any(Number),
    });
    expect(data!.data.map((c) => c.id)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    expect(data!.data.find((c) => c.id === 22)!.name).toBe('SSH');
  });

  it('refuses an unknown query parameter with 400 naming it', async () => {
    const res = await raw('/api/v2/categories?colour=red');
    expect(res.status).toBe(400);
    expectErrorEnvelope(res.body, 400);
    expect(res.body.data).toBeNull();
    expect(res.body.meta.message).toContain('colour');
    expect(res.body.meta.errors).toEqual([expect.objectContaining({ location: 'query', name: 'colour' })]);
  });

  it('refuses a wrong method with 405 in the envelope', async () => {
    const res = await raw('/api/v2/categories', { method: 'PUT' });
    expect(res.status).toBe(405);
    expectErrorEnvelope(res.body, 405);
  });
});

describe('GET /verify-key', () => {
  it('describes a key sent in the X-Key header', async () => {
    const key = await s.createKey('professional', { name: 'shop.example.com' });
    const { data, response } = await s.clientFor(key.key).GET('/verify-key');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(JSON_TYPE);
    const tomorrow = new Date(Date.UTC(s.clock.now().getUTCFullYear(), s.clock.now().getUTCMonth(), s.clock.now().getUTCDate() + 1));
    expect(data!.data).toEqual({
      valid: true,
      role: 'professional',
      permissions: {
        check: true,
        report: true,
        bulk_check: true,
        bulk_report: false,
        reports_detail: true,
        trends: true,
      },
      rateLimits: { checksPerDay: 25_000, reportsPerDay: 1_000 },
      usage: { checksToday: 0, reportsToday: 0 },
      keyName: 'shop.example.com',
      userRole: 'reportedip_professional',
      isHoneypotKey: false,
      limits: {
        dailyApiLimit: 25_000,
        remainingApiCalls: 25_000,
        dailyReportLimit: 1_000,
        remainingReports: 1_000,
        dailyReportUsage: 0,
        resetTime: tomorrow.toISOString(),
      },
      domains: { used: 0, limit: 10, status: 'ok' },
      features: { canCheck: true, canReport: true, canBulkCheck: true, hasWhiteLabel: false },
    });
  });

  it('describes a key sent in the key query parameter', async () => {
    const key = await s.createKey('business', { licences: 5 });
    const { data, response } = await s.client.GET('/verify-key', { params: { query: { key: key.key } as never } });
    expect(response.status).toBe(200);
    expect(data!.data.role).toBe('business');
    expect(data!.data.rateLimits).toEqual({ checksPerDay: 500_000, reportsPerDay: 25_000 });
  });

  it('reports unlimited quotas as -1', async () => {
    const key = await s.createKey('enterprise');
    const { data } = await s.clientFor(key.key).GET('/verify-key');
    expect(data!.data.rateLimits).toEqual({ checksPerDay: -1, reportsPerDay: -1 });
    expect(data!.data.permissions.bulk_report).toBe(true);
  });

  it.each([
    ['no key', {}],
    ['a malformed key', { 'X-Key': 'not-a-key' }],
    ['an unknown key', { 'X-Key': 'trs_' + 'A'.repeat(43) }],
  ])('answers 401 in the envelope for %s', async (name, headers) => {
    const res = await raw('/api/v2/verify-key', { headers });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({
      meta: { success: false, code: 401, message: 'Invalid or missing API key.' },
      data: null,
      code: name === 'no key' ? 'missing_api_key' : 'invalid_api_key',
      message: 'Invalid or missing API key: send it in the X-Key header.',
    });
  });

  it('stops accepting a revoked key', async () => {
    const key = await s.createKey('free');
    const before = await raw('/api/v2/verify-key', { headers: { 'X-Key': key.key } });
    expect(before.status).toBe(200);
    const { KeyService } = await import('../../src/keys/service.js');
    expect(await new KeyService(s.orm.em).revoke(key.keyId, new Date())).toBe(true);
    const after = await raw('/api/v2/verify-key', { headers: { 'X-Key': key.key } });
    expect(after.status).toBe(401);
  });

  it('refuses an invalid key on a public endpoint too', async () => {
    const res = await raw('/api/v2/categories', { headers: { 'X-Key': 'trs_' + 'B'.repeat(43) } });
    expect(res.status).toBe(401);
  });
});

describe('errors in the envelope', () => {
  it('names a bad parameter with 400', async () => {
    const res = await raw('/api/v2/check-public?ip=999.1.1.1');
    expect(res.status).toBe(400);
    expectErrorEnvelope(res.body, 400);
    expect(res.body.meta.message).toContain("'ip'");
    expect(res.body.meta.errors[0]).toMatchObject({ location: 'query', name: 'ip' });
  });

  it('answers an unknown path with 404', async () => {
    for (const path of ['/api/v2/nope', '/nothing-here']) {
      const res = await raw(path);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expectErrorEnvelope(res.body, 404);
    }
  });

  it('answers a malformed JSON body with 400', async () => {
    const key = await s.createKey('free');
    const res = await raw('/api/v2/report', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Key': key.key },
      body: '{"ip": "203.0.113.9", ',
    });
    expect(res.status).toBe(400);
    expectErrorEnvelope(res.body, 400);
    expect(res.body.meta.message).toMatch(/not valid JSON/);
  });

  it('answers a body that is not JSON with 415', async () => {
    const key = await s.createKey('free');
    const res = await raw('/api/v2/report', {
      method: 'POST',
      headers: { 'content-type': 'text/plain', 'X-Key': key.key },
      body: 'ip=203.0.113.9',
    });
    expect(res.status).toBe(415);
    expectErrorEnvelope(res.body, 415);
  });

  it('answers a body over the limit with 413', async () => {
    const key = await s.createKey('enterprise');
    const res = await raw('/api/v2/bulk-report', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'X-Key': key.key },
      body: JSON.stringify({ csv: 'x'.repeat(4 * 1024 * 1024) }),
    });
    expect(res.status).toBe(413);
    expectErrorEnvelope(res.body, 413);
  });
});

describe('operational endpoints', () => {
  it('serves /healthz and /readyz', async () => {
    expect((await raw('/healthz')).body).toEqual({ status: 'ok' });
    expect((await raw('/readyz')).body).toEqual({ status: 'ok', database: 'up' });
  });

  it('serves the contract as JSON and YAML', async () => {
    const json = await raw('/api/v2/openapi.json');
    expect(json.status).toBe(200);
    expect(json.body.openapi).toBe('3.1.0');
    expect(Object.keys(json.body.paths)).toHaveLength(36);
    const yaml = await fetch(s.origin + '/api/v2/openapi.yaml');
    expect(yaml.headers.get('content-type')).toMatch(/^application\/yaml/);
    expect(await yaml.text()).toMatch(/^openapi: 3\.1\.0$/m);
  });

  it('sets security headers and hides the framework', async () => {
    const res = await raw('/api/v2/categories');
    expect(res.headers.get('x-powered-by')).toBeNull();
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });
});

describe('keys in logs', () => {
  it('never writes a key sent in the header or the query string', async () => {
    const key = await s.createKey('contributor');
    await raw('/api/v2/verify-key', { headers: { 'X-Key': key.key } });
    await raw(`/api/v2/verify-key?key=${key.key}`);
    await raw(`/api/v2/categories?key=${encodeURIComponent(key.key)}&colour=1`);
    const logs = s.logs.join('');
    expect(logs).toContain('/api/v2/verify-key?key=[redacted]');
    expect(logs).not.toContain(key.key);
    expect(logs).not.toContain(key.key.slice(4));
  });
});

describe('key lookups cached for KEY_CACHE_SECONDS', () => {
  it('honour a revocation on every process once the cache time has passed', async () => {
    const cached = await startTestServer({ config: { keyCacheMs: 10_000 } });
    try {
      const sibling = await cached.sibling();
      const key = await cached.createKey('free');
      const get = (server: typeof cached) => fetch(`${server.base}/verify-key`, { headers: { 'X-Key': key.key } });
      expect((await get(cached)).status).toBe(200);
      expect((await get(sibling)).status).toBe(200);
      const { KeyService } = await import('../../src/keys/service.js');
      await new KeyService(cached.orm.em).revoke(key.keyId, new Date());
      cached.clock.advance(9_000);
      expect((await get(cached)).status).toBe(200); // still trusted inside the cache time
      cached.clock.advance(1_001);
      expect((await get(cached)).status).toBe(401);
      expect((await get(sibling)).status).toBe(401);
      await sibling.close();
    } finally {
      await cached.close();
    }
    // Two servers of its own start here: 12 s alone, over 30 s beside two other files on 2 cores.
  }, 90_000);
});

describe('observability', () => {
  it('serves Prometheus metrics per operation and status, and request ids in every log line', async () => {
    const key = await s.createKey('free');
    await raw('/api/v2/verify-key', { headers: { 'X-Key': key.key, 'X-Request-Id': 'trace-abc-123' } });
    await raw('/api/v2/verify-key');
    const res = await fetch(s.origin + '/metrics');
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/trs_http_requests_total\{operation="verifyKey",status="200"\} [1-9]/);
    expect(text).toMatch(/trs_http_requests_total\{operation="verifyKey",status="401"\} [1-9]/);
    expect(text).toMatch(/trs_http_request_duration_seconds_bucket\{le="0\.1",operation="verifyKey"\}/);
    expect(text).toContain('trs_db_pool_connections{state="total"}');
    expect(text).toContain('trs_relay_queue_depth');
    expect(text).toContain('trs_quota_refusals_total');
    const lines = s.logs.filter((l) => l.includes('trace-abc-123'));
    expect(lines.length).toBeGreaterThan(0);
    expect(JSON.parse(lines[0]!)).toMatchObject({ reqId: 'trace-abc-123', res: { statusCode: 200 } });
  });
});
