import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import express, { type ErrorRequestHandler, type RequestHandler } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAddress } from '../../src/address.js';
import { load, openApiValidator } from '../../src/http/validator.js';
import { API_BASE, loadApiArtifacts } from '../../src/openapi.js';

/**
 * src/http/validator.ts runs express-openapi-validator's steps directly, built from the library's
 * own classes. Here the same requests go through the library's `middleware()` and through
 * `openApiValidator`: each must end the same (the operation matched, its path parameters, the
 * coerced query and body, or the same error), the first time and every time after (the kept
 * operations of parameterless paths).
 */
const { document } = loadApiArtifacts();
const options = {
  apiSpec: document,
  validateApiSpec: false,
  validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: true },
  validateResponses: false,
  validateSecurity: false,
  validateFormats: true,
  formats: { ip: { type: 'string', validate: (value: string) => parseAddress(value) !== undefined } },
  ignoreUndocumented: false,
  useRequestUrl: true,
  ignorePaths: (path: string) => !path.startsWith(`${API_BASE}/`),
  fileUploader: false,
} as const;

/** What a request ended as: its operation and what the validator made of it, or its error. */
const outcome: RequestHandler = (req, res) => {
  const openapi = (req as { openapi?: { openApiRoute: string; pathParams: Record<string, string>; schema: { operationId?: string } } }).openapi;
  res.json({ route: openapi?.openApiRoute, operationId: openapi?.schema.operationId, pathParams: openapi?.pathParams, params: req.params, query: req.query, body: req.body });
};
const failure: ErrorRequestHandler = (err: { status?: number; message: string; errors?: unknown; headers?: unknown }, _req, res, _next) => {
  res.status(err.status ?? 500).json({ message: err.message, errors: err.errors, headers: err.headers });
};

async function serve(validation: (app: express.Express) => RequestHandler | RequestHandler[]) {
  const app = express();
  app.set('case sensitive routing', true);
  app.set('strict routing', true);
  app.set('query parser', 'simple');
  app.use(express.json());
  app.use(validation(app));
  app.use(outcome);
  app.use(failure);
  const server = app.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

let library: Awaited<ReturnType<typeof serve>>;
let direct: Awaited<ReturnType<typeof serve>>;
beforeAll(async () => {
  library = await serve(() => OpenApiValidator.middleware(options) as unknown as RequestHandler[]);
  direct = await serve((app) => openApiValidator(app, options));
});
afterAll(() => {
  library?.server.close();
  direct?.server.close();
});

const REQUESTS: { method: string; path: string; body?: unknown }[] = [
  { method: 'GET', path: `${API_BASE}/check?ip=203.0.113.7&verbose=true` },
  { method: 'GET', path: `${API_BASE}/check?ip=203.0.113.7&include_reports=maybe` },
  { method: 'GET', path: `${API_BASE}/check?ip=not-an-address` },
  { method: 'GET', path: `${API_BASE}/check?ip=203.0.113.7&unknown=1` },
  { method: 'GET', path: `${API_BASE}/check` },
  { method: 'POST', path: `${API_BASE}/check` },
  { method: 'GET', path: `${API_BASE}/check/` },
  { method: 'GET', path: `${API_BASE}/CHECK?ip=203.0.113.7` },
  { method: 'GET', path: `${API_BASE}/%63heck?ip=203.0.113.7` },
  { method: 'GET', path: `${API_BASE}/categories` },
  { method: 'GET', path: `${API_BASE}/no-such-thing` },
  { method: 'POST', path: `${API_BASE}/report`, body: { ip: '203.0.113.7', categories: '18,22', comment: 'ssh' } },
  { method: 'POST', path: `${API_BASE}/report`, body: { ip: '203.0.113.7' } },
  { method: 'GET', path: `${API_BASE}/reports/203.0.113.7?page=2` },
  { method: 'GET', path: `${API_BASE}/reports/not-an-address` },
];

async function answer(origin: string, { method, path, body }: (typeof REQUESTS)[number]) {
  const res = await fetch(origin + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

describe("the validator's steps run directly", () => {
  it('end every request as the library does, the first time and after', async () => {
    for (let round = 0; round < 3; round++) {
      for (const request of REQUESTS) {
        const expected = await answer(library.origin, request);
        expect(await answer(direct.origin, request), `${request.method} ${request.path}, round ${round}`).toEqual(expected);
      }
    }
    // The requests cover what matters: operations matched, parameters read, and refusals.
    const check = await answer(direct.origin, REQUESTS[0]!);
    expect(check.body).toMatchObject({ route: `${API_BASE}/check`, query: { ip: '203.0.113.7', verbose: true } });
    expect((await answer(direct.origin, REQUESTS[13]!)).body).toMatchObject({ pathParams: { ip: '203.0.113.7' } });
    expect((await answer(direct.origin, REQUESTS[2]!)).status).toBe(400);
    expect((await answer(direct.origin, REQUESTS[5]!)).status).toBe(405);
  });

  it("builds on the library's classes and methods that its middleware() uses", () => {
    const internals = load();
    for (const made of Object.values(internals)) expect(typeof made).toBe('function');
    const validator = new internals.OpenApiValidator(options) as Record<string, unknown>;
    for (const method of ['installPathParams', 'metadataMiddleware', 'multipartMiddleware', 'requestValidationMiddleware', 'responseValidationMiddleware']) {
      expect(typeof validator[method], method).toBe('function');
    }
    expect(validator).toHaveProperty('ajvOpts.preprocessor');
  });
});
