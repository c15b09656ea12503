import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { rawCall } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * L4 (review of 2026-11-26): without METRICS_TOKEN, /metrics answered any request from loopback
 * that carried no X-Forwarded-For or Forwarded, so behind a proxy that sets only X-Real-IP (nginx's
 * usual configuration) or Via, the metrics were public. Now any header a proxy adds marks the
 * request as proxied, and with NODE_ENV=production a token is required (403 without it).
 */
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const PROXY_HEADERS: Record<string, string> = {
  'X-Real-IP': '203.0.113.5',
  Via: '1.1 proxy',
  'X-Forwarded-Host': 'trs.example.com',
  'X-Forwarded-Proto': 'https',
  'X-Forwarded-Port': '443',
  'X-Forwarded-Server': 'proxy.example.com',
  'X-Forwarded-Prefix': '/trs',
  'X-Forwarded-For': '203.0.113.5',
  Forwarded: 'for=203.0.113.5',
  'X-Client-IP': '203.0.113.5',
  'X-Cluster-Client-IP': '203.0.113.5',
  'True-Client-IP': '203.0.113.5',
  'CF-Connecting-IP': '203.0.113.5',
  'Fastly-Client-IP': '203.0.113.5',
};

describe('/metrics without a token, outside production', () => {
  it('answers a loopback caller that came through no proxy', async () => {
    const res = await rawCall(s.origin, '/metrics');
    expect(res.status).toBe(200);
    expect(res.body).toContain('trs_http_requests_total');
  });

  for (const [name, value] of Object.entries(PROXY_HEADERS)) {
    it(`refuses a request from loopback that carries ${name} (a proxy's), and shows nothing`, async () => {
      const res = await rawCall(s.origin, '/metrics', { headers: { [name]: value } });
      expect(res.status).toBe(403);
      expect(String(res.body)).not.toContain('trs_');
      expect(String(res.body)).toContain('METRICS_TOKEN');
    });
  }
});

describe('/metrics with NODE_ENV=production', () => {
  it('needs a token: production turns loopback access off, and nothing else changes', () => {
    expect(loadConfig({ NODE_ENV: 'production' }).metricsLoopback).toBe(false);
    expect(loadConfig({}).metricsLoopback).toBe(true);
  });

  it('answers 403 saying to set METRICS_TOKEN, even to loopback without a proxy; health and the API still answer', async () => {
    const prod = await s.sibling({ metricsLoopback: false });
    try {
      const res = await rawCall(prod.origin, '/metrics');
      expect(res.status).toBe(403);
      expect(String(res.body)).toContain('set METRICS_TOKEN');
      expect(String(res.body)).not.toContain('trs_');
      expect((await rawCall(prod.origin, '/healthz')).status).toBe(200);
      expect((await rawCall(prod.origin, '/readyz')).status).toBe(200);
      expect((await rawCall(prod.origin, '/api/v2/categories')).status).toBe(200);
      expect(prod.logs.some((line) => line.includes('GET /metrics answers 403 until METRICS_TOKEN is set'))).toBe(true);
    } finally {
      await prod.close();
    }
  });

  it('serves the metrics for the bearer token only', async () => {
    const token = 'production-metrics-token-0123';
    const prod = await s.sibling({ metricsLoopback: false, metricsToken: token });
    try {
      expect((await rawCall(prod.origin, '/metrics')).status).toBe(401);
      expect((await rawCall(prod.origin, '/metrics', { headers: { 'X-Real-IP': '203.0.113.5' } })).status).toBe(401);
      const res = await rawCall(prod.origin, '/metrics', { headers: { Authorization: `Bearer ${token}`, 'X-Real-IP': '203.0.113.5' } });
      expect(res.status).toBe(200);
      expect(res.body).toContain('trs_http_requests_total');
    } finally {
      await prod.close();
    }
  });
});
