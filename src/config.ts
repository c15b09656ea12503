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
  WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters').optional(),
  KEY_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(10),
  VALIDATE_RESPONSES: boolean.optional(),
  BLACKLIST_INTERVAL_MINUTES: z.coerce.number().min(1).max(1440).default(15),
  RELAY_SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  RELAY_MAIL_FROM: z.string().min(3).optional(),
  RELAY_DKIM_DOMAIN: z.string().min(1).optional(),
  RELAY_DKIM_SELECTOR: z.string().min(1).optional(),
  RELAY_DKIM_KEY_FILE: z.string().min(1).optional(),
  RELAY_SMS_URL: z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL').optional(),
  RELAY_SMS_TOKEN: z.string().min(1).optional(),
  RELAY_SMS_SENDER: z.string().min(1).max(15).optional(),
  RELAY_SMS_COUNTRIES: z
    .string()
    .regex(/^[A-Z]{2}(,[A-Z]{2})*$/, 'must be ISO country codes separated by commas')
    .default('AT,AU,BE,CA,CH,CZ,DE,DK,ES,FI,FR,GB,IE,IT,JP,LU,NL,NO,NZ,PL,PT,SE,US'),
  RELAY_ENTERPRISE_MAIL_CEILING: z.coerce.number().int().min(1).default(100_000),
  RELAY_ENTERPRISE_SMS_CEILING: z.coerce.number().int().min(1).default(10_000),
  RELAY_RECIPIENT_FREE: z.coerce.number().int().min(1).default(3),
  RELAY_RECIPIENT_BACKOFF_SECONDS: z.coerce.number().int().min(1).default(60),
  RELAY_RECIPIENT_BACKOFF_MAX_SECONDS: z.coerce.number().int().min(1).default(3_600),
  RELAY_SITE_DAILY_CAP: z.coerce.number().int().min(1).default(1_000),
  RELAY_RETRY_LIMIT: z.coerce.number().int().min(0).max(20).default(5),
  RELAY_RETRY_DELAY_SECONDS: z.coerce.number().int().min(1).default(30),
  PAYMENT_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  PAYMENT_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).default(300),
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
  /** Server processes on this machine (node:cluster); 1 runs in this process. */
  workers: number;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken: string | undefined;
  /** How long a process trusts a key lookup: a revocation reaches every process within it. */
  keyCacheMs: number;
  /** Check every response against the OpenAPI document (on by default outside production). */
  validateResponses: boolean;
  /** How often the blacklist snapshot is regenerated. */
  blacklistIntervalMs: number;
  /** MaxMind-format databases that replace the bundled geolocation data. */
  geoip: { countryDb?: string; asnDb?: string };
  relay: RelayConfig;
  payments: { secret: string | undefined; toleranceSeconds: number };
};

export interface RelayConfig {
  mail?: { smtpUrl: string; from: string; dkim?: { domainName: string; keySelector: string; keyFile: string } };
  sms?: { url: string; token: string; sender?: string };
  smsCountries: string[];
  enterpriseCeiling: { mail: number; sms: number };
  recipientFree: number;
  recipientBackoffBaseSeconds: number;
  recipientBackoffMaxSeconds: number;
  siteDailyCap: number;
  retryLimit: number;
  retryDelaySeconds: number;
}

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
  const problems: string[] = [];
  if (e.RELAY_SMTP_URL && !e.RELAY_MAIL_FROM) problems.push('  RELAY_MAIL_FROM: required when RELAY_SMTP_URL is set');
  if (e.RELAY_SMS_URL && !e.RELAY_SMS_TOKEN) problems.push('  RELAY_SMS_TOKEN: required when RELAY_SMS_URL is set');
  const dkim = [e.RELAY_DKIM_DOMAIN, e.RELAY_DKIM_SELECTOR, e.RELAY_DKIM_KEY_FILE];
  if (dkim.some(Boolean) && !dkim.every(Boolean)) {
    problems.push('  RELAY_DKIM_DOMAIN, RELAY_DKIM_SELECTOR, RELAY_DKIM_KEY_FILE: set all three to sign with DKIM');
  }
  if (problems.length) throw new ConfigError(`Invalid configuration:\n${problems.join('\n')}`);
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL,
    dataDir: e.DATA_DIR,
    trustProxy: e.TRUST_PROXY,
    logLevel: e.LOG_LEVEL,
    dbPoolMax: e.DB_POOL_MAX,
    workers: e.WORKERS,
    metricsToken: e.METRICS_TOKEN,
    keyCacheMs: e.KEY_CACHE_SECONDS * 1000,
    validateResponses: e.VALIDATE_RESPONSES ?? e.NODE_ENV !== 'production',
    blacklistIntervalMs: e.BLACKLIST_INTERVAL_MINUTES * 60_000,
    geoip: { countryDb: e.GEOIP_COUNTRY_DB, asnDb: e.GEOIP_ASN_DB },
    relay: {
      mail:
        e.RELAY_SMTP_URL && e.RELAY_MAIL_FROM
          ? {
              smtpUrl: e.RELAY_SMTP_URL,
              from: e.RELAY_MAIL_FROM,
              dkim:
                e.RELAY_DKIM_DOMAIN && e.RELAY_DKIM_SELECTOR && e.RELAY_DKIM_KEY_FILE
                  ? { domainName: e.RELAY_DKIM_DOMAIN, keySelector: e.RELAY_DKIM_SELECTOR, keyFile: e.RELAY_DKIM_KEY_FILE }
                  : undefined,
            }
          : undefined,
      sms: e.RELAY_SMS_URL && e.RELAY_SMS_TOKEN ? { url: e.RELAY_SMS_URL, token: e.RELAY_SMS_TOKEN, sender: e.RELAY_SMS_SENDER } : undefined,
      smsCountries: e.RELAY_SMS_COUNTRIES.split(','),
      enterpriseCeiling: { mail: e.RELAY_ENTERPRISE_MAIL_CEILING, sms: e.RELAY_ENTERPRISE_SMS_CEILING },
      recipientFree: e.RELAY_RECIPIENT_FREE,
      recipientBackoffBaseSeconds: e.RELAY_RECIPIENT_BACKOFF_SECONDS,
      recipientBackoffMaxSeconds: e.RELAY_RECIPIENT_BACKOFF_MAX_SECONDS,
      siteDailyCap: e.RELAY_SITE_DAILY_CAP,
      retryLimit: e.RELAY_RETRY_LIMIT,
      retryDelaySeconds: e.RELAY_RETRY_DELAY_SECONDS,
    },
    payments: { secret: e.PAYMENT_WEBHOOK_SECRET, toleranceSeconds: e.PAYMENT_WEBHOOK_TOLERANCE_SECONDS },
  };
}
