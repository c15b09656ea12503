import { Writable } from 'node:stream';
import { createTrsClient, type TrsClient } from '../../clients/typescript/src/index.js';
import { ManualClock } from '../../src/clock.js';
import { loadConfig, type Config, type RelayConfig, type StripeConfig, type WebConfig } from '../../src/config.js';
import { openDatabase } from '../../src/db/connect.js';
import type { Role } from '../../src/roles.js';
import type { Orm } from '../../src/db/orm.js';
import type { Pool } from '../../src/db/pool.js';
import type { SERVER_TIMEOUTS } from '../../src/http/server.js';
import { KeyService, type CreatedKey } from '../../src/keys/service.js';
import { createLogger } from '../../src/logging.js';
import { start, type StartOptions } from '../../src/start.js';
import { createTestDatabase, type TestDatabase } from './database.js';

export interface TestServer {
  /** Origin of the server, e.g. http://127.0.0.1:41234 */
  origin: string;
  /** Base of the API: origin + /api/v2 */
  base: string;
  /**
   * The typed client package (clients/typescript) without a key: a test that drifts from the
   * contract fails to compile. Retries are off, so a test sees every 429 the server sends.
   */
  client: TrsClient;
  /** The same client, sending `key` as X-Key. */
  clientFor(key: string): TrsClient;
  orm: Orm;
  pool: Pool;
  /** The pool of the lag-tolerant reads: the replicas' (replicaUrls), else `pool`. */
  replicas: Pool;
  clock: ManualClock;
  db: TestDatabase;
  /** Every log line the server wrote, as text. */
  logs: string[];
  createKey(role: Role, options?: { licences?: number; email?: string; accountId?: number; name?: string }): Promise<CreatedKey>;
  /**
   * Another server process on the same database (its own app, pool and port), with these
   * settings instead of this one's where given.
   */
  sibling(config?: TestServerOptions['config']): Promise<TestServer>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  timeouts?: typeof SERVER_TIMEOUTS;
  config?: Partial<Pick<Config, 'trustProxy' | 'payments' | 'keyCacheMs' | 'publicLimits' | 'faultBudget' | 'metricsToken' | 'metricsLoopback' | 'rules' | 'blacklistCacheBytes' | 'reportBatching' | 'delisting' | 'webhooks'>> & {
    relay?: Partial<RelayConfig>;
    /** The pages' settings; `publicUrl` defaults to the test server's own origin. */
    web?: Partial<WebConfig>;
    stripe?: StripeConfig;
  };
  clock?: ManualClock;
  /** DATABASE_REPLICA_URL: read replicas of the test database (test/system/replica.test.ts). */
  replicaUrls?: string[];
  /** The published reference's file, Redocly CLI (null: none) and wait (src/start.ts). */
  reference?: StartOptions['reference'];
}

async function startOn(db: TestDatabase, options: TestServerOptions, owner: boolean, migrateFirst = owner): Promise<TestServer> {
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  const logger = createLogger('debug', sink);
  const clock = options.clock ?? new ManualClock(new Date());
  const defaults = loadConfig({});
  // Retries come due by polling; in tests it polls fast (new messages wake the workers at once).
  const relayConfig: RelayConfig = {
    ...defaults.relay,
    ...options.config?.relay,
    delivery: { ...defaults.relay.delivery, pollSeconds: 0.5, ...options.config?.relay?.delivery },
  };
  // Cost 14 (16 MiB) instead of 15 keeps the many sign-ins of the tests quick; still scrypt.
  const webConfig: WebConfig = { ...defaults.web, scryptCost: 14, ...options.config?.web };
  const config: Config = {
    ...defaults,
    port: 0,
    host: '127.0.0.1',
    databaseUrl: db.url,
    databaseDirectUrl: db.directUrl,
    trustProxy: options.config?.trustProxy ?? false,
    validateResponses: true,
    relay: relayConfig,
    payments: options.config?.payments ?? defaults.payments,
    publicLimits: options.config?.publicLimits ?? defaults.publicLimits,
    faultBudget: options.config?.faultBudget ?? defaults.faultBudget,
    metricsToken: options.config?.metricsToken,
    metricsLoopback: options.config?.metricsLoopback ?? defaults.metricsLoopback,
    rules: options.config?.rules ?? defaults.rules,
    keyCacheMs: options.config?.keyCacheMs ?? 0,
    blacklistCacheBytes: options.config?.blacklistCacheBytes ?? defaults.blacklistCacheBytes,
    reportBatching: options.config?.reportBatching ?? defaults.reportBatching,
    delisting: options.config?.delisting ?? defaults.delisting,
    webhooks: options.config?.webhooks ?? defaults.webhooks,
    web: webConfig,
    stripe: options.config?.stripe,
  };
  // A server clone of the run's template is migrated already; an embedded database is not.
  const database = await openDatabase(db.url, logger, {
    embedded: db.embedded,
    poolMax: 10,
    migrate: migrateFirst && db.embedded ? 'apply' : 'skip',
    directUrl: db.directUrl,
    replicaUrls: options.replicaUrls,
  });
  // The real clock times retries, the manual clock everything else; no scheduled jobs.
  const running = await start(config, { logger, clock, database, jobs: false, queueConnections: 2, timeouts: options.timeouts, reference: options.reference });
  const { origin } = running;
  const { orm, pool } = database;
  // Links in mails point at this server (read when a mail is made, so set before any request).
  webConfig.publicUrl = options.config?.web?.publicUrl ?? origin;
  const base = `${origin}/api/v2`;
  const keys = new KeyService(orm.em, clock);
  const self: TestServer = {
    origin,
    base,
    client: createTrsClient({ baseUrl: base, retry: { max: 0 } }),
    clientFor: (key) => createTrsClient({ baseUrl: base, key, retry: { max: 0 } }),
    orm,
    pool,
    replicas: database.replicas,
    clock,
    db,
    logs,
    createKey: (role, o = {}) => keys.create({ role, ...o }),
    sibling: (config) => startOn(db, { ...options, clock, config: config ?? options.config }, false),
    async close() {
      if (process.env.TEST_SHOW_ERRORS) {
        for (const line of logs) if (/"level":50/.test(line)) process.stderr.write(line);
      }
      await running.stop({ abrupt: true });
      if (owner) await db.drop();
    },
  };
  return self;
}

/** Starts the app on a fresh database of its own, with response validation on. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  return startOn(await createTestDatabase(), options, true);
}

/** Starts the app on a database the caller owns (and drops), e.g. reached through a proxy. */
export async function startTestServerOn(db: TestDatabase, options: TestServerOptions = {}): Promise<TestServer> {
  return startOn(db, options, false, true);
}
