import { once } from 'node:events';
import { createServer, connect, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL, for fault tests: `cut()` acts as a database that stops
 * (every connection dropped, new ones refused), `restore()` as one that starts again. Also a
 * way into a test server from another network namespace (`listenHost`).
 */
export async function startTcpProxy(targetHost: string, targetPort: number, listenHost = '127.0.0.1') {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  let port = 0;
  const listen = async () => {
    server = createServer((client) => {
      const upstream = connect(targetPort, targetHost);
      for (const s of [client, upstream]) {
        sockets.add(s);
        s.on('close', () => sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    server.listen(port, listenHost);
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  };
  await listen();
  return {
    get port() {
      return port;
    },
    /** Drops every connection and refuses new ones. */
    async cut() {
      const closing = new Promise<void>((resolve) => server!.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closing;
    },
    restore: listen,
    /** New connections go to `port` instead (a failover: the endpoint moved to the new primary). */
    retarget(newPort: number) {
      targetPort = newPort;
    },
    close: async function () {
      await this.cut();
    },
  };
}
