import { availableParallelism } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import type { Role } from './roles.js';
import { BUNDLES, DEFAULT_PUBLIC_LIMITS, type PublicLimits } from './roles.js';
import type { SNSClientConfig } from '@aws-sdk/client-sns';

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

/** Web sign-up: open to anyone, by invite code, or closed. */
export const SIGNUP_MODES = ['open', 'invite', 'closed'] as const;
export type SignupMode = (typeof SIGNUP_MODES)[number];

const boolean = z
  .enum(['true', 'false', '1', '0'])
  .transform((value) => value === 'true' || value === '1');

const SMS_PROVIDERS = ['webhook', 'twilio', 'vonage', 'plivo', 'sns', 'outbox'] as const;
const VONAGE_SIGNATURE_METHODS = ['md5hash', 'md5', 'sha1', 'sha256', 'sha512'] as const satisfies readonly VonageSignatureMethod[];

/** POST /report's group commit (REPORT_BATCH_MS, REPORT_BATCH_MAX; reputation/report-batcher.ts). */
export interface ReportBatching {
  /** 0 writes each report at once, on its own. */
  ms: number;
  /** 1 writes each report at once, on its own, too. */
  max: number;
}

/**
 * A provider's API origin (and optional path prefix) in place of its default: a region's
 * endpoint, a proxy, a test fake. Credentials go there, so plain http only on loopback.
 */
