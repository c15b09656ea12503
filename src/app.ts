import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import * as OpenApiValidator from 'express-openapi-validator';
import { parseAddress } from './address.js';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import { ping, type Pool } from './db/pool.js';
import type { GeoIp } from './geo/geoip.js';
import { CategoryService } from './categories/categories.js';
import { categoryHandlers } from './categories/handlers.js';
import { guard, siteLimit } from './http/auth.js';
import { ApiError } from './http/errors.js';
import { errorHandler } from './http/error-handler.js';
import { FaultBudget } from './http/fault-budget.js';
import { formArrayFields, formArrays, formParser } from './http/form-bodies.js';
import { requestLogger } from './http/logging.js';
import { memoiseValidatorRouteMatchers } from './http/route-matchers.js';
import { canonicalPaths, type PathAlias } from './http/paths.js';
import { Drain } from './http/drain.js';
import { Metering } from './http/metering.js';
import type { Metrics } from './http/metrics.js';
import type { Handler, Handlers } from './http/types.js';
import { KeyAuthenticator } from './keys/keys.js';
import { keyHandlers } from './keys/handlers.js';
import { KeySites } from './keys/sites.js';
import { notificationHandlers } from './notifications/handlers.js';
import { NotificationConfigRepository } from './notifications/repository.js';
import { NotificationConfigs } from './notifications/service.js';
import { rulesHandlers } from './rules/handlers.js';
import { Rulesets } from './rules/rulesets.js';
import { accessRules, type OperationId } from './http/access.js';
import { Meter } from './keys/usage.js';
import { API_BASE, type ApiArtifacts } from './openapi.js';
import { blacklistHandlers } from './blacklist/handlers.js';
import { BlacklistService } from './blacklist/service.js';
import { blacklistSnapshots } from './blacklist/snapshots.js';
import { reputationHandlers } from './reputation/handlers.js';
import { statsHandlers } from './stats/handlers.js';
import { relayHandlers } from './relay/handlers.js';
import { BundleLedger } from './relay/ledger.js';
import { paymentsRouter } from './relay/payments.js';
import type { RelayQueue } from './relay/queue.js';
import { receiptsRouter } from './relay/receipts.js';
import { RelayRepository } from './relay/repository.js';
import type { RelayRuntime } from './relay/runtime.js';
import { RelayService, relayLimits } from './relay/service.js';
import { SmsTemplates } from './relay/delivery/templates.js';
import { StatsRepository } from './stats/repository.js';
import { StatsService } from './stats/service.js';
import { ReputationRepository } from './reputation/repository.js';
import { ReputationService } from './reputation/service.js';
import { KeyLastUsed } from './account/last-used.js';
import { loadConfig } from './config.js';
import { buildWeb } from './web/index.js';

export interface AppDeps {
  orm: Orm;
  pool: Pool;
  geo: GeoIp;
  /** The relay's queue; undefined where no transport is configured (sends answer 503). */
  relayQueue: RelayQueue | undefined;
  /** The SMS provider's delivery receipts, where it posts them. */
  smsReceipts?: RelayRuntime['smsReceipts'];
  metrics: Metrics;
  config: Pick<Config, 'trustProxy' | 'validateResponses' | 'relay' | 'payments' | 'publicLimits' | 'faultBudget' | 'rules'> &
    Partial<Pick<Config, 'keyCacheMs' | 'metricsToken' | 'web' | 'stripe'>>;
  logger: Logger;
  clock: Clock;
  api: ApiArtifacts;
  /** The process's graceful stop: while it drains, /readyz answers 503 and responses close connections. */
  drain?: Drain;
}

/** JSON request bodies above this size are refused with 413 (the document states it). */
export const JSON_BODY_LIMIT = 3 * 1024 * 1024;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** Other bases the API answers under, each rewritten to `/api/v2` before anything else runs. */
export const PATH_ALIASES: readonly PathAlias[] = [
  // The base path of the ReportedIP clients (Hive, Hive-Light, honeypot-server): they need only
  // their host name changed.
  { base: '/wp-json/reportedip/v2', target: API_BASE },
];

