/**
 * Is this error the database being unavailable (stopped, restarting, failing over, out of
 * connections, or the connection to it lost), so that the same request may succeed shortly?
 * Such a request is answered 503 with Retry-After, never 500, whatever statement, connection
 * or transaction state the failure met. The error and its causes are examined, as pg,
 * pg-pool, knex and MikroORM each wrap it their own way.
 */
const SQLSTATE_CLASSES = ['08', '53', '57P', '58'];
/** Serialization failure, deadlock, idle-in-transaction timeout, statement timeout, read-only standby. */
const SQLSTATES = new Set(['40001', '40P01', '25P03', '57014', '25006']);
const NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
const MESSAGES =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed and is not queryable|Cannot use a pool after calling end|the database system is (starting up|shutting down|in recovery)|terminating connection|server closed the connection|Knex: Timeout acquiring a connection|Connection ended unexpectedly|read ECONNRESET|write EPIPE/i;

export function isDatabaseUnavailable(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const e = err as { code?: unknown; name?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  const code = typeof e.code === 'string' ? e.code : '';
  if (SQLSTATES.has(code) || SQLSTATE_CLASSES.some((prefix) => code.startsWith(prefix) && code.length === 5)) return true;
  if (NODE_CODES.has(code)) return true;
  // A missing file is the database only when it is the Unix socket a connection was made to
  // (the embedded database restarting, a local server stopped): a file the code reads and
  // cannot find is a bug, and answers 500 rather than 503 as if it would pass.
  if (code === 'ENOENT' && (err as { syscall?: unknown }).syscall === 'connect') return true;
  if (e.name === 'KnexTimeoutError' || e.name === 'ConnectionException') return true;
  if (typeof e.message === 'string' && MESSAGES.test(e.message)) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) return true;
  return isDatabaseUnavailable(e.cause, depth + 1);
}
