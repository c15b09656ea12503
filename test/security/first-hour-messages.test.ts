import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * "The first hour", unclear messages: a 401 names the header the key goes in (in the top-level
 * `message`, while `meta.message` keeps the specification's text, which clients may compare),
 * and no refusal ends with two periods ("… cannot be reported..").
 */
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const count = async (table: string) => (await s.pool.query(`select count(*)::int as n from ${table}`)).rows[0].n as number;

describe('401 names the X-Key header', () => {
  it('in the envelope: top-level message with the hint, meta.message as the specification has it', async () => {
    for (const [headers, code] of [
      [{}, 'missing_api_key'],
      [{ 'X-Key': 'trs_' + 'Z'.repeat(43) }, 'invalid_api_key'],
    ] as const) {
      const res = await call(s.origin, '/api/v2/verify-key', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({
        meta: { success: false, code: 401, message: 'Invalid or missing API key.' },
        data: null,
        code,
        message: 'Invalid or missing API key: send it in the X-Key header.',
      });
    }
  });

  it('on the relay: its one message names the header too, and nothing is queued', async () => {
    const res = await call(s.origin, '/api/v2/relay-mail', {
      key: 'trs_' + 'Y'.repeat(43),
      json: { recipient: 'someone@example.net', subject: 'Code', body_text: 'Your code is 123456.' },
    });
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ ok: false, code: 'invalid_api_key', message: 'Invalid or missing API key: send it in the X-Key header.' });
    expect(await count('relay_messages')).toBe(0);
  });
});

describe('refusals end with one period', () => {
  it('a private address reported: "… cannot be reported." once, nothing stored or charged', async () => {
    const { key } = await s.createKey('free');
    const res = await call(s.origin, '/api/v2/report', { key, json: { ip: '10.0.0.1', categories: [18] } });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('address_not_reportable');
    expect(res.body.meta.message).toBe('The report was refused: 10.0.0.1 is a private (RFC 1918) address and cannot be reported.');
    expect(res.body.message).toBe(res.body.meta.message);
    expect(await count('reports')).toBe(0);
    expect(await count('ip_stats')).toBe(0);
  });

  it('the same for feedback on a private address, and for every other refusal: no ".." anywhere', async () => {
    const { key } = await s.createKey('contributor');
    const feedback = await call(s.origin, '/api/v2/whitelist', { key, json: { ipAddress: '192.168.1.1', reason: 'our own' } });
    expect(feedback.status).toBe(422);
    expect(feedback.body.meta.message).toMatch(/^The feedback was refused: 192\.168\.1\.1 is a private .* and cannot be reported\.$/);
    expect(await count('ip_feedback')).toBe(0);
    const refusals = [
      await call(s.origin, '/api/v2/report', { key, json: { ip: '10.0.0.1', categories: [18] } }),
      await call(s.origin, '/api/v2/report', { key, json: { ip: '8.8.8.8', categories: [999] } }),
      await call(s.origin, '/api/v2/check?ip=not-an-ip', { key }),
      await call(s.origin, '/api/v2/blacklist?category=99', { key }),
      await call(s.origin, '/api/v2/report', { key, body: '{"ip":', headers: { 'content-type': 'application/json' } }),
    ];
    for (const res of refusals) {
      expect(res.status, JSON.stringify(res.body)).toBeGreaterThanOrEqual(400);
      expect(res.body.meta.message, JSON.stringify(res.body)).toMatch(/[^.]\.$/);
    }
    expect(await count('reports')).toBe(0);
  });
});
