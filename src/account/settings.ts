import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { boolean } from '../settings.js';

/**
 * The accounts' settings slice (sign-up, sessions, the mailed links, password hashing, the audit
 * trail, the pages' name): its variables (merged into the configuration's one schema by
 * src/config.ts, which reads and checks the environment once) and what the accounts and the
 * pages are handed. A settings slice imports nothing of its area (.dependency-cruiser.cjs).
 */

/** Web sign-up: open to anyone, by invite code, or closed. */
export const SIGNUP_MODES = ['open', 'invite', 'closed'] as const;
export type SignupMode = (typeof SIGNUP_MODES)[number];

/** The accounts' environment variables (docs/configuration.md). */
export const accountVariables = {
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
};

type AccountEnv = z.infer<z.ZodObject<typeof accountVariables>>;

/** What the accounts' settings read of the others. */
interface Common {
  /** NODE_ENV: production wants PUBLIC_URL and Secure cookies. */
  nodeEnv: string;
  /** PORT: development's links point at the local server. */
  port: number;
  /** WORKERS: a supervisor sizes its workers' thread pool for the hashing. */
  workers: number;
}

/**
 * The accounts' and pages' settings, and the thread pool a supervisor starts its workers with;
 * each problem is pushed to `problems` as a line naming its variables.
 */
export function accountSettings(e: AccountEnv, common: Common, problems: string[]): { web: WebConfig; workerThreadPool: number | undefined } {
  const { workerThreadPool, ...hashing } = passwordHashing(e, common.workers, problems);
  return {
    workerThreadPool,
    web: {
      signup: e.SIGNUP,
      // Development links point at the local server; in production only PUBLIC_URL will do.
      publicUrl: e.PUBLIC_URL ?? (common.nodeEnv === 'production' ? undefined : `http://localhost:${common.port}`),
      cookieSecure: e.COOKIE_SECURE ?? common.nodeEnv === 'production',
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
  };
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
function passwordHashing(e: AccountEnv, workers: number, problems: string[]): { hashConcurrency: number; hashQueue: number; workerThreadPool: number | undefined } {
  const wanted = e.PASSWORD_HASH_CONCURRENCY ?? availableParallelism();
  const workerThreadPool = workers > 1 && e.UV_THREADPOOL_SIZE === undefined ? Math.max(LIBUV_DEFAULT_THREADS, wanted + THREADS_LEFT_BY_HASHING) : undefined;
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
