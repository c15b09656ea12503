import { types } from 'node:util';
import pino, { type Logger } from 'pino';

/**
 * Anything shaped like an API key or a bouncer key (`trs_` or `trsb_` and at least 16 more key
 * characters; the 8 shown in listings are not secret). Matched by value, wherever it stands, so
 * that neither a renamed, percent-encoded or repeated parameter nor a header nor a message
 * carries a key into a log.
 */
export const KEY_LIKE = /trsb?_[A-Za-z0-9_-]{16,}/gi;
const REDACTED = '[redacted]';

/** Decodes percent-escapes (repeatedly, so double encoding hides nothing); bad escapes stay. */
function decodeLoosely(text: string): string {
  let current = text.replace(/\+/g, ' ');
  for (let round = 0; round < 3 && current.includes('%'); round++) {
    const next = current.replace(/(%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
    if (next === current) break;
    current = next;
  }
  return current;
}

const looksSecret = (decoded: string) => decoded.search(KEY_LIKE) >= 0;

/** Query parameters that carry secrets: API keys, and the one-time tokens of account links and invites. */
const SECRET_PARAMS = new Set(['key', 'token', 'invite']);

/**
 * A URL fit for a log line: every query parameter named `key`, `token` or `invite` in any case
 * or encoding, and every part that decodes to something key-shaped, is replaced with `[redacted]`.
 */
export function redactUrl(url: string | undefined): string | undefined {
  if (!url) return url;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  const safePath = looksSecret(decodeLoosely(path)) ? decodeLoosely(path).replace(KEY_LIKE, REDACTED) : path;
  if (q < 0) return safePath;
  const query = url
    .slice(q + 1)
    .split('&')
    .map((pair) => {
      const eq = pair.indexOf('=');
      const name = eq < 0 ? pair : pair.slice(0, eq);
      const value = eq < 0 ? '' : pair.slice(eq + 1);
      const decodedName = decodeLoosely(name);
      if (SECRET_PARAMS.has(decodedName.trim().toLowerCase()) || looksSecret(decodeLoosely(value))) return `${looksSecret(decodedName) ? REDACTED : name}=${REDACTED}`;
      return looksSecret(decodedName) ? `${REDACTED}=${value}` : pair;
    })
    .join('&');
  return `${safePath}?${query}`;
}

/** The last line of defence: a key-shaped string in any serialised log line is replaced. */
export function redactLine(line: string): string {
  return line.replace(KEY_LIKE, REDACTED);
}

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino(
    {
      level,
      serializers: { err: serializeError },
      // Belt and braces: whatever else gets logged, a key header never prints; session cookies,
      // link tokens and passwords neither, should a header or a form ever be logged.
      redact: {
        // X-Key, AbuseIPDB's Key and CrowdSec bouncers' X-Api-Key.
        paths: ['req.headers["x-key"]', 'headers["x-key"]', 'req.headers.key', 'req.headers["x-api-key"]', 'headers["x-api-key"]', 'req.headers.cookie', 'headers.cookie', 'res.headers["set-cookie"]', 'key', '*.key', 'token', '*.token', 'password', '*.password'],
        censor: REDACTED,
      },
      hooks: { streamWrite: redactLine },
    },
    // Written synchronously: pino's default asynchronous stdout let a process that exits right
    // after logging print its last line before earlier ones ("stopped" before "stopping").
    // A line a request costs one write call, small beside the request.
    destination ?? pino.destination({ dest: 1, sync: true }),
  );
}

/** What a log line keeps of an error: never a client, pool or socket object hanging off it. */
interface LoggedError {
  type: string;
  message: string;
  code?: string;
  stack?: string;
  detail?: string;
  cause?: LoggedError;
}

/** The fields of a pg or Node error worth a log line, as strings. */
const ERROR_FIELDS = ['code', 'errno', 'syscall', 'severity', 'detail', 'hint', 'routine'] as const;

export function serializeError(err: unknown, depth = 0): LoggedError | unknown {
  // isNativeError also knows an Error made in another realm (a vm context, as test runners use).
  if (!(err instanceof Error || types.isNativeError(err))) return typeof err === 'object' ? { type: 'non-error', message: String(err) } : err;
  const out: LoggedError & Record<string, unknown> = { type: err.constructor?.name ?? err.name, message: err.message, stack: err.stack };
  for (const field of ERROR_FIELDS) {
    const value = (err as unknown as Record<string, unknown>)[field];
    if (typeof value === 'string' || typeof value === 'number') out[field] = String(value);
  }
  if (err.cause !== undefined && depth < 2) out.cause = serializeError(err.cause, depth + 1) as LoggedError;
  return out;
}

/**
 * One log line per incident, not one per failing connection or request: the first error of a
 * kind (component and code) is logged; the same again within `windowMs` is counted, and the
 * count goes with the next line logged after the window.
 */
export function incidentLogger(logger: Logger, windowMs = 30_000, now: () => number = Date.now) {
  const seen = new Map<string, { until: number; suppressed: number }>();
  /** `kind`: what makes errors one incident, when not their code (e.g. any database outage). */
  return (level: 'warn' | 'error', component: string, err: unknown, message: string, kind?: string) => {
    const code = (err as { code?: unknown })?.code;
    const key = `${component}|${kind ?? (typeof code === 'string' ? code : (err as Error)?.message ?? '')}`;
    const at = now();
    const entry = seen.get(key);
    if (entry && entry.until > at) {
      entry.suppressed++;
      return;
    }
    seen.set(key, { until: at + windowMs, suppressed: 0 });
    if (seen.size > 1_000) seen.clear();
    logger[level]({ component, err, ...(entry?.suppressed ? { repeated: entry.suppressed } : {}) }, message);
  };
}
