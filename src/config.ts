import { z } from 'zod';
import { DEFAULT_PUBLIC_LIMITS, type PublicLimits } from './roles.js';
import { delistingSettings, delistingVariables, type DelistingSettings } from './delisting/settings.js';
import { paymentSettings, paymentVariables, STRIPE_PRICE, stripeSettings, type StripeConfig } from './payments/settings.js';
import { relaySettings, relayVariables, type RelayConfig } from './relay/settings.js';
import { keySettings, keyVariables, type KeySettings } from './keys/settings.js';
import { rulesSettings, rulesVariables, type RulesSettings } from './rules/settings.js';
import { geoSettings, geoVariables, type GeoSettings } from './geo/settings.js';
import { reputationSettings, reputationVariables, type ReputationSettings } from './reputation/settings.js';
import { blacklistSettings, blacklistVariables, type BlacklistSettings } from './blacklist/settings.js';
import { webhookSettings, webhookVariables, type WebhookSettings } from './webhooks/settings.js';
import { accountSettings, accountVariables, type WebConfig } from './account/settings.js';
import { boolean } from './settings.js';

export type { RelayConfig } from './relay/settings.js';
export type { StripeConfig } from './payments/settings.js';
export type { WebConfig } from './account/settings.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * `TRUST_PROXY` is handed to Express's `trust proxy` setting unchanged in meaning:
 * `true`/`false`, a hop count, or a comma-separated list of addresses, CIDR ranges or the
 * names `loopback`, `linklocal`, `uniquelocal`.
 */
function parseTrustProxy(raw: string): boolean | number | string[] {
  const value = raw.trim();
  if (value === '' || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) return Number(value);
  return value.split(',').map((part) => part.trim()).filter(Boolean);
}


const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATA_DIR: z.string().min(1).default('./.data'),
  TRUST_PROXY: z.string().default('false').transform(parseTrustProxy),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  DB_POOL_MAX: z.coerce.number().int().min(1).max(200).default(10),
  // Past one PostgreSQL (docs/scaling.md): a transaction pooler, read replicas.
  DATABASE_DIRECT_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  DATABASE_REPLICA_URL: z
    .string()
    .optional()
    .transform((list) => (list ?? '').split(',').map((url) => url.trim()).filter(Boolean))
    .refine((urls) => urls.every((url) => /^postgres(ql)?:\/\//.test(url)), 'must be postgres:// or postgresql:// URLs, separated by commas'),
  WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  MIGRATE_ON_START: boolean.default(true),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  PUBLIC_V6_AGGREGATE_PREFIX: z.coerce.number().int().min(32).max(64).default(48),
  PUBLIC_V6_AGGREGATE_LIMIT: z.coerce.number().int().min(1).default(1_000),
  FAULT_BUDGET: z.coerce.number().int().min(0).default(20),
  SHUTDOWN_DRAIN_SECONDS: z.coerce.number().min(0).max(300).default(10),
  SHUTDOWN_TIMEOUT_SECONDS: z.coerce.number().min(1).max(600).default(40),
  VALIDATE_RESPONSES: boolean.optional(),
  ...keyVariables,
  ...reputationVariables,
  ...rulesVariables,
  ...geoVariables,
  ...blacklistVariables,
  ...relayVariables,
  ...paymentVariables,
  NODE_ENV: z.string().default('development'),
  ...accountVariables,
  ...delistingVariables,
  ...webhookVariables,
});

/** Every environment variable the schema reads (docs/configuration.md documents each; test/unit/docs.test.ts checks). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** Variables read by pattern rather than by name, with the form the documentation gives them. */
export const CONFIG_VARIABLE_PATTERNS: readonly { pattern: RegExp; documentedAs: string }[] = [
  { pattern: STRIPE_PRICE, documentedAs: 'STRIPE_PRICE_<BUNDLE_ID>' },
];

