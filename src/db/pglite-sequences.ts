import type { PGlite } from '@electric-sql/pglite';
import type { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * pglite-socket serves every client connection from PGlite's one session, passing on one
 * protocol message at a time, from whichever connection is next in its queue. Inside a
 * transaction it keeps to the connection that opened it; outside one it does not, so the
 * messages of two connections' extended queries interleave (Parse of one, Parse of the other,
 * then Bind of the first against the second's statement): "bind message supplies 3 parameters,
 * but prepared statement "" requires 2", under any concurrency (the relay's parallel deliveries
 * showed it). Here a connection also keeps the session from its Parse to its Sync, as inside a
 * transaction, which is what one session serving several clients needs.
 *
 * The queue is an internal of pglite-socket (pinned at an exact version in package.json); the
 * replacement keeps its fields and behaviour, adding only that rule, and a test holds it.
 */
interface QueuedMessage {
  handlerId: number;
  message: Uint8Array;
  resolve(bytes: number): void;
  reject(err: unknown): void;
  onData(data: Uint8Array): void;
}

interface QueryQueue {
  queue: QueuedMessage[];
  processing: boolean;
  lastHandlerId: number | null;
  db: PGlite;
  processQueue(): Promise<void>;
  clearQueueForHandler(handlerId: number): void;
}

/** Frontend messages that end an exchange: Sync, a simple Query, Terminate. */
const ENDS_EXCHANGE = new Set(['S', 'Q', 'X'].map((c) => c.charCodeAt(0)));
/** Frontend messages of an extended query, answered only once a Sync or Flush follows. */
const EXTENDED = new Set(['P', 'B', 'D', 'E', 'C', 'H'].map((c) => c.charCodeAt(0)));

export function keepExtendedQueriesTogether(server: PGLiteSocketServer): void {
  const queue = (server as unknown as { queryQueue?: QueryQueue }).queryQueue;
  if (!queue || typeof queue.processQueue !== 'function' || !Array.isArray(queue.queue)) {
    throw new Error('pglite-socket changed: its query queue is not the one src/db/pglite-sequences.ts was written for');
  }
  /** The connection that is between a Parse and its Sync, if any. */
  let midExchange: number | null = null;

  queue.processQueue = async function processQueue(this: QueryQueue): Promise<void> {
    if (this.processing || this.queue.length === 0) return;
    this.processing = true;
    try {
      while (this.queue.length > 0) {
        const owner = midExchange ?? (this.db.isInTransaction() ? this.lastHandlerId : null);
        const index = owner === null ? 0 : this.queue.findIndex((q) => q.handlerId === owner);
        // The owner's next message has not come yet: it is queued when it does, and processes.
        if (index === -1) break;
        const item = this.queue.splice(index, 1)[0]!;
        const type = item.message[0] ?? 0;
        let bytes = 0;
        try {
          await this.db.runExclusive(() =>
            this.db.execProtocolRawStream(item.message, {
              onRawData: (data: Uint8Array) => {
                bytes += data.length;
                item.onData(data);
              },
            }),
          );
        } catch (err) {
          midExchange = null;
          item.reject(err);
          continue;
        }
        if (EXTENDED.has(type)) midExchange = item.handlerId;
        else if (ENDS_EXCHANGE.has(type)) midExchange = null;
        this.lastHandlerId = item.handlerId;
        item.resolve(bytes);
      }
    } finally {
      this.processing = false;
    }
  };

  // A connection that goes away in the middle of an exchange releases the session.
  const clear = queue.clearQueueForHandler.bind(queue);
  queue.clearQueueForHandler = (handlerId: number) => {
    if (midExchange === handlerId) midExchange = null;
    clear(handlerId);
  };
}
