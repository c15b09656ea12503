import pg from 'pg';
import { statement, type Sql } from './sql.js';

/**
 * The process's one pool of database connections is the ORM's (MikroORM's knex pool). Hand-
 * written SQL inside the repositories runs on the same connections through this face of it,
 * shaped like pg's Pool: plain rows, native array parameters, named prepared statements (which
 * a connection keeps for its life). pg-boss, the relay's job queue, keeps a small pool of its own.
 */
export interface Pool {
  query: pg.Pool['query'];
  /** Lends one connection; `release(err)` with the error that broke it discards it. */
  connect(): Promise<pg.PoolClient>;
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}
export type Queryable = Pool | pg.PoolClient;

/** A named statement, prepared once per connection. */
export interface Statement {
  name: string;
  text: string;
  values: unknown[];
}

/**
 * A read the caller names and writes with the SQL builder (db/sql.ts), so that another statement
 * can embed it: its parameters are numbered where it lands.
 */
export interface NamedQuery {
  name: string;
  query: Sql;
}

/**
 * Runs a read and returns its rows: the pool's `query`, or a charge's (Meter.chargeWith) that
 * runs it in the statement that charges the request, in one round trip.
 */
export type Read = <R extends object>(read: NamedQuery) => Promise<R[]>;

/** The plain Read of a pool or connection. */
export function readerOf(db: Queryable): Read {
  return async <R extends object>(read: NamedQuery) => (await db.query<R & pg.QueryResultRow>(statement(read.name, read.query))).rows;
}

// bigint counts and ids (int8) arrive as numbers: they stay far below 2^53 here.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/** What this module needs of knex's client and its pool (tarn). */
interface KnexClient {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<void>;
  pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number };
}

/**
 * The ORM's pool as a Pool. `prepared: false` drops statement names: the embedded PostgreSQL
 * multiplexes every client connection onto one session, where a name prepared by one
 * connection collides with the next.
 */
export function ormPool(knexClient: KnexClient, options: { prepared?: boolean } = {}): Pool {
  const unnamed = options.prepared === false;
  const lend = async (): Promise<pg.PoolClient> => {
    const client = (await knexClient.acquireConnection()) as pg.Client & Partial<pg.PoolClient> & { __knex__disposed?: unknown; __trsQuery?: unknown };
    if (!client.__trsQuery) {
      // The ORM reads dates as text on its connections; plain SQL reads them with pg's own types
      // (Date objects, numbers for int8), given with each query. A stream brings its own.
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.__trsQuery = query;
      client.query = ((config: unknown, ...rest: unknown[]) => {
        if (typeof config === 'object' && config !== null && typeof (config as { submit?: unknown }).submit === 'function') return query(config, ...rest);
        const shaped = typeof config === 'string' ? { text: config, values: rest.shift() } : { ...(config as object) };
        const named = shaped as { name?: string; types?: unknown };
        named.types ??= pg.types;
        if (unnamed) delete named.name;
        return query(shaped, ...rest);
      }) as typeof client.query;
    }
    client.release = (err?: Error | boolean) => {
      // A connection that broke while lent is discarded, not handed out again.
      if (err) client.__knex__disposed = err;
      void knexClient.releaseConnection(client);
    };
    return client as pg.PoolClient;
  };
  const pool: Pool = {
    query: (async (config: unknown, values?: unknown) =>
      withClient(pool, (client) => (client.query as (c: unknown, v?: unknown) => Promise<pg.QueryResult>)(config, values))) as Pool['query'],
    connect: lend,
    get totalCount() {
      return (knexClient.pool?.numUsed() ?? 0) + (knexClient.pool?.numFree() ?? 0);
    },
    get idleCount() {
      return knexClient.pool?.numFree() ?? 0;
    },
    get waitingCount() {
      return knexClient.pool?.numPendingAcquires() ?? 0;
    },
  };
  return pool;
}

/**
 * Lends `work` one connection of the pool. A connection that dies while lent (the database
 * stops) fails the query under way; the error it also emits is caught here, not left to end the
 * process, and the broken connection is discarded instead of returned to the pool.
 */
export async function withClient<T>(pool: Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (err: Error) => (broken = err);
  client.on('error', onError);
  try {
    return await work(client);
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
}

/** Whether the database answers: one round trip (the readiness check). */
export async function ping(pool: Pool): Promise<void> {
  await pool.query('select 1');
}

/** Runs `work` in a transaction on one connection; rolls back when it throws. */
/**
 * Statements on the pool's connections are cut off after this (`statement_timeout`): a request
 * never waits on a runaway statement. Work over whole tables (the blacklist's regeneration, the
 * purge, migrations and backfills) lifts it for its own transaction or connection: see
 * `transaction(…, { long: true })` and `UNBOUNDED`.
 */
export const STATEMENT_TIMEOUT_MS = 15_000;
/** Lifts the statement timeout for the rest of a transaction. */
export const UNBOUNDED = 'set local statement_timeout = 0';

/**
 * Runs `work` in a transaction on one connection. `long`: work over whole tables, which may run
 * longer than a request's statement timeout allows (see STATEMENT_TIMEOUT_MS).
 */
export async function transaction<T>(pool: Pool, work: (client: pg.PoolClient) => Promise<T>, options: { long?: boolean } = {}): Promise<T> {
  return withClient(pool, async (client) => {
    try {
      await client.query('begin');
      if (options.long) await client.query(UNBOUNDED);
      const result = await work(client);
      await client.query('commit');
      return result;
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    }
  });
}
