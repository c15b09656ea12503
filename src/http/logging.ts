import { randomUUID } from 'node:crypto';
import { IncomingMessage, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { redactUrl } from '../logging.js';
import { whenAnswered } from './answered.js';

const REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

declare module 'node:http' {
  interface IncomingMessage {
    /** The request id: the caller's `X-Request-Id` when it is sane, else a new UUID. */
    id?: string;
    /** A logger whose every line carries the request id (made on first use). */
    log?: Logger;
  }
}

/** Where a request keeps the logger it was given, and its child logger once one is made. */
const BASE = Symbol('request logger');
const CHILD = Symbol('request child logger');
type Logged = IncomingMessage & { [BASE]?: Logger; [CHILD]?: Logger };

// `req.log`, made on first use from the logger the request was given. A getter on the prototype,
// once: a property defined on each request (as this was) changed the shape of every request
// object, which cost each request's later property reads too.
Object.defineProperty(IncomingMessage.prototype, 'log', {
  configurable: true,
  get(this: Logged): Logger | undefined {
    const base = this[BASE];
    return base && (this[CHILD] ??= base.child({ reqId: this.id }));
  },
});

/**
 * Request logging: every response carries an `X-Request-Id`, every log line about a request
 * carries it as `reqId`, and one line per request records method, URL (the key redacted),
 * status and time, at `info` (`error` for 5xx). No headers are logged. The per-request logger
 * is only made when something logs, so a quiet production log costs almost nothing.
 */
export function requestLogger(logger: Logger) {
  return (req: IncomingMessage, res: ServerResponse, next: () => void) => {
    const incoming = req.headers['x-request-id'];
    const id = typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    req.id = id;
    res.setHeader('X-Request-Id', id);
    (req as Logged)[BASE] = logger;
    const started = performance.now();
    whenAnswered(res, () => {
      const level = res.statusCode >= 500 ? 'error' : 'info';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          reqId: id,
          req: { method: req.method, url: redactUrl((req as { originalUrl?: string }).originalUrl ?? req.url), remoteAddress: req.socket.remoteAddress },
          res: { statusCode: res.statusCode },
          responseTime: Math.round(performance.now() - started),
        },
        'request completed',
      );
    });
    next();
  };
}
