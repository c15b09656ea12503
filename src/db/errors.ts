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

/** A database URL fit for a message or a log line: its password replaced with `***`. */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(not shown: not a valid URL)';
  }
}

/**
 * What a failed first connection to DATABASE_URL means, in words an operator can act on:
 * pg's own errors name neither the setting nor, at times, the host ("SASL: SCRAM-SERVER-FIRST-
 * MESSAGE: client password must be a string", "getaddrinfo ENOTFOUND db"). The URL is shown
 * without its password; the original error is the cause.
 */
export function connectionProblem(err: unknown, url: string): Error {
  const e = (err ?? {}) as { code?: unknown; message?: unknown; errors?: { code?: unknown }[] };
  const code = typeof e.code === 'string' ? e.code : typeof e.errors?.[0]?.code === 'string' ? e.errors[0].code : '';
  const message = typeof e.message === 'string' ? e.message : String(err);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return new Error(`DATABASE_URL is not a valid URL: ${message}`, { cause: err });
  }
  const host = u.hostname || 'localhost';
  const port = u.port || '5432';
  const user = decodeURIComponent(u.username) || '(the system user)';
  const shown = `DATABASE_URL is ${withoutPassword(url)}`;
  let text: string;
  if (/client password must be a (non-empty )?string/.test(message) || (code === '28P01' && !u.password)) {
    const example = new URL(url);
    example.password = 'PASSWORD';
    text = `the PostgreSQL server at ${host}:${port} asks for a password for user "${user}", and DATABASE_URL has none: put it in DATABASE_URL, as in ${example.toString().replace('PASSWORD@', '<password>@')} (percent-encode special characters). ${shown}.`;
  } else if (code === '28P01') {
    text = `the PostgreSQL server at ${host}:${port} refused the password of user "${user}": correct it in DATABASE_URL. ${shown}.`;
  } else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    text = `the database host "${host}" in DATABASE_URL does not resolve (${code}): correct the host name in DATABASE_URL. ${shown}.`;
  } else if (code === 'ECONNREFUSED') {
    text = `no PostgreSQL server answers at ${host}:${port} (connection refused): start it, or correct the host and port in DATABASE_URL. ${shown}.`;
  } else if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH' || /timeout/i.test(message)) {
    text = `the PostgreSQL server at ${host}:${port} cannot be reached (${code || 'timeout'}): check the host and port in DATABASE_URL, and the network. ${shown}.`;
  } else if (code === '28000' || code === '3D000' || code === '42501') {
    text = `the PostgreSQL server at ${host}:${port} refused the connection: ${message}. ${shown}.`;
  } else {
    text = `cannot connect to the PostgreSQL server at ${host}:${port}: ${message}. ${shown}.`;
  }
  return new Error(text, { cause: err });
}

/**
 * Runs `work` again (up to 5 times, 50–250 ms apart) while PostgreSQL ends it for a deadlock:
 * for schema changes that processes starting together make together (pg-boss attaches a
 * partition of its job table for each queue it creates), where the loser only has to retry.
 */
export async function retryDeadlock<T>(work: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work();
    } catch (err) {
      if ((err as { code?: unknown }).code !== '40P01' || attempt === 5) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50 * attempt));
    }
  }
}
