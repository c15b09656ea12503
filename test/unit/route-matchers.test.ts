import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { describe, expect, it } from 'vitest';
import { memoiseValidatorRouteMatchers } from '../../src/http/route-matchers.js';
import { API_BASE, loadApiArtifacts } from '../../src/openapi.js';

describe('the validator route matchers', () => {
  it('compiles each route of the document once, not once per request', async () => {
    const stats = memoiseValidatorRouteMatchers();
    const { document } = loadApiArtifacts();
    const app = express();
    app.set('case sensitive routing', true);
    app.set('strict routing', true);
    app.use(OpenApiValidator.middleware({ apiSpec: document, validateRequests: false, validateResponses: false, validateSecurity: false }));
    app.get(`${API_BASE}/categories`, (_req, res) => {
      res.json({ ok: true });
    });
    const server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${API_BASE}/categories`;
    try {
      expect((await fetch(url)).status).toBe(200);
      const afterFirst = { ...stats };
      for (let i = 0; i < 5; i++) expect((await fetch(url)).status).toBe(200);
      // If a validator upgrade stops calling path-to-regexp through its export, nothing is
      // reused here: then check whether upstream caches the matchers and drop route-matchers.ts.
      expect(stats.compiled).toBe(afterFirst.compiled);
      expect(stats.reused - afterFirst.reused).toBeGreaterThanOrEqual(5);
    } finally {
      server.close();
    }
  });
});
