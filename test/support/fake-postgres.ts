import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';

/** A message of PostgreSQL's protocol: its type byte, its length, its body. */
const message = (type: string, body: Buffer) => {
  const head = Buffer.alloc(5);
  head.write(type, 0, 'latin1');
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
};
const int32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
};

/**
 * A stand-in for a PostgreSQL server that asks every client for a password (SCRAM-SHA-256, as
 * PostgreSQL 14+ does by default): it answers the startup with AuthenticationSASL and the
 * client's first SCRAM message with a server-first message, as PostgreSQL does, so a client
 * without a password fails where it would against the real server. It goes no further.
 */
export async function startPasswordAskingPostgres(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let buffer = Buffer.alloc(0);
    let started = false;
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!started) {
        if (buffer.length < 8 || buffer.length < buffer.readInt32BE(0)) return;
        const code = buffer.readInt32BE(4);
        buffer = buffer.subarray(buffer.readInt32BE(0));
        if (code === 80877103) return void socket.write('N'); // SSLRequest: no TLS here
        started = true;
        socket.write(message('R', Buffer.concat([int32(10), Buffer.from('SCRAM-SHA-256\0\0', 'latin1')])));
        return;
      }
      if (buffer.length < 5 || buffer.length < buffer.readInt32BE(1) + 1) return;
      const body = buffer.subarray(5, buffer.readInt32BE(1) + 1).toString('latin1');
      buffer = Buffer.alloc(0);
      const nonce = /r=([^,\0]+)/.exec(body)?.[1] ?? '';
      const serverFirst = `r=${nonce}c2VydmVybm9uY2U,s=${Buffer.from('saltsaltsalt').toString('base64')},i=4096`;
      socket.write(message('R', Buffer.concat([int32(11), Buffer.from(serverFirst, 'latin1')])));
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as { port: number }).port,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
