import pg from 'pg';

/**
 * The plain pg pool for the hot paths (authentication, quota charges, lookups, report writes):
 * plain rows instead of hydrated entities, native array parameters, named prepared statements.
 * MikroORM keeps the entities, migrations and administration.
 */
export type Pool = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

// bigint counts and ids (int8) arrive as numbers: they stay far below 2^53 here.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * `prepared: false` drops statement names: the embedded PostgreSQL multiplexes every client
 * connection onto one session, where a name prepared by one connection collides with the next.
 */
export function createPool(
  url: string,
  max: number,
  options: { prepared?: boolean; onError?: (err: Error) => void } = {},
): Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    // A dead database must fail requests fast (503), not hang them.
    connectionTimeoutMillis: 5_000,
    statement_timeout: 15_000,
    idleTimeoutMillis: 30_000,
  });
  // An idle connection that dies (the database restarts) is dropped and replaced on demand;
  // without a listener its error would end the process.
  pool.on('error', (err) => options.onError?.(err));
  if (options.prepared === false) {
    // Every connection, whether lent for a transaction or used by pool.query, drops the name.
    pool.on('connect', (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      client.query = ((config: unknown, ...rest: unknown[]) =>
        query(typeof config === 'object' && config !== null && 'name' in config ? { ...config, name: undefined } : config, ...rest)) as typeof client.query;
    });
  }
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

/** Runs `work` in a transaction on one connection; rolls back when it throws. */
export async function transaction<T>(pool: Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  return withClient(pool, async (client) => {
    try {
      await client.query('begin');
      const result = await work(client);
      await client.query('commit');
      return result;
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    }
  });
}
