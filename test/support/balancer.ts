import { once } from 'node:events';
import { Agent, createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A small HTTP load balancer for tests, behaving as nginx or an ELB does by default: it polls
 * each backend's `/readyz` and routes only to the ready ones (out after two failed checks), keeps upstream connections alive
 * (closing idle ones before the backends' keep-alive timeout does), and retries an idempotent
 * request once on another backend when the upstream connection fails before any answer.
 */
export async function startBalancer(backends: string[], options: { healthIntervalMs?: number; upstreamIdleMs?: number } = {}) {
  const ready = new Set<string>(backends);
  const agents = new Map(backends.map((b) => [b, new Agent({ keepAlive: true, timeout: options.upstreamIdleMs ?? 4_000 })]));
  let next = 0;
  const stats = { forwarded: 0, retried: 0, failed: 0 };

  // Like nginx's max_fails or an ELB's unhealthy threshold, a backend leaves after two failed
  // checks in a row, so that one slow answer on a loaded machine does not empty the pool.
  const failedChecks = new Map(backends.map((b) => [b, 0]));
  const checked = (backend: string, ok: boolean) => {
    const failed = ok ? 0 : failedChecks.get(backend)! + 1;
    failedChecks.set(backend, failed);
    if (ok) ready.add(backend);
    else if (failed >= 2) ready.delete(backend);
  };
  const poll = setInterval(() => {
    for (const backend of backends) {
      fetch(`${backend}/readyz`, { signal: AbortSignal.timeout(1_000) })
        .then((res) => checked(backend, res.status === 200))
        .catch(() => checked(backend, false));
    }
  }, options.healthIntervalMs ?? 100);

  const pick = (exclude?: string) => {
    const candidates = [...ready].filter((b) => b !== exclude);
    if (candidates.length === 0) return undefined;
    return candidates[next++ % candidates.length];
  };

  const forward = (req: IncomingMessage, res: ServerResponse, body: Buffer, backend: string | undefined, attempt: number) => {
    if (!backend) {
      stats.failed++;
      res.writeHead(503, { 'content-type': 'text/plain' }).end('no backend ready\n');
      return;
    }
    const url = new URL(backend);
    const headers = { ...req.headers, host: url.host };
    delete headers.connection;
    const upstream = request({ host: url.hostname, port: url.port, method: req.method, path: req.url, headers, agent: agents.get(backend) }, (answer) => {
      stats.forwarded++;
      const out = { ...answer.headers };
      delete out.connection; // the client's connection to the balancer stays its own
      delete out['keep-alive'];
      res.writeHead(answer.statusCode ?? 502, out);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (res.headersSent) return res.destroy();
      const idempotent = req.method === 'GET' || req.method === 'HEAD';
      if (idempotent && attempt === 0) {
        stats.retried++;
        forward(req, res, body, pick(backend) ?? backend, 1);
        return;
      }
      stats.failed++;
      res.writeHead(502, { 'content-type': 'text/plain' }).end('upstream failed\n');
    });
    upstream.end(body);
  };

  const server = createServer({ keepAliveTimeout: 10_000 }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => forward(req, res, Buffer.concat(chunks), pick(), 0));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    stats,
    ready: () => [...ready],
    async close() {
      clearInterval(poll);
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      for (const agent of agents.values()) agent.destroy();
    },
  };
}
