import type { Server } from 'node:http';
import type { NextFunction, Request, Response } from 'express';

/**
 * The stop of a server process without a failed request. On SIGTERM:
 *
 * 1. `/readyz` answers 503 at once, so that a load balancer stops routing to this process, and
 *    every response carries `Connection: close`, so that each client closes its keep-alive
 *    connection after the answer it is waiting for and opens its next one elsewhere;
 * 2. the process keeps serving for the drain period (at least a health-check interval);
 * 3. then it stops accepting, finishes the requests in flight, and closes each connection as
 *    soon as it is idle.
 *
 * A connection kept open by a client through the whole drain without sending anything is
 * closed at step 3, as keep-alive timeouts close them at any time.
 */
export class Drain {
  private started = false;
  private readonly pending: (() => Promise<void>)[] = [];

  get draining(): boolean {
    return this.started;
  }

  begin(): void {
    this.started = true;
  }

  /** Work held back in memory (POST /report's group commit) that the stop finishes before the database closes. */
  onStop(finish: () => Promise<void>): void {
    this.pending.push(finish);
  }

  /** Finishes the work registered with onStop: after the HTTP server is closed, before the database. */
  async finish(): Promise<void> {
    await Promise.all(this.pending.map((finish) => finish()));
  }

  /** Marks every response of a draining process `Connection: close`. */
  middleware() {
    return (_req: Request, res: Response, next: NextFunction) => {
      if (this.started) res.setHeader('Connection', 'close');
      next();
    };
  }

  /** Stops accepting and resolves once every in-flight request is answered and its connection closed. */
  async close(server: Server): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Connections that are idle now close at once; the others close after their answer (it
    // carries Connection: close). Check again until the server reports all closed.
    const sweep = setInterval(() => server.closeIdleConnections(), 100);
    server.closeIdleConnections();
    try {
      await closed;
    } finally {
      clearInterval(sweep);
    }
  }
}
