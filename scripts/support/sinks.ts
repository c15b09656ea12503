/**
 * Real peers of the relay on loopback, for the tests and the benchmarks: an SMTP server and an
 * HTTP SMS endpoint that keep what they receive, with the time it arrived.
 */
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';

/** A real SMTP server on loopback that keeps what it receives. */
export async function startSmtp(port = 0) {
  const received: { raw: string; mail: ParsedMail; envelopeTo: string[]; at: number }[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', async () => {
        const at = Date.now();
        const raw = Buffer.concat(chunks).toString('utf8');
        received.push({ raw, mail: await simpleParser(raw), envelopeTo: session.envelope.rcptTo.map((r) => r.address), at });
        callback();
      });
    },
  });
  server.listen(port, '127.0.0.1');
  await once(server.server, 'listening');
  const bound = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${bound}`,
    port: bound,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        // Ends pooled client connections too, as a stopped mail server does.
        for (const connection of (server as unknown as { connections: Set<{ close(): void }> }).connections ?? []) connection.close();
        server.close(() => resolve());
      }),
  };
}

/** An HTTP SMS provider on loopback: records requests, answers 200 or the statuses queued up. */
export async function startSmsProvider(options: { port?: number; delayMs?: number } = {}) {
  const requests: { headers: IncomingHttpHeaders; body: any; at: number }[] = [];
  const failures: number[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answer = () => {
        requests.push({ headers: req.headers, body: JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}'), at: Date.now() });
        const status = failures.shift() ?? 200;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status === 200 ? { id: `sms-${requests.length}` } : { error: 'provider failure' }));
      };
      if (options.delayMs) setTimeout(answer, options.delayMs);
      else answer();
    });
  });
  server.listen(options.port ?? 0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/messages`,
    port: (server.address() as AddressInfo).port,
    token: 'provider-token',
    requests,
    /** The next `count` requests are answered with `status`. */
    fail(count: number, status = 503) {
      for (let i = 0; i < count; i++) failures.push(status);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
