import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type RequestListener, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A provider's API faked on loopback: records every request (and every TCP connection, to see
 * keep-alive at work) and answers with `respond`, which a test replaces as it needs.
 */
export async function startHttpFake() {
  const requests: RecordedRequest[] = [];
  const stub: { respond: RequestListener } = { respond: (_req, res) => res.end() };
  let connections = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      stub.respond(req, res);
    });
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    stub,
    last: () => requests.at(-1)!,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port on loopback that nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export const answer =
  (status: number, body: string | object = '', headers: Record<string, string> = {}): RequestListener =>
  (_req, res: ServerResponse) => {
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const type = typeof body === 'string' ? {} : { 'Content-Type': 'application/json' };
    res.writeHead(status, { ...type, ...headers }).end(text);
  };

/** Never answers: the client's timeout has to end the request. */
export const silence: RequestListener = () => undefined;
