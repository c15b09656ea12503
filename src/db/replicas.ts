import pg from 'pg';
import type { Logger } from 'pino';
import { incidentLogger } from '../logging.js';
import { STATEMENT_TIMEOUT_MS, type Connection, type Pool } from './pool.js';

/**
 * The read replicas (DATABASE_REPLICA_URL): a Pool for the reads that tolerate replication lag
 * (blacklist downloads and deltas, statistics, trends, search, the attack map, bouncers' pulls),
 * spread over the replicas in turn. Everything that writes, charges or must see its own write
 * uses the primary's pool, never this one.
 *
 * A replica that cannot be reached (refused, reset, shut down, in recovery conflict) is set
 * aside for RETRY_MS and the read goes to the primary instead, so its failure costs the caller
 * nothing but the primary's load; after RETRY_MS the next read tries it again. An error of the
 * statement itself (a syntax error, a bad parameter) is the caller's and is not retried. A stream
 * that breaks while it is read (the replica dies mid-download) fails like one on the primary.
 */
export interface ReplicaPool extends Pool {
  /**
   * Reads the replicas answered; reads the primary answered for a replica that failed
   * (`fallback`), or for one that had not replayed what the read needs yet (`behind`).
   */
  readonly counts: { replica: number; fallback: number; behind: number };
  /**
   * A connection to a replica that has replayed what the read needs (`check`: one row whose
   * `ok` is true there), else the primary's: for a read that must see a write the caller knows
   * of (a blacklist snapshot the primary named). The check runs on the connection lent, so the
   * read sees at least what the check saw.
   */
  connectWhere(check: { text: string; values: unknown[] }): Promise<Connection>;
  close(): Promise<void>;
}

export interface ReplicaOptions {
  urls: string[];
  /** Connections per replica. */
  poolMax: number;
  /** Named prepared statements and the statement timeout's startup parameter may be sent (false behind a transaction pooler). */
  prepared: boolean;
  /** The primary's pool, which answers when no replica can. */
  primary: Pool;
  logger: Logger;
  /** How long a failed replica is left alone before it is tried again. */
  retryMs?: number;
}

/** A replica that failed is tried again after this. */
export const REPLICA_RETRY_MS = 5_000;

/** SQLSTATE classes that say the replica (not the statement) failed. */
function replicaFailed(err: unknown): boolean {
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'string' || !/^[0-9A-Z]{5}$/.test(code)) return true; // ECONNREFUSED, ECONNRESET, timeouts
  // 08: connection exception; 57P: shutdown, crash; 53: out of resources; 40001: recovery conflict.
  return code.startsWith('08') || code.startsWith('57P') || code.startsWith('53') || code === '40001';
}

interface Replica {
  url: string;
  pool: pg.Pool;
  downUntil: number;
}

export function replicaPool(options: ReplicaOptions): ReplicaPool {
  const retryMs = options.retryMs ?? REPLICA_RETRY_MS;
  const incident = incidentLogger(options.logger);
  const replicas: Replica[] = options.urls.map((url) => {
    const pool = new pg.Pool({
      connectionString: url,
      max: options.poolMax,
      connectionTimeoutMillis: 2_000,
      idleTimeoutMillis: 30_000,
      // Behind a transaction pooler no startup parameter but the pooler's own (as for the primary's pool).
      ...(options.prepared ? { statement_timeout: STATEMENT_TIMEOUT_MS } : {}),
      application_name: 'trs-replica',
    });
    // An idle connection that dies (the replica stops) must not end the process.
    pool.on('error', (err) => incident('warn', 'db-replica', err, 'a replica connection failed; it will be replaced'));
    return { url, pool, downUntil: 0 };
  });
  const counts = { replica: 0, fallback: 0, behind: 0 };
  let next = 0;
  const pick = (): Replica | undefined => {
    const now = Date.now();
    for (let i = 0; i < replicas.length; i++) {
      const replica = replicas[(next + i) % replicas.length]!;
      if (replica.downUntil <= now) {
        next = (next + i + 1) % replicas.length;
        return replica;
      }
    }
    return undefined;
  };
  const setAside = (replica: Replica, err: unknown) => {
    replica.downUntil = Date.now() + retryMs;
    const where = new URL(replica.url);
    incident('warn', 'db-replica', err, `replica ${where.hostname}:${where.port || 5432} failed; reads go to the primary, retried in ${retryMs / 1000} s`);
  };
  const shape = (config: unknown, values?: unknown) => {
    const shaped: { text?: string; name?: string; values?: unknown } = typeof config === 'string' ? { text: config, values } : { ...(config as object) };
    if (values !== undefined && typeof config !== 'string') shaped.values = values;
    if (!options.prepared) delete shaped.name;
    return shaped;
  };
  const self: ReplicaPool = {
    counts,
    query: (async (config: unknown, values?: unknown) => {
      const replica = pick();
      if (replica) {
        try {
          const result = await replica.pool.query(shape(config, values) as pg.QueryConfig);
          counts.replica++;
          return result;
        } catch (err) {
          if (!replicaFailed(err)) throw err;
          setAside(replica, err);
        }
      }
      if (replicas.length) counts.fallback++;
      return (options.primary.query as (c: unknown, v?: unknown) => Promise<pg.QueryResult>)(config, values);
    }) as Pool['query'],
    async connect(): Promise<Connection> {
      const replica = pick();
      if (replica) {
        try {
          const client = await replica.pool.connect();
          counts.replica++;
          return lent(client, options.prepared);
        } catch (err) {
          setAside(replica, err);
        }
      }
      if (replicas.length) counts.fallback++;
      return options.primary.connect();
    },
    async connectWhere(check) {
      const replica = pick();
      if (replica) {
        let client: pg.PoolClient | undefined;
        try {
          client = await replica.pool.connect();
          const { rows } = await client.query<{ ok: boolean }>(check.text, check.values);
          if (rows[0]?.ok) {
            counts.replica++;
            return lent(client, options.prepared);
          }
          client.release();
          counts.behind++;
          return options.primary.connect();
        } catch (err) {
          client?.release(err as Error);
          if (client && !replicaFailed(err)) throw err;
          setAside(replica, err);
        }
      }
      if (replicas.length) counts.fallback++;
      return options.primary.connect();
    },
    get totalCount() {
      return replicas.reduce((n, r) => n + r.pool.totalCount, 0);
    },
    get idleCount() {
      return replicas.reduce((n, r) => n + r.pool.idleCount, 0);
    },
    get waitingCount() {
      return replicas.reduce((n, r) => n + r.pool.waitingCount, 0);
    },
    async close() {
      await Promise.all(replicas.map((r) => r.pool.end().catch(() => undefined)));
    },
  };
  return self;
}

/** A replica's pooled client as a Connection (statement names dropped when not allowed). */
function lent(client: pg.PoolClient, prepared: boolean): Connection {
  const run = client.query.bind(client) as (...args: unknown[]) => unknown;
  return {
    query: ((config: unknown, values?: unknown, callback?: unknown) => {
      if (prepared || typeof config !== 'object' || config === null || typeof (config as { submit?: unknown }).submit === 'function') {
        return run(config, values, callback);
      }
      const { name: _name, ...unnamed } = config as { name?: string };
      return run(unnamed, values, callback);
    }) as Connection['query'],
    on: (event, listener) => void client.on(event, listener),
    off: (event, listener) => void client.off(event, listener),
    release: (err) => client.release(err),
  };
}
