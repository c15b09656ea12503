import { z } from 'zod';

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

const boolean = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

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
  VALIDATE_RESPONSES: boolean.optional(),
  BLACKLIST_INTERVAL_MINUTES: z.coerce.number().min(1).max(1440).default(15),
  GEOIP_COUNTRY_DB: z.string().min(1).optional(),
  GEOIP_ASN_DB: z.string().min(1).optional(),
  NODE_ENV: z.string().default('development'),
});

export type Config = {
  port: number;
  host: string;
  /** Unset: the server runs an embedded PostgreSQL (PGlite) under `dataDir`. */
  databaseUrl: string | undefined;
  dataDir: string;
  trustProxy: boolean | number | string[];
  logLevel: (typeof LOG_LEVELS)[number];
  dbPoolMax: number;
  /** Check every response against the OpenAPI document (on by default outside production). */
  validateResponses: boolean;
  /** How often the blacklist snapshot is regenerated. */
  blacklistIntervalMs: number;
  /** MaxMind-format databases that replace the bundled geolocation data. */
  geoip: { countryDb?: string; asnDb?: string };
};

export class ConfigError extends Error {}

/** Reads and validates the environment once; throws a ConfigError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `  ${issue.path.join('.')}: ${issue.message} (got ${JSON.stringify(env[String(issue.path[0])])})`,
    );
    throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    dbPoolMax: e.DB_POOL_MAX,
    validateResponses: e.VALIDATE_RESPONSES ?? e.NODE_ENV !== 'production',
    blacklistIntervalMs: e.BLACKLIST_INTERVAL_MINUTES * 60_000,
    geoip: { countryDb: e.GEOIP_COUNTRY_DB, asnDb: e.GEOIP_ASN_DB },
  };
}
