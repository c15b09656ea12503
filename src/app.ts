import express, { type Express, type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import type * as OpenApiValidator from 'express-openapi-validator';
import { parseAddress } from './address.js';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import { ping, type Pool } from './db/pool.js';
import { authenticateBeforeBody, guard, siteLimit } from './http/auth.js';
import { boundedBodyParsers, multipartLimits } from './http/body-limits.js';
import { ApiError } from './http/errors.js';
import { errorHandler } from './http/error-handler.js';
import { fieldLocations } from './http/field-locations.js';
import { FaultBudget } from './http/fault-budget.js';
import { formArrayFields, formArrays } from './http/form-bodies.js';
import { requestLogger } from './http/logging.js';
import { memoiseValidatorRouteMatchers } from './http/route-matchers.js';
import { canonicalPaths, type PathAlias } from './http/paths.js';
import { Drain } from './http/drain.js';
import { inOrder, runChain } from './http/chain.js';
import { openApiValidator } from './http/validator.js';
import { Metering } from './http/metering.js';
import type { Metrics } from './http/metrics.js';
import type { AnyOperationId, Handler } from './http/types.js';
import { accessRules, documentAnswers, type AccessRule, type AccessRules, type Answers } from './http/access.js';
import { ABUSEIPDB_BASE, API_BASE, CROWDSEC_BASE, WEBHOOKS_BASE, type ApiArtifacts, type ApiDocument } from './openapi.js';
import type { ApiReference } from './reference.js';
import { webhookBodyParsers } from './http/webhook-bodies.js';
import { RECEIPT_BODY_LIMIT } from './relay/receipts.js';
import { BULK_REPORT_MAX_BYTES } from './reputation/service.js';
import { buildWeb } from './web/index.js';
import type { Modules } from './modules.js';

export interface AppDeps {
  orm: Orm;
  pool: Pool;
  /** The areas' modules, built once by the composition root (modules.ts). */
  modules: Modules;
  metrics: Metrics;
  config: Pick<Config, 'trustProxy' | 'validateResponses' | 'relay' | 'payments' | 'publicLimits' | 'faultBudget' | 'web' | 'stripe' | 'metricsToken' | 'metricsLoopback' | 'delisting'>;
  logger: Logger;
  clock: Clock;
  api: ApiArtifacts;
  /** GET /api/v2/docs: the published reference, built ahead or at the first request. */
  reference: ApiReference;
  /** The process's graceful stop: while it drains, /readyz answers 503 and responses close connections. */
  drain?: Drain;
}

/**
 * JSON and form request bodies above this size are refused with 413 (the document states it);
 * above KEYLESS_BODY_LIMIT (http/body-limits.ts) from a request without a valid key.
 */
export const JSON_BODY_LIMIT = 3 * 1024 * 1024;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The inbound webhooks' body limits (bytes); the SMS receipts' is RECEIPT_BODY_LIMIT. */
const WEBHOOK_BODY_LIMITS: Readonly<Record<string, number>> = {
  [`${WEBHOOKS_BASE}/payments`]: 64 * 1024,
  [`${WEBHOOKS_BASE}/stripe`]: 256 * 1024,
};

/** Other bases the API answers under, each rewritten to `/api/v2` before anything else runs. */
export const PATH_ALIASES: readonly PathAlias[] = [
  // The base path of the ReportedIP clients (Hive, Hive-Light, honeypot-server): they need only
  // their host name changed.
  { base: '/wp-json/reportedip/v2', target: API_BASE },
  // CrowdSec's LAPI's own base, for bouncers that take a host and port but no path.
  { base: '/v1', target: CROWDSEC_BASE },
];

/**
 * A document the server answers under its base path: /api/v2, and the other protocols'. Each has
 * its own validator; every route of its operations runs `chain` (authentication, access,
 * metering) before the handler.
 */
interface Mounted {
  base: string;
  document: ApiDocument;
  /** The header its operations take a key in (besides the `key` query parameter), if any. */
  keyHeader?: 'x-key' | 'key';
  /** Its own body parsers, instead of the keyed ones (http/body-limits.ts). */
  bodies?: RequestHandler[];
  chain: (operationId: AnyOperationId) => RequestHandler[];
  validator?: Partial<Parameters<typeof OpenApiValidator.middleware>[0]>;
}

/** The validator's multer options; their types predate multer 2.5's `limits` as a function of the request. */
type FileUploader = Exclude<NonNullable<Parameters<typeof OpenApiValidator.middleware>[0]['fileUploader']>, boolean>;

/** The reference page runs Redoc inline and in a web worker; everything else keeps helmet's CSP. */
const DOCS_CSP =
  "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; " +
  "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:";

/** Builds the HTTP application. It performs no I/O of its own until a request arrives. */
export function buildApp(deps: AppDeps): Express {
  const { orm, pool, modules, metrics, config, logger, clock, api } = deps;
  const drain = deps.drain ?? new Drain();
  const { meter, authenticator: keys, sites } = modules.keys;
  const metering = new Metering(meter, clock, metrics);
  const faults = new FaultBudget(meter, clock, config.faultBudget);
  drain.onStop(() => modules.settle());
  const pages = buildWeb({ orm, clock, logger, web: config.web, modules, delistReviewers: config.delisting.operatorEmails });
  const handlers = modules.handlers({ metering });
  // Who may call each operation and what it costs, as each document states it (x-access, x-charge).
  const access: AccessRules = { ...accessRules(api.document), ...accessRules(api.protocols.abuseipdb.document) };
  const ruleOf = (op: AnyOperationId): AccessRule => {
    const rule = access[op];
    if (!rule) throw new Error(`${op} has no access rule`);
    return rule;
  };
  const mounted: Mounted[] = [
    {
      base: API_BASE,
      document: api.document,
      keyHeader: 'x-key',
      chain: (op) => [guard(op, ruleOf(op), keys), faults.middleware(), siteLimit(ruleOf(op), sites), metering.middleware(ruleOf(op))],
    },
    {
      base: ABUSEIPDB_BASE,
      document: api.protocols.abuseipdb.document,
      keyHeader: 'key',
      chain: (op) => [guard(op, ruleOf(op), keys, 'key'), faults.middleware(), metering.middleware(ruleOf(op))],
      // The CSV of a bulk report comes as a file (multipart/form-data), held in memory; a request
      // without a valid key gets the small limits (http/body-limits.ts).
      validator: {
        fileUploader: {
          limits: multipartLimits({ fileSize: BULK_REPORT_MAX_BYTES, files: 1, fields: 10, parts: 11 }) as unknown as FileUploader['limits'],
        },
      },
    },
    { base: CROWDSEC_BASE, document: api.protocols.crowdsec.document, chain: () => [modules.crowdsec.guard()] },
    {
      // The inbound webhooks: authenticated by their providers' signatures on the raw body, in
      // the handlers; no key, no charge. Providers add fields of their own to a receipt's query.
      base: WEBHOOKS_BASE,
      document: api.internal.document,
      bodies: webhookBodyParsers((path) => WEBHOOK_BODY_LIMITS[path] ?? RECEIPT_BODY_LIMIT),
      chain: () => [],
      validator: { validateRequests: { allErrors: true, allowUnknownQueryParameters: true, coerceTypes: false } },
    },
  ];

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  // One spelling per path: `/API/V2/check` and `/api/v2/check/` match no route (see http/paths.ts).
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  // What every request goes through, as one layer of Express's router (each layer it walks costs
  // a request its matching and bookkeeping): the drain; no sniffing a JSON or CSV body into
  // something a browser runs (the page policies, CSP, framing, HSTS, cross-origin isolation, go
  // only with what a browser renders: the pages and the reference, `pageHeaders`; an API answer
  // carries only the headers it needs); metrics; the request's log line; its canonical path.
  app.use(inOrder([drain.middleware(), noSniff, metrics.middleware(), requestLogger(logger), canonicalPaths(PATH_ALIASES)]));

  // The fixed pages of the server (health, metrics, the documents, the reference): their own
  // router, entered only by a request for one of their paths, so an API request walks none of them.
  const fixed = express.Router({ caseSensitive: true, strict: true });
  const fixedPaths = new Set<string>();
  const get = (path: string, ...route: RequestHandler[]) => {
    fixedPaths.add(path);
    fixed.get(path, ...route);
  };
  app.use((req, res, next) => (fixedPaths.has(req.path) ? fixed(req, res, next) : next()));
  get('/metrics', metrics.handler(config.metricsToken, config.metricsLoopback ?? true));

  get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  get('/readyz', async (_req, res) => {
    if (drain.draining) {
      res.status(503).json({ status: 'draining', database: 'unknown' });
      return;
    }
    try {
      await ping(pool);
      res.json({ status: 'ok', database: 'up' });
    } catch {
      res.status(503).json({ status: 'unavailable', database: 'down' });
    }
  });

  get(`${API_BASE}/openapi.json`, (_req, res) => {
    res.type('application/json; charset=utf-8').send(api.json);
  });
  get(`${API_BASE}/openapi.yaml`, (_req, res) => {
    res.type('application/yaml; charset=utf-8').send(api.yaml);
  });
  for (const [base, served] of [[CROWDSEC_BASE, api.protocols.crowdsec], [ABUSEIPDB_BASE, api.protocols.abuseipdb]] as const) {
    get(`${base}/openapi.json`, (_req, res) => {
      res.type('application/json; charset=utf-8').send(served.json);
    });
    get(`${base}/openapi.yaml`, (_req, res) => {
      res.type('application/yaml; charset=utf-8').send(served.yaml);
    });
  }
  const pageHeaders = helmet();
  get(`${API_BASE}/docs`, pageHeaders, async (_req, res) => {
    const answer = await deps.reference.answer();
    if (answer.state === 'building') {
      throw new ApiError(503, answer.message, { headers: { 'Retry-After': String(answer.retryAfterSeconds) } });
    }
    if (answer.state === 'missing') throw new ApiError(404, answer.message);
    if (answer.state === 'failed') throw new ApiError(500, answer.message);
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.type('text/html; charset=utf-8').send(answer.html);
  });

  // Everything outside the documents' bases: the pages (/, /lookup, /account/…, with their own
  // form parser, CSRF and CSP, src/web/). An API or webhook request never walks their routes.
  const site = express.Router({ caseSensitive: true, strict: true });
  site.use(pageHeaders);
  site.use(pages);
  const mountedAt = (path: string) => mounted.find(({ base }) => path.startsWith(`${base}/`));

  // The shape of a request's errors, as the contract says: its operation's x-access.answers;
  // before an operation is matched (a body too large, a path that names none), the operation at
  // its path if the path has no parameters, else its base's document's. Outside the bases: the envelope.
  const shapes = new Map<Mounted, { document: Answers; atPath: Map<string, Answers> }>();
  for (const m of mounted) {
    const document = documentAnswers(m.document);
    const atPath = new Map<string, Answers>();
    for (const [path, item] of Object.entries(m.document.paths ?? {})) {
      if (path.includes('{')) continue;
      for (const method of METHODS) {
        const operationId = (item as Record<string, { operationId?: string } | undefined>)[method]?.operationId as AnyOperationId | undefined;
        const answers = operationId && access[operationId]?.answers;
        if (answers && answers !== document) atPath.set(m.base + path, answers);
      }
    }
    shapes.set(m, { document, atPath });
  }
  const answersOf = (req: Request, operationId: string | undefined): Answers => {
    const own = operationId === undefined ? undefined : access[operationId as AnyOperationId]?.answers;
    if (own) return own;
    const m = mountedAt(req.path);
    if (!m) return 'envelope';
    const shape = shapes.get(m)!;
    return shape.atPath.get(req.path) ?? shape.document;
  };
  // Bodies are read only under the APIs' bases, and only after the key they present was looked
  // up: up to JSON_BODY_LIMIT with a valid key, KEYLESS_BODY_LIMIT without (http/body-limits.ts).
  const keyedBodies = inOrder([authenticateBeforeBody(keys, (path) => mountedAt(path)?.keyHeader), ...boundedBodyParsers(JSON_BODY_LIMIT)]);
  // Form bodies' array fields, by the operation's method and path: one lookup. No form operation
  // has a path parameter; one that did would need its own matching here, so it stops the start.
  const formFields = new Map<string, RequestHandler>();
  for (const { base, document } of mounted) {
    for (const [key, fields] of formArrayFields(document)) {
      const [method, path] = key.split(' ') as [string, string];
      if (path.includes('{')) throw new Error(`${key} takes a form and has a path parameter: app.ts finds form fields by literal path only`);
      formFields.set(`${method} ${base}${path}`, formArrays(fields));
    }
  }
  const formFieldsStep: RequestHandler = (req, res, next) => {
    const step = formFields.get(`${req.method} ${req.path}`);
    return step ? step(req, res, next) : next();
  };
  memoiseValidatorRouteMatchers();
  // A validator's own `ignorePaths` spares only its route lookup: its request and response
  // validators would still check any request another one matched. So each runs only on its base:
  // the request's base picks its document's validator.
  const validatorOf = (m: Mounted): RequestHandler =>
    openApiValidator(app, {
      apiSpec: m.document,
      validateApiSpec: false,
      validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: config.validateResponses ? { allErrors: true } : false,
      validateSecurity: false,
      validateFormats: true,
      formats: { ip: { type: 'string', validate: (value: string) => parseAddress(value) !== undefined } },
      ignoreUndocumented: false,
      // Match the path the canonical-path middleware left in req.url (aliases rewritten).
      useRequestUrl: true,
      ignorePaths: (path: string) => !path.startsWith(`${m.base}/`),
      fileUploader: false,
      ...m.validator,
    });

  // Each operation's chain (authentication, access, metering, the handler), compiled once here
  // and reached by one lookup: the operation the validator matched the request to, among its
  // own document's. There is no second route table: a request gets a chain only when its own
  // document's validator matched it, so no path reaches a handler unvalidated.
  const operationOf = (m: Mounted): RequestHandler => {
    const chains = new Map<string, RequestHandler[]>();
    for (const item of Object.values(m.document.paths ?? {})) {
      for (const method of METHODS) {
        const operationId = (item as Record<string, { operationId?: string } | undefined>)[method]?.operationId as AnyOperationId | undefined;
        if (!operationId) continue;
        const handler = (handlers[operationId] as Handler<typeof operationId> | undefined) ?? notImplemented(operationId);
        chains.set(operationId, [...m.chain(operationId), handler as unknown as RequestHandler]);
      }
    }
    return (req, res, next) => {
      const matched = (req as { openapi?: { schema?: { operationId?: string }; pathParams?: Record<string, string> } }).openapi;
      const operationId = matched?.schema?.operationId;
      const chain = operationId !== undefined ? chains.get(operationId) : undefined;
      if (!chain) return next();
      res.locals.operationId = operationId as AnyOperationId;
      // The path parameters as the validator matched (and validated) them.
      req.params = matched!.pathParams ?? {};
      runChain(chain, req, res, next);
    };
  };

  // A request under an API's base runs its steps as one layer of Express's router (each layer
  // it walks costs a request its matching and bookkeeping): its body, its form's array fields,
  // its document's validator, finite numbers, its operation's chain. Anything else is a page's.
  const apiSteps = new Map<Mounted, RequestHandler[]>(
    mounted.map((m) => [m, [m.bodies ? inOrder(m.bodies) : keyedBodies, formFieldsStep, validatorOf(m), rejectNonFiniteNumbers, operationOf(m)]]),
  );
  app.use((req, res, next) => {
    const m = mountedAt(req.path);
    return m ? runChain(apiSteps.get(m)!, req, res, next) : site(req, res, next);
  });

  app.use((req: Request, _res: Response, next: NextFunction) => {
    next(new ApiError(404, `No endpoint at ${req.method} ${req.path}. See ${API_BASE}/docs.`));
  });
  const documents = [api.document, api.protocols.crowdsec.document, api.protocols.abuseipdb.document, api.internal.document];
  app.use(errorHandler(logger, metering, answersOf, fieldLocations(documents)));
  return app;
}

function noSniff(_req: Request, res: Response, next: NextFunction) {
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}

/**
 * The validator's type coercion (ajv) turns `Infinity` into a number that then passes
 * `integer` and `maximum`; such a value is refused here, as the document means it to be.
 */
function rejectNonFiniteNumbers(req: Request, _res: Response, next: NextFunction) {
  const query = req.query as Record<string, unknown>;
  for (const name in query) {
    const value = query[name];
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new ApiError(400, `Invalid request: query parameter '${name}' must be a finite number.`, {
        errors: [{ location: 'query', name, message: 'must be a finite number' }],
      });
    }
  }
  next();
}

function notImplemented(operationId: AnyOperationId): Handler<AnyOperationId> {
  return () => {
    throw new ApiError(501, `${operationId} is described by the API but not implemented by this server yet.`);
  };
}
