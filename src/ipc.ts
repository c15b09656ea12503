import cluster from 'node:cluster';

/**
 * What a server process started with an IPC channel (by a Node parent: the tests, the
 * benchmarks) sends it once it listens: `{type: 'trs:listening', port}`. A parent that gives
 * PORT=0 learns the port the system chose, so it never needs a fixed one, nor can anything else
 * answer in the server's place. Without a channel (npm, a shell, systemd) nothing is sent.
 */
export const LISTENING_MESSAGE = 'trs:listening';

/** Tells the parent, if any, the port this process (or, under WORKERS, its workers) listens on. */
export function announceListening(port: number): void {
  if (cluster.isPrimary && process.send && process.connected) process.send({ type: LISTENING_MESSAGE, port });
}
