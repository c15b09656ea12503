import type pg from 'pg';
import type { Queryable } from './pool.js';

/**
 * PostgreSQL's LISTEN/NOTIFY, as the relay's queue uses it to wake the workers of every process
 * (src/relay/queue.ts). A notification sent in a transaction leaves when it commits, and never
 * if it rolls back.
 */
export async function notify(db: Queryable, channel: string, payload: string): Promise<void> {
  await db.query('select pg_notify($1, $2)', [channel, payload]);
}

/** Listens on `channel` (an identifier of the code's own, never input) on a connection of its own. */
export async function listen(client: pg.Client, channel: string): Promise<void> {
  await client.query(`listen ${client.escapeIdentifier(channel)}`);
}