/** The reference page runs Redoc inline and in a web worker; everything else keeps helmet's CSP. */
const DOCS_CSP =
  "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; " +
  "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:";

/** Builds the HTTP application. It performs no I/O of its own until a request arrives. */
export function buildApp(deps: AppDeps): Express {
  const { orm, pool, geo, relayQueue, metrics, config, logger, clock, api } = deps;
  const drain = deps.drain ?? new Drain();
  const em = orm.em;
  const lastUsed = new KeyLastUsed(pool, clock);
  const keys = new KeyAuthenticator(pool, config.keyCacheMs ?? 0, clock, (keyId) => lastUsed.touch(keyId));
  const meter = new Meter(pool, clock, config.publicLimits);
  const metering = new Metering(meter, clock, metrics);
  const faults = new FaultBudget(meter, clock, config.faultBudget);
  const categories = new CategoryService(em, clock);
  const reputation = new ReputationService(new ReputationRepository(pool), categories, geo, clock);
  const snapshots = blacklistSnapshots(pool, clock);
  const sites = new KeySites(pool, clock);
  const stats = new StatsService(new StatsRepository(pool), categories, snapshots, clock);
  const relayMessages = new RelayRepository(pool);
  const relay = new RelayService(relayMessages, relayQueue, relayLimits(config.relay), clock, sites, new SmsTemplates(pool, clock));
  const ledger = new BundleLedger(pool, clock);
  const web = buildWeb({
    orm,
    pool,
    clock,
    logger,
    web: config.web ?? loadConfig({}).web,
    stripe: config.stripe,
    relayMail: config.relay.mail,
    meter,
    stats,
    categories,
    reputation,
    relay,
    ledger,
  });
  const handlers: Handlers = {
    ...categoryHandlers(categories),
    ...keyHandlers(meter, sites, clock),
    ...reputationHandlers(reputation),
    ...blacklistHandlers(new BlacklistService(snapshots, categories, clock), snapshots),
    ...statsHandlers(stats),
    ...relayHandlers(relay),
    ...notificationHandlers(new NotificationConfigs(new NotificationConfigRepository(pool), clock)),
    ...rulesHandlers(new Rulesets(config.rules.dir, config.rules.signingKeyFile, logger)),
  };
  const formArrayFieldsOf = formArrayFields(api.document);
  // Who may call each operation and what it costs, as the document states it (x-access, x-charge).
  const access = accessRules(api.document);

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');
  // One spelling per path: `/API/V2/check` and `/api/v2/check/` match no route (see http/paths.ts).
  app.set('case sensitive routing', true);
  app.set('strict routing', true);

  app.use(drain.middleware());
  app.use(helmet());
  app.use(metrics.middleware());
  app.use(requestLogger(logger));
  app.use(canonicalPaths(PATH_ALIASES));
  app.get('/metrics', metrics.handler(config.metricsToken));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
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

  app.get(`${API_BASE}/openapi.json`, (_req, res) => {
    res.type('application/json; charset=utf-8').send(api.json);
  });
  app.get(`${API_BASE}/openapi.yaml`, (_req, res) => {
    res.type('application/yaml; charset=utf-8').send(api.yaml);
  });
  app.get(`${API_BASE}/docs`, (_req, res) => {
    if (!api.referenceHtml) throw new ApiError(404, 'The API reference has not been built: run `npm run docs`.');
    res.setHeader('Content-Security-Policy', DOCS_CSP);
    res.type('text/html; charset=utf-8').send(api.referenceHtml);
  });

  app.use(paymentsRouter(ledger, config.payments, clock));
  if (deps.smsReceipts) {
    const { provider, endpoint } = deps.smsReceipts;
    app.use(receiptsRouter(provider, endpoint, relayMessages, clock, logger, metrics));
  }
  if (web.stripeWebhook) app.use(web.stripeWebhook);
  // The pages (/, /lookup, /account/…): their own form parser, CSRF and CSP (src/web/).
  app.use(web.pages);

  app.use(express.json({ limit: JSON_BODY_LIMIT, type: 'application/json' }));
  app.use(formParser(JSON_BODY_LIMIT));
  for (const [key, fields] of formArrayFieldsOf) {
    const [method, path] = key.split(' ') as [string, string];
    app[method.toLowerCase() as (typeof METHODS)[number]](API_BASE + expressPath(path), formArrays(fields));
  }
  memoiseValidatorRouteMatchers();
  app.use(
    OpenApiValidator.middleware({
      apiSpec: api.document,
      validateApiSpec: false,
      validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: config.validateResponses ? { allErrors: true } : false,
      validateSecurity: false,
      validateFormats: true,
      formats: { ip: { type: 'string', validate: (value: string) => parseAddress(value) !== undefined } },
      ignoreUndocumented: false,
      // Match the path the canonical-path middleware left in req.url (aliases rewritten).
      useRequestUrl: true,
      // Everything else is refused below by the 404 handler; nothing under the base is skipped.
      ignorePaths: (path: string) => !path.startsWith(`${API_BASE}/`),
    }),
  );
  app.use(rejectNonFiniteNumbers);

  for (const [path, item] of Object.entries(api.document.paths ?? {})) {
    for (const method of METHODS) {
      const operationId = (item as Record<string, { operationId?: string } | undefined>)[method]?.operationId as
        | OperationId
        | undefined;
      if (!operationId) continue;
      const handler = (handlers[operationId] as Handler<typeof operationId> | undefined) ?? notImplemented(operationId);
      app[method](
        API_BASE + expressPath(path),
        validatedAs(operationId),
        guard(operationId, access[operationId], keys),
        faults.middleware(),
        siteLimit(access[operationId], sites),
        metering.middleware(access[operationId]),
        handler as unknown as (req: Request, res: Response) => Promise<void>,
      );
    }
  }

  app.use((req: Request, _res: Response, next: NextFunction) => {
    next(new ApiError(404, `No endpoint at ${req.method} ${req.path}. See ${API_BASE}/docs.`));
  });
  app.use(errorHandler(logger, metering, access));
  return app;
}