const apiBase = z
  .string()
  .regex(
    /^(https:\/\/[^/?#@]+|http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?)(\/[^?#]*)?$/,
    'must be an https:// URL without query (http:// only on loopback)',
  )
  .transform((url) => url.replace(/\/+$/, ''))
  .optional();

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
  KEY_CACHE_SECONDS: z.coerce.number().min(0).max(300).default(10),
  REPORT_BATCH_MS: z.coerce.number().min(0).max(1000).default(3),
  REPORT_BATCH_MAX: z.coerce.number().int().min(1).max(1000).default(100),
  VALIDATE_RESPONSES: boolean.optional(),
  BLACKLIST_INTERVAL_MINUTES: z.coerce.number().min(1).max(1440).default(15),
  BLACKLIST_HISTORY: z.coerce.number().int().min(1).max(672).default(8),
  QUOTA_SYNCHRONOUS_COMMIT: boolean.default(false),
  DNSBL_FILE: z.string().min(1).optional(),
  DNSBL_ZONE: z
    .string()
    .regex(/^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i, 'must be a DNS zone name such as bl.example.com')
    .optional(),
  DNSBL_CONFIDENCE: z.coerce.number().int().min(0).max(100).default(90),
  // At least 365: the longest history clients ask for (maxAgeInDays) stays whole.
  REPORT_RETENTION_DAYS: z.coerce.number().int().min(365, 'must be at least 365 (the longest maxAgeInDays a client may ask for)').max(36500).default(365),
  BLACKLIST_CACHE_MB: z.coerce.number().min(0).max(4096).default(32),
  RELAY_SMTP_URL: z.string().regex(/^smtps?:\/\//, 'must be an smtp:// or smtps:// URL').optional(),
  RELAY_MAIL_FROM: z.string().min(3).optional(),
  RELAY_DKIM_DOMAIN: z.string().min(1).optional(),
  RELAY_DKIM_SELECTOR: z.string().min(1).optional(),
  RELAY_DKIM_KEY_FILE: z.string().min(1).optional(),
  RELAY_MAIL_TRANSPORT: z.enum(['smtp', 'outbox']).optional(),
  RELAY_SMS_PROVIDER: z.enum(SMS_PROVIDERS).optional(),
  RELAY_SMS_URL: z.string().regex(/^https?:\/\//, 'must be an http:// or https:// URL').optional(),
  RELAY_SMS_TOKEN: z.string().min(1).optional(),
  RELAY_SMS_SENDER: z.string().min(1).max(15).optional(),
  RELAY_SMS_TIMEOUT_SECONDS: z.coerce.number().positive().max(120).default(10),
  RELAY_RECEIPT_BASE_URL: z
    .string()
    .regex(/^https?:\/\/[^/?#]+(\/[^?#]*)?$/, 'must be an http:// or https:// URL without query')
    .transform((url) => url.replace(/\/+$/, ''))
    .optional(),
  RELAY_OUTBOX_IN_PRODUCTION: boolean.optional(),
  TWILIO_ACCOUNT_SID: z.string().regex(/^AC[0-9a-fA-F]{32}$/, 'must be AC followed by 32 hexadecimal digits').optional(),
  TWILIO_AUTH_TOKEN: z.string().min(1).optional(),
  TWILIO_FROM: z.string().min(1).optional(),
  TWILIO_MESSAGING_SERVICE_SID: z.string().regex(/^MG[0-9a-fA-F]{32}$/, 'must be MG followed by 32 hexadecimal digits').optional(),
  TWILIO_API_BASE: apiBase,
  VONAGE_API_KEY: z.string().min(1).optional(),
  VONAGE_API_SECRET: z.string().min(1).optional(),
  VONAGE_FROM: z.string().min(1).max(15).optional(),
  VONAGE_API_BASE: apiBase,
  VONAGE_SIGNATURE_SECRET: z.string().min(1).optional(),
  VONAGE_SIGNATURE_METHOD: z.enum(VONAGE_SIGNATURE_METHODS).default('md5hash'),
  PLIVO_AUTH_ID: z.string().min(1).optional(),
  PLIVO_AUTH_TOKEN: z.string().min(1).optional(),
  PLIVO_FROM: z.string().min(1).optional(),
  PLIVO_POWERPACK_UUID: z.uuid('must be a UUID').optional(),
  PLIVO_API_BASE: apiBase,
  AWS_REGION: z.string().regex(/^[a-z]{2}(-[a-z]+)+-\d+$/, 'must be an AWS region such as eu-west-1').optional(),
  SNS_SMS_TYPE: z.enum(['Transactional', 'Promotional']).default('Transactional'),
  SNS_SENDER_ID: z
    .string()
    .regex(/^(?=.*[A-Za-z])[A-Za-z0-9]{3,11}$/, 'must be 3 to 11 letters and digits, at least one a letter')
    .optional(),
  SNS_ORIGINATION_NUMBER: z.string().min(1).optional(),
  SNS_API_BASE: apiBase,
  RELAY_SMS_COUNTRIES: z
    .string()
    .regex(/^[A-Z]{2}(,[A-Z]{2})*$/, 'must be ISO country codes separated by commas')
    .default('AT,AU,BE,CA,CH,CZ,DE,DK,ES,FI,FR,GB,IE,IT,JP,LU,NL,NO,NZ,PL,PT,SE,US'),
  RELAY_ENTERPRISE_MAIL_CEILING: z.coerce.number().int().min(1).default(100_000),
  RELAY_ENTERPRISE_SMS_CEILING: z.coerce.number().int().min(1).default(10_000),
  RELAY_RECIPIENT_FREE: z.coerce.number().int().min(1).default(3),
  RELAY_RECIPIENT_BACKOFF_SECONDS: z.coerce.number().int().min(1).default(60),
  RELAY_RECIPIENT_BACKOFF_MAX_SECONDS: z.coerce.number().int().min(1).default(3_600),
  RELAY_RECIPIENT_GLOBAL_DAILY: z.coerce.number().int().min(1).default(200),
  RELAY_SITE_DAILY_CAP: z.coerce.number().int().min(1).default(1_000),
  RELAY_SMS_FREE_TEXT_ROLES: z
    .string()
    .regex(/^((professional|business|enterprise)(,(professional|business|enterprise))*)?$/, 'must be relay roles (professional, business, enterprise) separated by commas, or empty')
    .default(''),
  RELAY_RETRY_LIMIT: z.coerce.number().int().min(0).max(20).default(5),
  RELAY_RETRY_DELAY_SECONDS: z.coerce.number().int().min(1).default(30),
  RELAY_MAIL_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(16),
  RELAY_SMS_CONCURRENCY: z.coerce.number().int().min(1).max(200).default(16),
  RELAY_POLL_SECONDS: z.coerce.number().min(0.5).max(300).default(2),
  RELAY_DELIVERY: boolean.default(true),
  RELAY_PAYLOAD_RETENTION_HOURS: z.coerce.number().min(0).max(24 * 365).default(24),
  // At least 40 days: a month's allowance and the 24-hour recipient throttles count messages.
  RELAY_MESSAGE_RETENTION_DAYS: z.coerce.number().int().min(40, 'must be at least 40 (a month of messages counts against the allowance)').max(3650).default(90),
  PAYMENT_WEBHOOK_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  PAYMENT_WEBHOOK_TOLERANCE_SECONDS: z.coerce.number().int().min(1).default(300),
  RULES_DIR: z.string().min(1).optional(),
  RULES_SIGNING_KEY_FILE: z.string().min(1).optional(),
  GEOIP_COUNTRY_DB: z.string().min(1).optional(),
  GEOIP_ASN_DB: z.string().min(1).optional(),
  NODE_ENV: z.string().default('development'),
  SIGNUP: z.enum(SIGNUP_MODES).default('open'),
  PUBLIC_URL: z
    .string()
    .regex(/^https?:\/\/[^/?#@\s]+$/, 'must be an origin such as https://trs.example.com (no path, query or credentials)')
    .optional(),
  COOKIE_SECURE: boolean.optional(),
  SESSION_DAYS: z.coerce.number().positive().max(90).default(7),
  SESSION_IDLE_HOURS: z.coerce.number().positive().max(24 * 90).default(24),
  ACCOUNT_MAIL_FROM: z.string().min(3).optional(),
  VERIFY_LINK_HOURS: z.coerce.number().positive().max(24 * 14).default(24),
  RESET_LINK_MINUTES: z.coerce.number().int().min(5).max(24 * 60).default(60),
  PASSWORD_SCRYPT_COST: z.coerce.number().int().min(14).max(20).default(15),
  PASSWORD_HASH_CONCURRENCY: z.coerce.number().int().min(1).max(256).optional(),
  PASSWORD_HASH_QUEUE: z.coerce.number().int().min(0).max(10_000).optional(),
  /** libuv's own variable, read here only to size the hashing under it (see passwordHashing). */
  UV_THREADPOOL_SIZE: z.coerce.number().int().min(1).max(1024).optional(),
  ACCOUNT_VERIFY_RESEND_MINUTES: z.coerce.number().int().min(1).max(24 * 60).default(10),
  AUDIT_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
  SERVICE_NAME: z.string().min(1).max(60).regex(/^[^\r\n<>]+$/, 'must be one line without < or >').default('Threat-Reputation Service'),
  RELAY_MAIL_FOOTER: z.string().max(500).optional(),
  STRIPE_SECRET_KEY: z.string().regex(/^(sk|rk)_(test|live)_[A-Za-z0-9]+$/, 'must be a Stripe secret or restricted key (sk_… or rk_…)').optional(),
  STRIPE_WEBHOOK_SECRET: z.string().regex(/^whsec_[A-Za-z0-9+/=]+$/, 'must be a webhook signing secret (whsec_…)').optional(),
  STRIPE_API_BASE: apiBase,
  // Delisting (src/delisting, docs/delisting.md).
  DELIST_REQUESTS_PER_SOURCE_DAILY: z.coerce.number().int().min(1).max(1_000).default(5),
  DELIST_MAILS_PER_RECIPIENT_DAILY: z.coerce.number().int().min(1).max(100).default(3),
  DELIST_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  DELIST_OPERATOR_EMAILS: z.string().max(2_000).optional(),
  // Outbound webhooks (src/webhooks, docs/webhooks.md): CIDRs a webhook URL may resolve into though not public.
  WEBHOOK_ALLOW_RANGES: z.string().max(2_000).optional(),
  // Keys sealing webhook signing secrets at rest (src/webhooks/secrets.ts): base64 of 32 bytes each, the first seals.
  WEBHOOK_SECRETS_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=(,[A-Za-z0-9+/]{43}=)*$/, 'must be one or more comma-separated keys, each the base64 of 32 bytes (openssl rand -base64 32)')
    .optional(),
});

/** `STRIPE_PRICE_SVC_MAIL_BUNDLE_1000=price_…`: the Stripe price of each bundle that is for sale. */
const STRIPE_PRICE = /^STRIPE_PRICE_(.+)$/;

/** Every environment variable the schema reads (docs/configuration.md documents each; test/unit/docs.test.ts checks). */
export const CONFIG_VARIABLES: readonly string[] = Object.keys(schema.shape);

/** Variables read by pattern rather than by name, with the form the documentation gives them. */
export const CONFIG_VARIABLE_PATTERNS: readonly { pattern: RegExp; documentedAs: string }[] = [
  { pattern: STRIPE_PRICE, documentedAs: 'STRIPE_PRICE_<BUNDLE_ID>' },
];

/** Outbound webhooks (src/webhooks). */
export interface WebhookSettings {
  /**
   * WEBHOOK_ALLOW_RANGES: networks (CIDR) a webhook's host may resolve into although they are
   * not public (an operator's own receivers; the tests' local receiver). A host inside them may
   * also be reached over plain http.
   */
  allowRanges: string[];
  /**
   * WEBHOOK_SECRETS_KEY: keys that seal the signing secrets at rest (AES-256-GCM), the first
   * sealing and every one opening (rotation); none: the secrets are stored in clear.
   */
  secretKeys?: Buffer[];
}

/** Delisting requests (src/delisting): their bounds, the default approval, who reviews on the dashboard. */
export interface DelistingSettings {
  /** Requests one source (address, IPv6 /64) may make in 24 hours (DELIST_REQUESTS_PER_SOURCE_DAILY). */
  requestsPerSourceDaily: number;
  /** Confirmation mails one recipient may receive in 24 hours (DELIST_MAILS_PER_RECIPIENT_DAILY). */
  mailsPerRecipientDaily: number;
  /** How long an approval whitelists the address when the operator names no time (DELIST_DAYS). */
  defaultDays: number;
  /** The accounts (by confirmed address) that review requests on the dashboard (DELIST_OPERATOR_EMAILS). */
  operatorEmails: string[];
}

export interface WebConfig {
  signup: SignupMode;
  /** Origin of the links in account mails and of Stripe's return pages; never taken from a request. */
  publicUrl: string | undefined;
  /** Session cookies carry Secure (and the `__Host-` prefix): on by default with NODE_ENV=production. */
  cookieSecure: boolean;
  sessionAbsoluteMs: number;
  sessionIdleMs: number;
  /** From of account mails; the relay's From when unset. */
  mailFrom: string | undefined;
  verifyTtlMs: number;
  /** A sign-in to an unconfirmed account mails a new link at most this often (ACCOUNT_VERIFY_RESEND_MINUTES). */
  verifyResendMs: number;
  resetTtlMs: number;
  scryptCost: number;
  /**
   * Password hashes (scrypt, 2^cost × 1 KiB each) that run at once in this process, and how many
   * more may wait for one; beyond that a page answers 503 (PASSWORD_HASH_CONCURRENCY, _QUEUE).
   */
  hashConcurrency: number;
  hashQueue: number;
  auditRetentionMs: number;
  serviceName: string;
}

export interface StripeConfig {
  secretKey: string;
  webhookSecret: string;
  /** Bundle id -> Stripe price id. */
  prices: Record<string, string>;
  apiBase: string | undefined;
}

export type Config = {
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
  /** QUOTA_SYNCHRONOUS_COMMIT: a standalone charge of a daily counter waits for the WAL flush (keys/usage.repository.ts ASYNC_COMMIT). */
  quotaSynchronousCommit: boolean;
  /** Server errors (but 503) a key or address may meet per day before its charges stand and it is refused. */
  faultBudget: number;
  /** Graceful stop: how long a draining process keeps serving after SIGTERM, and the deadline of the whole stop. */
  shutdown: { drainMs: number; timeoutMs: number };
  /** How long a process trusts a key lookup: a revocation reaches every process within it. */
  keyCacheMs: number;
  /** Delisting requests: bounds, default approval, the dashboard's reviewers. */
  delisting: DelistingSettings;
  webhooks: WebhookSettings;
  /** POST /report's group commit: reports gathered this long (0: each on its own), at most `max` per transaction. */
  reportBatching: ReportBatching;
  /** Check every response against the OpenAPI document (on by default outside production). */
  validateResponses: boolean;
  /** How often the blacklist snapshot is regenerated. */
  blacklistIntervalMs: number;
  /** Earlier snapshots kept beside the current one, for deltas (`since`) and bouncers' pulls. */
  blacklistHistory: number;
  /**
   * The DNS blocklist file each process rewrites (atomically) when the snapshot changed
   * (DNSBL_FILE; unset: none), its zone for the SOA (DNSBL_ZONE) and its confidence (DNSBL_CONFIDENCE, 90).
   */
  dnsbl: { file: string | undefined; zone: string | undefined; confidence: number };
  /**
   * Reports are kept at least this long (REPORT_RETENTION_DAYS, 365), then dropped with their
   * month's partition, and every address's aggregate is recomputed without them.
   */
  reportRetentionMs: number;
  /** Bytes of rendered lists a process keeps to answer repeated polls (0: render every time). */
  blacklistCacheBytes: number;
  /** Signed rule sets: the folder of `<name>.json` files and the Ed25519 key that signs them. */
  rules: { dir: string; signingKeyFile: string | undefined };
  /** MaxMind-format databases that replace the bundled geolocation data. */
  geoip: { countryDb?: string; asnDb?: string };
  relay: RelayConfig;
  payments: { secret: string | undefined; toleranceSeconds: number };
  web: WebConfig;
  /** Bundles sold through Stripe Checkout; undefined when Stripe is not configured. */
  stripe: StripeConfig | undefined;
};

type Env = z.infer<typeof schema>;

interface DkimFiles {
  domainName: string;
  keySelector: string;
  /** PEM private key, read at start. */
  keyFile: string;
}

export interface RelayConfig {
  /** SMTP (without `transport`, as before there was a choice), or `.eml` files in `dir`. */
  mail?: { transport?: 'smtp'; smtpUrl: string; from: string; dkim?: DkimFiles } | { transport: 'outbox'; dir: string; from: string; dkim?: DkimFiles };
  /** The SMS provider and its settings, by `provider`. */
  sms?: SmsConfig;
  smsCountries: string[];
  enterpriseCeiling: { mail: number; sms: number };
  recipientFree: number;
  recipientBackoffBaseSeconds: number;
  recipientBackoffMaxSeconds: number;
  recipientGlobalDaily: number;
  siteDailyCap: number;
  /** Roles that may send free-text SMS; the others must use a template. */
  smsFreeTextRoles: Role[];
  retryLimit: number;
  retryDelaySeconds: number;
  /**
   * How deliveries run in this process: messages handed to a channel's transport at once, how
   * often an idle worker looks for work it was not woken for, and whether this process delivers
   * at all (`false`: it accepts and queues; other processes deliver).
   */
  delivery: { concurrency: { mail: number; sms: number }; pollSeconds: number; enabled: boolean };
  /** Appended to Professional relay mails (RELAY_MAIL_FOOTER); Business and Enterprise mails are white-label. */
  mailFooter?: string;
  /**
   * How long a message's content (its text, HTML, subject, headers) is kept once it reached a
   * final state (sent, delivered, undelivered, failed); then the purge deletes it and keeps the
   * rest (RELAY_PAYLOAD_RETENTION_HOURS, 24 by default).
   */
  payloadRetentionMs: number;
  /**
   * How long a message's metadata (recipient, status, times, provider id) is kept once it reached
   * a final state; then the purge deletes the message (RELAY_MESSAGE_RETENTION_DAYS, 90 by default).
   */
  messageRetentionMs: number;
}

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
  const dkim = [e.RELAY_DKIM_DOMAIN, e.RELAY_DKIM_SELECTOR, e.RELAY_DKIM_KEY_FILE];
  if (dkim.some(Boolean) && !dkim.every(Boolean)) {
    problems.push('  RELAY_DKIM_DOMAIN, RELAY_DKIM_SELECTOR, RELAY_DKIM_KEY_FILE: set all three to sign with DKIM');
  }
  const mail = mailConfig(e, problems);
  const sms = smsConfig(e, problems);
  const stripe = stripeConfig(e, env, problems);
  const { workerThreadPool, ...hashing } = passwordHashing(e, problems);
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
    quotaSynchronousCommit: e.QUOTA_SYNCHRONOUS_COMMIT,
    faultBudget: e.FAULT_BUDGET,
    shutdown: { drainMs: e.SHUTDOWN_DRAIN_SECONDS * 1000, timeoutMs: e.SHUTDOWN_TIMEOUT_SECONDS * 1000 },
    keyCacheMs: e.KEY_CACHE_SECONDS * 1000,
    delisting: {
      requestsPerSourceDaily: e.DELIST_REQUESTS_PER_SOURCE_DAILY,
      mailsPerRecipientDaily: e.DELIST_MAILS_PER_RECIPIENT_DAILY,
      defaultDays: e.DELIST_DAYS,
      operatorEmails: (e.DELIST_OPERATOR_EMAILS ?? '').split(',').map((m) => m.trim().toLowerCase()).filter(Boolean),
    },
    webhooks: {
      allowRanges: (e.WEBHOOK_ALLOW_RANGES ?? '').split(',').map((r) => r.trim()).filter(Boolean),
      secretKeys: (e.WEBHOOK_SECRETS_KEY ?? '').split(',').filter(Boolean).map((k) => Buffer.from(k, 'base64')),
    },
    reportBatching: { ms: e.REPORT_BATCH_MS, max: e.REPORT_BATCH_MAX },
    validateResponses: e.VALIDATE_RESPONSES ?? e.NODE_ENV !== 'production',
    blacklistIntervalMs: e.BLACKLIST_INTERVAL_MINUTES * 60_000,
    blacklistHistory: e.BLACKLIST_HISTORY,
    dnsbl: { file: e.DNSBL_FILE, zone: e.DNSBL_ZONE?.replace(/\.$/, '').toLowerCase(), confidence: e.DNSBL_CONFIDENCE },
    reportRetentionMs: e.REPORT_RETENTION_DAYS * 86_400_000,
    blacklistCacheBytes: Math.round(e.BLACKLIST_CACHE_MB * 1024 * 1024),
    geoip: { countryDb: e.GEOIP_COUNTRY_DB, asnDb: e.GEOIP_ASN_DB },
    rules: { dir: e.RULES_DIR ?? path.join(e.DATA_DIR, 'rules'), signingKeyFile: e.RULES_SIGNING_KEY_FILE },
    relay: {
      mail,
      sms,
      smsCountries: e.RELAY_SMS_COUNTRIES.split(','),
      enterpriseCeiling: { mail: e.RELAY_ENTERPRISE_MAIL_CEILING, sms: e.RELAY_ENTERPRISE_SMS_CEILING },
      recipientFree: e.RELAY_RECIPIENT_FREE,
      recipientBackoffBaseSeconds: e.RELAY_RECIPIENT_BACKOFF_SECONDS,
      recipientBackoffMaxSeconds: e.RELAY_RECIPIENT_BACKOFF_MAX_SECONDS,
      recipientGlobalDaily: e.RELAY_RECIPIENT_GLOBAL_DAILY,
      siteDailyCap: e.RELAY_SITE_DAILY_CAP,
      smsFreeTextRoles: e.RELAY_SMS_FREE_TEXT_ROLES.split(',').filter(Boolean) as Role[],
      retryLimit: e.RELAY_RETRY_LIMIT,
      retryDelaySeconds: e.RELAY_RETRY_DELAY_SECONDS,
      delivery: {
        concurrency: { mail: e.RELAY_MAIL_CONCURRENCY, sms: e.RELAY_SMS_CONCURRENCY },
        pollSeconds: e.RELAY_POLL_SECONDS,
        enabled: e.RELAY_DELIVERY,
      },
      mailFooter: e.RELAY_MAIL_FOOTER?.trim() || undefined,
      payloadRetentionMs: e.RELAY_PAYLOAD_RETENTION_HOURS * 3_600_000,
      messageRetentionMs: e.RELAY_MESSAGE_RETENTION_DAYS * 86_400_000,
    },
    payments: { secret: e.PAYMENT_WEBHOOK_SECRET, toleranceSeconds: e.PAYMENT_WEBHOOK_TOLERANCE_SECONDS },
    web: {
      signup: e.SIGNUP,
      // Development links point at the local server; in production only PUBLIC_URL will do.
      publicUrl: e.PUBLIC_URL ?? (e.NODE_ENV === 'production' ? undefined : `http://localhost:${e.PORT}`),
      cookieSecure: e.COOKIE_SECURE ?? e.NODE_ENV === 'production',
      sessionAbsoluteMs: e.SESSION_DAYS * 86_400_000,
      sessionIdleMs: e.SESSION_IDLE_HOURS * 3_600_000,
      mailFrom: e.ACCOUNT_MAIL_FROM,
      verifyTtlMs: e.VERIFY_LINK_HOURS * 3_600_000,
      verifyResendMs: e.ACCOUNT_VERIFY_RESEND_MINUTES * 60_000,
      resetTtlMs: e.RESET_LINK_MINUTES * 60_000,
      scryptCost: e.PASSWORD_SCRYPT_COST,
      ...hashing,
      auditRetentionMs: e.AUDIT_RETENTION_DAYS * 86_400_000,
      serviceName: e.SERVICE_NAME,
    },
    stripe,
  };
}

/** Stripe needs its key, the webhook secret and at least one price, each for a known bundle. */
function stripeConfig(e: Env, env: NodeJS.ProcessEnv, problems: string[]): StripeConfig | undefined {
  const prices: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    const match = STRIPE_PRICE.exec(name);
    if (!match || value === undefined) continue;
    const bundle = match[1]!.toLowerCase();
    if (!Object.hasOwn(BUNDLES, bundle)) problems.push(`  ${name}: no bundle ${bundle}; known: ${Object.keys(BUNDLES).join(', ')}`);
    else if (!/^price_[A-Za-z0-9]+$/.test(value)) problems.push(`  ${name}: must be a Stripe price id (price_…)`);
    else prices[bundle] = value;
  }
  const any = e.STRIPE_SECRET_KEY || e.STRIPE_WEBHOOK_SECRET || Object.keys(prices).length > 0;
  if (!any) return undefined;
  requireAll(problems, 'Stripe is configured', { STRIPE_SECRET_KEY: e.STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET: e.STRIPE_WEBHOOK_SECRET });
  if (Object.keys(prices).length === 0) problems.push('  STRIPE_PRICE_<BUNDLE_ID>: set the price of at least one bundle, e.g. STRIPE_PRICE_SVC_MAIL_BUNDLE_1000');
  return e.STRIPE_SECRET_KEY && e.STRIPE_WEBHOOK_SECRET
    ? { secretKey: e.STRIPE_SECRET_KEY, webhookSecret: e.STRIPE_WEBHOOK_SECRET, prices, apiBase: e.STRIPE_API_BASE }
    : undefined;
}

/** Threads of libuv's pool when UV_THREADPOOL_SIZE is not set (Node's default). */
export const LIBUV_DEFAULT_THREADS = 4;
/** Threads of libuv's pool that password hashing always leaves to DNS look-ups and file writes. */
export const THREADS_LEFT_BY_HASHING = 2;

/**
 * How many password hashes run at once. scrypt runs on libuv's thread pool, which DNS look-ups
 * (the relay's SMTP and providers) and file writes (the outbox) share, so hashing never takes
 * more than its size less THREADS_LEFT_BY_HASHING. The pool's size is fixed when a process
 * starts, from UV_THREADPOOL_SIZE in its environment: Node reads it before any of our code runs,
 * so a process cannot size its own. A supervisor (WORKERS > 1) starts its workers with one
 * sized for the hashing (`workerThreadPool`, main.ts) unless the operator set one; a single
 * process has the operator's, else Node's 4. By default as many hashes as cores, within that;
 * the queue holds twice as many.
 */
function passwordHashing(e: Env, problems: string[]): { hashConcurrency: number; hashQueue: number; workerThreadPool: number | undefined } {
  const wanted = e.PASSWORD_HASH_CONCURRENCY ?? availableParallelism();
  const workerThreadPool = e.WORKERS > 1 && e.UV_THREADPOOL_SIZE === undefined ? Math.max(LIBUV_DEFAULT_THREADS, wanted + THREADS_LEFT_BY_HASHING) : undefined;
  const threads = e.UV_THREADPOOL_SIZE ?? workerThreadPool ?? LIBUV_DEFAULT_THREADS;
  const room = Math.max(1, threads - THREADS_LEFT_BY_HASHING);
  if (e.PASSWORD_HASH_CONCURRENCY !== undefined && e.PASSWORD_HASH_CONCURRENCY > room) {
    problems.push(
      `  PASSWORD_HASH_CONCURRENCY: ${e.PASSWORD_HASH_CONCURRENCY} hashes at once would leave fewer than ${THREADS_LEFT_BY_HASHING} of libuv's ${threads} threads to DNS and file writes; start the server with UV_THREADPOOL_SIZE=${e.PASSWORD_HASH_CONCURRENCY + THREADS_LEFT_BY_HASHING} or more in its environment (or WORKERS > 1, whose workers get it), or lower it`,
    );
  }
  const hashConcurrency = Math.min(wanted, room);
  return { hashConcurrency, hashQueue: e.PASSWORD_HASH_QUEUE ?? 2 * hashConcurrency, workerThreadPool };
}

/** Pushes `NAME: required when …` for each variable that is not set. */
function requireAll(problems: string[], when: string, variables: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(variables)) if (!value) problems.push(`  ${name}: required when ${when}`);
}

/**
 * The outbox writes messages to files instead of sending them: in production that silently
 * drops every 2FA code, so it takes an explicit RELAY_OUTBOX_IN_PRODUCTION=true there.
 */
function guardOutbox(e: Env, problems: string[], variable: string): void {
  if (e.NODE_ENV === 'production' && !e.RELAY_OUTBOX_IN_PRODUCTION) {
    problems.push(
      `  ${variable}: outbox writes messages to files instead of sending them; refused with NODE_ENV=production unless RELAY_OUTBOX_IN_PRODUCTION=true`,
    );
  }
}

function mailConfig(e: Env, problems: string[]): RelayConfig['mail'] {
  const transport = e.RELAY_MAIL_TRANSPORT ?? (e.RELAY_SMTP_URL ? 'smtp' : undefined);
  const dkim =
    e.RELAY_DKIM_DOMAIN && e.RELAY_DKIM_SELECTOR && e.RELAY_DKIM_KEY_FILE
      ? { domainName: e.RELAY_DKIM_DOMAIN, keySelector: e.RELAY_DKIM_SELECTOR, keyFile: e.RELAY_DKIM_KEY_FILE }
      : undefined;
  if (transport === 'outbox') {
    guardOutbox(e, problems, 'RELAY_MAIL_TRANSPORT');
    // No real recipient sees the From of a file, so development needs no address set.
    return { transport, dir: path.join(e.DATA_DIR, 'outbox', 'mail'), from: e.RELAY_MAIL_FROM ?? 'Relay <relay@localhost>', dkim };
  }
  if (transport === 'smtp') {
    const { RELAY_SMTP_URL: smtpUrl, RELAY_MAIL_FROM: from } = e;
    requireAll(problems, e.RELAY_MAIL_TRANSPORT ? 'RELAY_MAIL_TRANSPORT is smtp' : 'RELAY_SMTP_URL is set', {
      RELAY_SMTP_URL: smtpUrl,
      RELAY_MAIL_FROM: from,
    });
    return smtpUrl && from ? { smtpUrl, from, dkim } : undefined;
  }
  return undefined;
}

/**
 * The SMS provider: RELAY_SMS_PROVIDER, or the generic webhook when only RELAY_SMS_URL is set
 * (the configuration from before there was a choice). Each provider's receipts are to come to
 * `${RELAY_RECEIPT_BASE_URL}/webhooks/sms/<provider>`.
 */
function smsConfig(e: Env, problems: string[]): SmsConfig | undefined {
  const provider = e.RELAY_SMS_PROVIDER ?? (e.RELAY_SMS_URL ? 'webhook' : undefined);
  const when = e.RELAY_SMS_PROVIDER ? `RELAY_SMS_PROVIDER is ${provider}` : 'RELAY_SMS_URL is set';
  const timeoutMs = e.RELAY_SMS_TIMEOUT_SECONDS * 1000;
  const receiptUrl = e.RELAY_RECEIPT_BASE_URL && `${e.RELAY_RECEIPT_BASE_URL}/webhooks/sms/${provider}`;
  switch (provider) {
    case undefined:
      return undefined;
    case 'webhook': {
      const { RELAY_SMS_URL: url, RELAY_SMS_TOKEN: token } = e;
      requireAll(problems, when, { RELAY_SMS_URL: url, RELAY_SMS_TOKEN: token });
      return url && token ? { provider, url, token, sender: e.RELAY_SMS_SENDER, timeoutMs } : undefined;
    }
    case 'twilio': {
      const { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken, TWILIO_FROM: from } = e;
      const messagingServiceSid = e.TWILIO_MESSAGING_SERVICE_SID;
      requireAll(problems, when, { TWILIO_ACCOUNT_SID: accountSid, TWILIO_AUTH_TOKEN: authToken });
      if (!from && !messagingServiceSid) problems.push(`  TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID: one is required when ${when}`);
      return accountSid && authToken && (from || messagingServiceSid)
        ? { provider, accountSid, authToken, from, messagingServiceSid, apiBase: e.TWILIO_API_BASE, receiptUrl, timeoutMs }
        : undefined;
    }
    case 'vonage': {
      const { VONAGE_API_KEY: apiKey, VONAGE_API_SECRET: apiSecret, VONAGE_FROM: from } = e;
      requireAll(problems, when, { VONAGE_API_KEY: apiKey, VONAGE_API_SECRET: apiSecret, VONAGE_FROM: from });
      // Unsigned receipts could come from anyone: asking for receipts means verifying them.
      if (receiptUrl && !e.VONAGE_SIGNATURE_SECRET) {
        problems.push('  VONAGE_SIGNATURE_SECRET: required when RELAY_RECEIPT_BASE_URL is set (receipts are verified by their signature)');
      }
      const receiptSignature = e.VONAGE_SIGNATURE_SECRET ? { secret: e.VONAGE_SIGNATURE_SECRET, method: e.VONAGE_SIGNATURE_METHOD } : undefined;
      return apiKey && apiSecret && from
        ? { provider, apiKey, apiSecret, from, apiBase: e.VONAGE_API_BASE, receiptUrl, receiptSignature, timeoutMs }
        : undefined;
    }
    case 'plivo': {
      const { PLIVO_AUTH_ID: authId, PLIVO_AUTH_TOKEN: authToken, PLIVO_FROM: from, PLIVO_POWERPACK_UUID: powerpackUuid } = e;
      requireAll(problems, when, { PLIVO_AUTH_ID: authId, PLIVO_AUTH_TOKEN: authToken });
      if (Boolean(from) === Boolean(powerpackUuid)) {
        problems.push(`  PLIVO_FROM, PLIVO_POWERPACK_UUID: set exactly one when ${when}`);
      }
      return authId && authToken && Boolean(from) !== Boolean(powerpackUuid)
        ? { provider, authId, authToken, from, powerpackUuid, apiBase: e.PLIVO_API_BASE, receiptUrl, timeoutMs }
        : undefined;
    }
    case 'sns': {
      const { AWS_REGION: region } = e;
      requireAll(problems, when, { AWS_REGION: region });
      return region
        ? {
            provider,
            region,
            smsType: e.SNS_SMS_TYPE,
            senderId: e.SNS_SENDER_ID,
            originationNumber: e.SNS_ORIGINATION_NUMBER,
            endpoint: e.SNS_API_BASE,
            timeoutMs,
          }
        : undefined;
    }
    case 'outbox':
      guardOutbox(e, problems, 'RELAY_SMS_PROVIDER');
      return { provider, dir: path.join(e.DATA_DIR, 'outbox', 'sms') };
  }
}

// The SMS providers' settings: what smsConfig() reads from RELAY_SMS_*, and what each provider of
// relay/delivery/sms/ is created with.

/** A provider of our own making, or a gateway in front of one: JSON in, bearer token. */
export interface WebhookConfig {
  provider?: 'webhook';
  /** The provider endpoint that takes `POST { to, text, sender?, reference? }`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Sender id or number, when the provider lets the relay choose one. */
  sender?: string;
  /** Deadline for the whole request, 10 s by default. */
  timeoutMs?: number;
}

/**
 * Twilio Programmable Messaging, Messages resource:
 * https://www.twilio.com/docs/messaging/api/message-resource#create-a-message-resource
 *
 * Plain HTTPS rather than the `twilio` package: sending is one form POST with Basic auth, and
 * the SDK brings axios and a dozen more packages, its own HTTP agent and retry logic in the
 * way of ours, and no way to point it at a fake on loopback short of monkey-patching.
 */
export interface TwilioConfig {
  provider: 'twilio';
  /** `AC…`: the account, and the user of Basic auth. */
  accountSid: string;
  /** The password of Basic auth, and the key of the receipts' signatures. */
  authToken: string;
  /** A Twilio number in E.164, a short code or an alphanumeric sender id. */
  from?: string;
  /** `MG…`: a Messaging Service that picks the sender (either this or `from`, or both). */
  messagingServiceSid?: string;
  /** Another API origin (a region's `https://api.dublin.ie1.twilio.com`, or a test fake). */
  apiBase?: string;
  /** Where Twilio posts delivery receipts (`StatusCallback`). */
  receiptUrl?: string;
  timeoutMs?: number;
}

/**
 * Plivo Message API: https://www.plivo.com/docs/messaging/api/message/send-a-message
 *
 * Plain HTTPS rather than the `plivo` package: sending is one JSON POST with Basic auth, and
 * the SDK pulls in axios, lodash and more, with its own retries and agent.
 */
export interface PlivoConfig {
  provider: 'plivo';
  /** `MA…` or `SA…`: the account, and the user of Basic auth. */
  authId: string;
  /** The password of Basic auth, and the key of the receipts' signatures. */
  authToken: string;
  /** A Plivo number in E.164 or an alphanumeric sender id; or */
  from?: string;
  /** a Powerpack that picks the sender (Plivo refuses both at once). */
  powerpackUuid?: string;
  /** Another API origin than `https://api.plivo.com` (a test fake, a proxy). */
  apiBase?: string;
  /** Where Plivo posts delivery receipts (`url`). */
  receiptUrl?: string;
  timeoutMs?: number;
}

/**
 * Amazon SNS, Publish to a phone number:
 * https://docs.aws.amazon.com/sns/latest/dg/sms_publish-to-phone.html
 *
 * The official SDK (`@aws-sdk/client-sns`), unlike the other providers: a request needs a
 * SigV4 signature and credentials from the standard chain (environment, shared files, SSO,
 * web identity, ECS and EC2 roles, with refresh), which is a lot to get right by hand, and the
 * v3 client is small, modular and well kept. It keeps connections alive by default, takes an
 * `endpoint` (for tests and VPC endpoints) and does not follow redirects.
 */
export interface SnsConfig {
  provider: 'sns';
  /** The region whose SNS sends the SMS (not every region does). */
  region: string;
  /** Transactional (2FA codes: delivery first) or Promotional (cheapest). */
  smsType: 'Transactional' | 'Promotional';
  /** An alphanumeric sender id (3-11 characters), where the destination country allows one. */
  senderId?: string;
  /** A number or short code of the account to send from (E.164). */
  originationNumber?: string;
  /** Another endpoint than the region's (a VPC endpoint, a test fake). */
  endpoint?: string;
  /** Fixed credentials instead of the standard chain (the tests' fake needs no real ones). */
  credentials?: SNSClientConfig['credentials'];
  timeoutMs?: number;
}

/** SMS written as JSON files into a folder, for local development: nothing leaves the machine. */
export interface OutboxConfig {
  provider: 'outbox';
  /** `${DATA_DIR}/outbox/sms` */
  dir: string;
}

/**
 * Vonage (formerly Nexmo) SMS API: https://developer.vonage.com/en/api/sms
 *
 * Plain HTTPS rather than `@vonage/server-sdk`: sending is one form POST, and the SDK is a
 * family of packages around node-fetch with its own agent, which would take the keep-alive,
 * timeout and redirect policy out of our hands for no gain.
 */
export interface VonageConfig {
  provider: 'vonage';
  apiKey: string;
  apiSecret: string;
  /** A Vonage number or an alphanumeric sender id (up to 11 characters). */
  from: string;
  /** Another API origin than `https://rest.nexmo.com` (a test fake, a proxy). */
  apiBase?: string;
  /** Where Vonage posts delivery receipts (`callback`, overriding the dashboard's setting). */
  receiptUrl?: string;
  /** What {@link verifyVonageReceipt} checks receipts with; sending does not use it. */
  receiptSignature?: VonageSignature;
  timeoutMs?: number;
}

/** The signature settings of the account, from the dashboard, for signed delivery receipts. */
export interface VonageSignature {
  secret: string;
  method: VonageSignatureMethod;
}

/** The dashboard's choices: "MD5 hash" (the default), or an HMAC with MD5, SHA-1, SHA-256, SHA-512. */
export type VonageSignatureMethod = 'md5hash' | 'md5' | 'sha1' | 'sha256' | 'sha512';

/** The SMS provider's settings (RELAY_SMS_*), one shape per provider (relay/delivery/sms/*.ts). */
export type SmsConfig = WebhookConfig | TwilioConfig | VonageConfig | PlivoConfig | SnsConfig | OutboxConfig;