export type Config = KeySettings &
  ReputationSettings &
  BlacklistSettings &
  RulesSettings &
  GeoSettings & {
  port: number;
  host: string;
  /** Unset: the server runs an embedded PostgreSQL (PGlite) under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  trustProxy: boolean | number | string[];
  logLevel: (typeof LOG_LEVELS)[number];
  dbPoolMax: number;
  /** DATABASE_DIRECT_URL: PostgreSQL itself when DATABASE_URL is a transaction pooler (migrations, LISTEN, pg-boss). */
  databaseDirectUrl: string | undefined;
  /** DATABASE_REPLICA_URL: read replicas for the reads that tolerate replication lag. */
  databaseReplicaUrls: string[];
  /** Server processes on this machine (node:cluster); 1 runs in this process. */
  workers: number;
  /** UV_THREADPOOL_SIZE the supervisor starts its workers with (see passwordHashing); undefined: theirs is the operator's. */
  workerThreadPool: number | undefined;
  /** Apply pending migrations on start; false: refuse to start while any is pending (`trs db migrate` first). */
  migrateOnStart: boolean;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`; unset, it answers loopback callers only. */
  metricsToken: string | undefined;
  /** Without a token, GET /metrics answers unproxied loopback callers; false with NODE_ENV=production (a token is required). */
  metricsLoopback: boolean;
  /** The public allowance of unauthenticated callers: per address (/64), and per wider IPv6 prefix. */
  publicLimits: PublicLimits;
  /** Server errors (but 503) a key or address may meet per day before its charges stand and it is refused. */
  faultBudget: number;
  /** Graceful stop: how long a draining process keeps serving after SIGTERM, and the deadline of the whole stop. */
  shutdown: { drainMs: number; timeoutMs: number };
  /** Delisting requests: bounds, default approval, the dashboard's reviewers. */
  delisting: DelistingSettings;
  webhooks: WebhookSettings;
  /** Check every response against the OpenAPI document (on by default outside production). */
  validateResponses: boolean;
  relay: RelayConfig;
  payments: { secret: string | undefined; toleranceSeconds: number };
  web: WebConfig;
  /** Bundles sold through Stripe Checkout; undefined when Stripe is not configured. */
  stripe: StripeConfig | undefined;
};

type Env = z.infer<typeof schema>;

export class ConfigError extends Error {}

/** Variables whose values may be or hold credentials (a URL can carry a password): never echoed. */
const SECRET = /TOKEN|SECRET|_URL$|_API_BASE$/;

/** Reads and validates the environment once; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const name = String(issue.path[0]);
      return `  ${issue.path.join('.')}: ${issue.message} (got ${SECRET.test(name) ? 'a value not shown here' : JSON.stringify(env[name])})`;
    });
    throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  }
  const e = parsed.data;
  const problems: string[] = [];
  const relay = relaySettings(e, { nodeEnv: e.NODE_ENV, dataDir: e.DATA_DIR }, problems);
  const stripe = stripeSettings(e, env, problems);
  const { web, workerThreadPool } = accountSettings(e, { nodeEnv: e.NODE_ENV, port: e.PORT, workers: e.WORKERS }, problems);
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    dbPoolMax: e.DB_POOL_MAX,
    databaseDirectUrl: e.DATABASE_DIRECT_URL,
    databaseReplicaUrls: e.DATABASE_REPLICA_URL,
    workers: e.WORKERS,
    workerThreadPool,
    migrateOnStart: e.MIGRATE_ON_START,
    metricsToken: e.METRICS_TOKEN,
    metricsLoopback: e.NODE_ENV !== 'production',
    publicLimits: { ...DEFAULT_PUBLIC_LIMITS, v6AggregatePrefix: e.PUBLIC_V6_AGGREGATE_PREFIX, v6AggregateLimit: e.PUBLIC_V6_AGGREGATE_LIMIT },
    faultBudget: e.FAULT_BUDGET,
    shutdown: { drainMs: e.SHUTDOWN_DRAIN_SECONDS * 1000, timeoutMs: e.SHUTDOWN_TIMEOUT_SECONDS * 1000 },
    delisting: delistingSettings(e),
    webhooks: webhookSettings(e),
    validateResponses: e.VALIDATE_RESPONSES ?? e.NODE_ENV !== 'production',
    ...keySettings(e),
    ...reputationSettings(e),
    ...rulesSettings(e, { dataDir: e.DATA_DIR }),
    ...geoSettings(e),
    ...blacklistSettings(e),
    relay,
    payments: paymentSettings(e),
    web,
    stripe,
  };
}



