import { createServer, type RequestListener, type Server } from 'node:http';

/** Limits that keep slow or idle clients from holding connections (slowloris). */
export const SERVER_TIMEOUTS = {
  /** All request headers must arrive within this time. */
  headersMs: 10_000,
  /** The whole request, body included, within this time. */
  requestMs: 30_000,
  /** An idle keep-alive connection is closed after this time. */
  keepAliveMs: 5_000,
};

/** The HTTP server of the app, with the timeouts above (shared by the process entry and tests). */
export function createHttpServer(app: RequestListener, timeouts = SERVER_TIMEOUTS): Server {
  // Node checks the header and request timeouts on this interval (30 s by default).
  const server = createServer({ connectionsCheckingInterval: Math.min(1_000, timeouts.headersMs / 2) }, app);
  server.headersTimeout = timeouts.headersMs;
  server.requestTimeout = timeouts.requestMs;
  server.keepAliveTimeout = timeouts.keepAliveMs;
  return server;
}
