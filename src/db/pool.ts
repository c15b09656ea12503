import pg from 'pg';
import { join, raw, sql, statement, type Sql, type Statement } from './sql.js';

/**
 * The process's one pool of database connections: MikroORM's.
 *
 * MikroORM 6 (on knex) owns the pool: its size, its timeouts, the `statement_timeout` of every
 * connection (src/db/orm.ts). The ORM's own queries (the entities' repositories) run on it, and
 * so does the hand-written SQL of the hot paths (reputation, blacklist, quotas, relay), which
 * needs what the ORM's `execute` does not give: PostgreSQL's `$n` placeholders, native array
 * parameters, named prepared statements (which a connection keeps for its life), streamed rows.
 * For that it borrows a connection through the public API of the ORM's connection:
 * `orm.em.getConnection().getKnex().client`'s `acquireConnection()` / `releaseConnection()`,
 * the calls knex itself makes around each query. Nothing of knex or pg is patched: the
 * connection lent is wrapped (`Connection` below), its pg client is left as knex made it.
 *
 * pg-boss, the relay's job queue, keeps a small pool of its own; the relay's LISTEN and the
 * migration lock take one connection each: all three on DATABASE_DIRECT_URL when DATABASE_URL
 * is a transaction pooler (connect.ts). The read replicas have a pool of their own (replicas.ts).
 *
 * MikroORM 7 replaces knex with Kysely (and needs Node 22.17+). The step then: `ormPool` takes
 * the ORM's `em.getKysely()` and lends one of its connections (`kysely.connection().execute(db =>
 * ...)`, a `CompiledQuery.raw(text, values)` carries `$n` SQL as it is). Kysely's pg driver sends
 * no statement names, so the hot paths' named statements then need the pg client under that
 * connection or are given up: measure /check both ways before choosing. The repositories see the
 * same `Pool` and `Connection` faces either way; only this file and `db/orm.ts` know what is
 * underneath.
 */
export interface Pool {
  query: Connection['query'];
  /** Lends one connection; `release(err)` with the error that broke it discards it. */
  connect(): Promise<Connection>;
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
}

/** One connection lent by the pool: pg's query, and back to the pool with `release`. */
export interface Connection {
  query: pg.ClientBase['query'];
  on(event: 'error', listener: (err: Error) => void): void;
  off(event: 'error', listener: (err: Error) => void): void;
  /** Back to the pool; with the error that broke it, closed instead of lent again. */
  release(err?: Error | boolean): void;
}
export type Queryable = Pool | Connection;

export type { Statement } from './sql.js';

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

/** The column readTogether tags each row with: the place of the read it answers among the reads of its name. */
const MEMBER = 'read:member';

/**
 * Runs many reads and returns each one's rows, in as few round trips as their kinds: the reads
 * of one name (one shape) go as one statement, each a branch of a `union all` tagged with its
 * place among them, so that a group of concurrent /check requests (Meter.chargeWith's groups) costs the
 * driver and PostgreSQL one statement, not one per request. Named per name and count, so that a
 * connection prepares each size once. Rows come back in no particular order within a read, as
 * `Read` promises.
 */
export async function readTogether(db: Queryable, reads: readonly NamedQuery[]): Promise<object[][]> {
  const answers: object[][] = reads.map(() => []);
  const byName = new Map<string, number[]>();
  reads.forEach((read, i) => {
    const members = byName.get(read.name);
    if (members) members.push(i);
    else byName.set(read.name, [i]);
  });
  for (const [name, members] of byName) {
    if (members.length === 1) {
      answers[members[0]!] = (await db.query(statement(name, reads[members[0]!]!.query))).rows;
      continue;
    }
    // Each branch is tagged with its place among the reads of this name (0 to count - 1), never
    // with its index among all the reads: the text must be the same for every group of this name
    // and count, or a connection that prepared one group's text refuses the next's under that name.
    // The tag is the last column; rows come as arrays and are made into objects without it (a
    // `delete` would turn each row into a dictionary, slower to read for the rest of its life).
    const branches = members.map((i, k) => sql`select r.*, ${raw(String(k))} as "${raw(MEMBER)}" from (${reads[i]!.query}) r`);
    const { rows, fields } = await db.query<unknown[]>({ ...statement(`${name}*${members.length}`, join(branches, ' union all ')), rowMode: 'array' });
    const names = fields.map((field) => field.name);
    const tag = names.length - 1;
    for (const values of rows) {
      const row: Record<string, unknown> = {};
      for (let j = 0; j < tag; j++) row[names[j]!] = values[j];
      answers[members[values[tag] as number]!]!.push(row);
    }
  }
  return answers;
}

