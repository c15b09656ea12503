import { createServer } from 'node:net';

/**
 * Whether the server could listen on `host`:`port`, tried by listening there for a moment: a
 * sentence saying what is wrong and what to do, or undefined. Port 0 (any free port) always can.
 */
export async function portProblem(host: string, port: number): Promise<string | undefined> {
  if (port === 0) return undefined;
  const probe = createServer();
  const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    probe.once('error', resolve);
    probe.listen({ host, port, exclusive: true }, () => resolve(undefined));
  });
  if (!error) {
    await new Promise((resolve) => probe.close(resolve));
    return undefined;
  }
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (error.code) {
    case 'EADDRINUSE':
      return `${where} is already in use (another server, or this one still running): stop it, or set PORT (and HOST) to a free one.`;
    case 'EACCES':
      return `this user may not listen on ${where} (ports below 1024 need privileges): set PORT to 1024 or above, or run behind a reverse proxy.`;
    case 'EADDRNOTAVAIL':
      return `HOST ${host} is no address of this machine: set HOST to one of its addresses, or 0.0.0.0 (all of them).`;
    default:
      return `cannot listen on ${where}: ${error.message}`;
  }
}
