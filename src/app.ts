import express, { type Express, type NextFunction, type Request, type Response } from 'express';
import helmet from 'helmet';
import * as OpenApiValidator from 'express-openapi-validator';
import ipaddr from 'ipaddr.js';
import { RequestContext } from '@mikro-orm/core';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Orm } from './db/orm.js';
import type { Pool } from './db/pool.js';
import type { GeoIp } from './geo/geoip.js';
import { CategoryService } from './categories/categories.js';
import { categoryHandlers } from './categories/handlers.js';
import { guard } from './http/auth.js';
import { ApiError } from './http/errors.js';
import { errorHandler } from './http/error-handler.js';
import { requestLogger } from './http/logging.js';
import { Metering } from './http/metering.js';
import type { Metrics } from './http/metrics.js';
import type { Handler, Handlers } from './http/types.js';
import { KeyAuthenticator } from './keys/keys.js';
import { keyHandlers } from './keys/handlers.js';
import type { OperationId } from './keys/roles.js';
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
import { RelayService, relayLimits } from './relay/service.js';
import { StatsService } from './stats/service.js';
import { ReputationRepository } from './reputation/repository.js';
import { ReputationService } from './reputation/service.js';

export interface AppDeps {
  orm: Orm;
  pool: Pool;
  geo: GeoIp;
  /** The relay's queue; undefined where no transport is configured (sends answer 503). */
  relayQueue: RelayQueue | undefined;
  metrics: Metrics;
  config: Pick<Config, 'trustProxy' | 'validateResponses' | 'relay' | 'payments'> & { keyCacheMs?: number; metricsToken?: string };
  logger: Logger;
  clock: Clock;
  api: ApiArtifacts;
}

/** JSON request bodies above this size are refused with 413 (the document states it). */
export const JSON_BODY_LIMIT = 3 * 1024 * 1024;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

/** The reference page runs Redoc inline and in a web worker; everything else keeps helmet's CSP. */
const DOCS_CSP =
  "default-src 'self'; script-src 'self' 'unsafe-inline' blob:; worker-src 'self' blob:; " +
  "style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:";

/** Builds the HTTP application. It performs no I/O of its own until a request arrives. */
export function buildApp(deps: AppDeps): Express {
  const { orm, pool, geo, relayQueue, metrics, config, logger, clock, api } = deps;
  const em = orm.em;
  const keys = new KeyAuthenticator(pool, config.keyCacheMs ?? 0, clock);
  const meter = new Meter(pool, clock);
  const metering = new Metering(meter, clock, metrics);
  const categories = new CategoryService(em);
  const reputation = new ReputationService(new ReputationRepository(pool), categories, geo, clock);
  const snapshots = blacklistSnapshots(pool, clock);
  const handlers: Handlers = {
    ...categoryHandlers(categories),
    ...keyHandlers(meter),
    ...reputationHandlers(reputation),
    ...blacklistHandlers(new BlacklistService(snapshots, categories, clock), snapshots),
    ...statsHandlers(new StatsService(pool, categories, snapshots, clock)),
    ...relayHandlers(new RelayService(pool, relayQueue, relayLimits(config.relay), clock)),
  };

  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'simple');

  app.use(helmet());
  app.use(metrics.middleware());
  app.use(requestLogger(logger));
  app.get('/metrics', metrics.handler(config.metricsToken));

  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    try {
      await pool.query('select 1');
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

  app.use(paymentsRouter(new BundleLedger(pool, clock), config.payments, clock));

  app.use(express.json({ limit: JSON_BODY_LIMIT, type: 'application/json' }));
  app.use(
    OpenApiValidator.middleware({
      apiSpec: api.document,
      validateApiSpec: false,
      validateRequests: { allErrors: true, allowUnknownQueryParameters: false, coerceTypes: true },
      validateResponses: config.validateResponses ? { allErrors: true } : false,
      validateSecurity: false,
      validateFormats: true,
      formats: { ip: { type: 'string', validate: (value: string) => ipaddr.isValid(value) && isPlainIp(value) } },
      ignoreUndocumented: false,
      ignorePaths: (path: string) => !path.startsWith(`${API_BASE}/`),
    }),
  );
  app.use(rejectNonFiniteNumbers);
  app.use((_req, _res, next) => RequestContext.create(em, next));

  for (const [path, item] of Object.entries(api.document.paths ?? {})) {
    for (const method of METHODS) {
      const operationId = (item as Record<string, { operationId?: string } | undefined>)[method]?.operationId as
        | OperationId
        | undefined;
      if (!operationId) continue;
      const handler = (handlers[operationId] as Handler<typeof operationId> | undefined) ?? notImplemented(operationId);
      app[method](
        API_BASE + path.replace(/\{(\w+)\}/g, ':$1'),
        guard(operationId, keys),
        metering.middleware(operationId),
        handler as unknown as (req: Request, res: Response) => Promise<void>,
      );
    }
  }

  app.use((req: Request, _res: Response, next: NextFunction) => {
    next(new ApiError(404, `No endpoint at ${req.method} ${req.path}. See ${API_BASE}/docs.`));
  });
  app.use(errorHandler(logger, metering));
  return app;
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

/** ipaddr.js also accepts shorthand like `10.1` or `0x7f.1`; the API takes dotted quads only. */
function isPlainIp(value: string): boolean {
  return value.includes(':') ? ipaddr.IPv6.isValid(value) : ipaddr.IPv4.isValidFourPartDecimal(value);
}

function notImplemented(operationId: OperationId): Handler<OperationId> {
  return () => {
    throw new ApiError(501, `${operationId} is described by the API but not implemented by this server yet.`);
  };
}