/** `/reports/{ip}` -> `/reports/:ip`. */
const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

/**
 * Defence in depth: a handler runs only for a request the validator matched to its own
 * operation. Whatever a future route, alias or setting does, nothing reaches a handler
 * unvalidated.
 */
function validatedAs(operationId: OperationId) {
  return (req: Request, _res: Response, next: NextFunction) => {
    const matched = (req as { openapi?: { schema?: { operationId?: string } } }).openapi?.schema?.operationId;
    if (matched !== operationId) throw new ApiError(404, `No endpoint at ${req.method} ${req.path}. See ${API_BASE}/docs.`);
    next();
  };
}

/**
 * The validator's type coercion (ajv) turns `Infinity` into a number that then passes
 * `integer` and `maximum`; such a value is refused here, as the document means it to be.
 */
function rejectNonFiniteNumbers(req: Request, _res: Response, next: NextFunction) {
  for (const [name, value] of Object.entries(req.query as Record<string, unknown>)) {
    if (typeof value === 'number' && !Number.isFinite(value)) {
      throw new ApiError(400, `Invalid request: query parameter '${name}' must be a finite number.`, {
        errors: [{ location: 'query', name, message: 'must be a finite number' }],
      });
    }
  }
  next();
}

function notImplemented(operationId: OperationId): Handler<OperationId> {
  return () => {
    throw new ApiError(501, `${operationId} is described by the API but not implemented by this server yet.`);
  };
}
