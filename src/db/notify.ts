import pg from 'pg';
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

/**
 * A connection of its own for LISTEN, outside the pool: a pooled connection goes back to the
 * pool between statements, and its LISTEN with it.
 */
export function listeningConnection(url: string, applicationName: string): pg.Client {
  return new pg.Client({ connectionString: url, application_name: applicationName });
}