// bigint counts and ids (int8) arrive as numbers: they stay far below 2^53 here.
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));

/**
 * What this module uses of the ORM's connection: knex's client, with the calls knex's own
 * runner makes to borrow and return a connection, and its pool's (tarn's) public counters.
 */
export interface OrmConnection {
  getKnex(): { client: KnexClient };
}
interface KnexClient {
  acquireConnection(): Promise<pg.Client>;
  releaseConnection(connection: pg.Client): Promise<unknown>;
  pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number } | null;
}

/**
 * The ORM's pool as a Pool. `prepared: false` drops statement names: the embedded PostgreSQL
 * multiplexes every client connection onto one session, where a name prepared by one
 * connection collides with the next.
 */
export function ormPool(connection: OrmConnection, options: { prepared?: boolean } = {}): Pool {
  const knexClient = () => connection.getKnex().client;
  const unnamed = options.prepared === false;
  const lend = async (): Promise<Connection> => {
    const client = await knexClient().acquireConnection();
    return new Lent(client, unnamed, knexClient());
  };
  const pool: Pool = {
    query: (async (config: unknown, values?: unknown) =>
      withClient(pool, (client) => (client.query as (c: unknown, v?: unknown) => Promise<pg.QueryResult>)(config, values))) as Pool['query'],
    connect: lend,
    get totalCount() {
      const tarn = knexClient().pool;
      return (tarn?.numUsed() ?? 0) + (tarn?.numFree() ?? 0);
    },
    get idleCount() {
      return knexClient().pool?.numFree() ?? 0;
    },
    get waitingCount() {
      return knexClient().pool?.numPendingAcquires() ?? 0;
    },
  };
  return pool;
}

/**
 * A connection lent by the ORM's pool. The ORM reads dates as text on its connections; plain
 * SQL reads them with pg's own types (Date objects, numbers for int8), given with each query
 * (a stream, such as pg-query-stream's, brings its own).
 */
class Lent implements Connection {
  declare query: Connection['query'];
  private released = false;

  constructor(
    readonly client: pg.Client,
    readonly unnamed: boolean,
    private readonly knex: KnexClient,
  ) {}

  on(event: 'error', listener: (err: Error) => void): void {
    this.client.on(event, listener);
  }

  off(event: 'error', listener: (err: Error) => void): void {
    this.client.off(event, listener);
  }

  release(err?: Error | boolean): void {
    if (this.released) return;
    this.released = true;
    // A connection that broke while lent is not handed out again: ending it makes knex's own
    // listener mark it, and the pool's validation discards it at the next acquire.
    if (err) void this.client.end().catch(() => undefined);
    void this.knex.releaseConnection(this.client);
  }
}
// One function on the prototype, not a closure per connection lent.
Lent.prototype.query = function query(this: Lent, config: unknown, values?: unknown, callback?: unknown) {
  const run = this.client.query as (...args: unknown[]) => unknown;
  if (typeof config === 'object' && config !== null && typeof (config as { submit?: unknown }).submit === 'function') {
    return run.call(this.client, config, values, callback);
  }
  const shaped: { text?: string; name?: string; types?: unknown; values?: unknown } =
    typeof config === 'string' ? { text: config, values } : { ...(config as object) };
  shaped.types ??= pg.types;
  if (this.unnamed) delete shaped.name;
  return typeof config === 'string' ? run.call(this.client, shaped, callback) : run.call(this.client, shaped, values, callback);
} as Connection['query'];

/**
 * Lends `work` one connection of the pool. A connection that dies while lent (the database
 * stops) fails the query under way; the error it also emits is caught here, not left to end the
 * process, and the broken connection is discarded instead of returned to the pool.
 */
export async function withClient<T>(pool: Pool, work: (client: Connection) => Promise<T>): Promise<T> {
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

/**
 * Takes the transaction-scoped advisory lock `key` if no other transaction holds it: false when
 * one does (scheduled work that one process at a time does, whichever takes the lock first).
 */
export async function tryTransactionLock(tx: Connection, key: number): Promise<boolean> {
  const { rows } = await tx.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [key]);
  return rows[0]!.locked;
}

/** Whether the database answers: one round trip (the readiness check). */
export async function ping(pool: Pool): Promise<void> {
  await pool.query('select 1');
}

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
export async function transaction<T>(pool: Pool, work: (client: Connection) => Promise<T>, options: { long?: boolean } = {}): Promise<T> {
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
