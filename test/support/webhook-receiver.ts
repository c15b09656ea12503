import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingHttpHeaders;
  body: string;
  path: string;
}

/**
 * A real local HTTP receiver of webhooks on 127.0.0.1: it records every request and answers
 * with the next status of `answers` (the last one repeated), optionally with a Location.
 */
export async function startReceiver(answers: number[] = [204], location?: string) {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' });
      const status = answers.length > 1 ? answers.shift()! : answers[0]!;
      if (location) res.setHeader('Location', location);
      res.statusCode = status;
      res.end(status >= 300 && status < 400 ? '' : 'ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answers,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
