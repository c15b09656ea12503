import pg from 'pg';
import type { Logger } from 'pino';
import { findRunningEmbedded, startEmbedded } from './embedded.js';
import { connectionProblem } from './errors.js';
import { migrate, openOrm, pendingMigrations, type Orm } from './orm.js';
import { ormPool, type Pool } from './pool.js';
import { replicaPool, type ReplicaPool } from './replicas.js';

export interface Database {
  orm: Orm;
  pool: Pool;
  /** The reads that tolerate replication lag (DATABASE_REPLICA_URL); the primary's pool when none. */
  replicas: Pool;
  /** The pool's URL (DATABASE_URL): a transaction pooler when `pooled`. */
  url: string;
  /**
   * A direct connection's URL (DATABASE_DIRECT_URL, else `url`): for what keeps session state
   * and cannot go through a transaction pooler: migrations and their session advisory lock,
   * the relay's LISTEN, pg-boss.
   */
  directUrl: string;
  /** `url` is a transaction pooler: no named prepared statements, no session state on the pool. */
  pooled: boolean;
  /** The embedded PostgreSQL (this process's or another local one's): one session for every connection. */
  embedded: boolean;
  /** The migrations this connection applied (none when it only verified or skipped). */
  applied: string[];
  close(): Promise<void>;
}

/** Pool size on the embedded database: it runs one query at a time anyway. */
const EMBEDDED_POOL = 2;

/** PostgreSQL's codes for "database does not exist" and "database already exists". */
const UNDEFINED_DATABASE = '3D000';
const DUPLICATE_DATABASE = '42P04';

/**
 * Creates the database DATABASE_URL names when the server answers that it does not exist, and
 * logs it: a typo in the name must show in the log, not silently start an empty database.
 */
export async function createDatabaseIfMissing(url: string, logger: Logger): Promise<void> {
  const probe = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await probe.connect();
    return;
  } catch (err) {
    if ((err as { code?: string }).code !== UNDEFINED_DATABASE) throw err;
  } finally {
    await probe.end().catch(() => undefined);
  }
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.slice(1));
  target.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: target.toString(), connectionTimeoutMillis: 5_000 });
  await admin.connect();
  try {
    await admin.query(`create database ${admin.escapeIdentifier(name)}`);
    logger.info({ database: name }, 'created the database named in DATABASE_URL: it did not exist');
  } catch (err) {
    // Another process starting at the same time created it first.
    if ((err as { code?: string }).code !== DUPLICATE_DATABASE) throw err;
  } finally {
    await admin.end();
  }
}

/**
 * What to do about pending migrations: apply them (under the advisory lock), only verify that
 * none is pending (MIGRATE_ON_START=false: the operator runs `trs db migrate` before a
 * rollout), or nothing (a process that knows another has migrated).
 */
export type MigrateMode = 'apply' | 'verify' | 'skip';

/**
 * What the data layer is told of the configuration (DATABASE_URL, DATA_DIR, DB_POOL_MAX,
 * DATABASE_DIRECT_URL, DATABASE_REPLICA_URL).
 */
export interface DatabaseSettings {
  databaseUrl: string | undefined;
  dataDir: string;
  dbPoolMax: number;
  /** Set: DATABASE_URL is a transaction pooler and this reaches PostgreSQL itself. */
  databaseDirectUrl?: string | undefined;
  databaseReplicaUrls?: string[];
}

/**
 * Opens the configured PostgreSQL, or the embedded one under DATA_DIR when DATABASE_URL is
 * unset (joining the one another local process already serves, if any), and migrates it.
 */
export async function connectDatabase(
  config: DatabaseSettings,
  logger: Logger,
  options: {
    migrate?: MigrateMode;
    /**
     * false: no named prepared statements, whatever the URL. The command line's: a short-lived
     * process gains nothing from them, and an operator may give it DATABASE_URL alone where that
     * is a transaction pooler, whose server connections keep the names another process prepared
     * ("prepared statement already exists").
     */
    prepared?: boolean;
  } = {},
): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (url) {
    // The first connection: what goes wrong here is said in terms of DATABASE_URL (a pooler
    // creates no database: the direct URL is asked when there is one).
    const configured = config.databaseDirectUrl ?? url;
    await createDatabaseIfMissing(configured, logger).catch((err: unknown) => {
      throw connectionProblem(err, configured);
    });
  } else {
    url = await findRunningEmbedded(config.dataDir);
    if (url) {
      logger.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL another local process serves');
    } else {
      const embedded = await startEmbedded(config.dataDir);
      url = embedded.url;
      stopEmbedded = embedded.stop;
      logger.info({ dataDir: config.dataDir }, 'DATABASE_URL is unset: started the embedded PostgreSQL (PGlite)');
    }
  }
  try {
    const database = await openDatabase(url, logger, {
      embedded: !config.databaseUrl,
      poolMax: config.dbPoolMax,
      migrate: options.migrate,
      directUrl: config.databaseUrl ? config.databaseDirectUrl : undefined,
      replicaUrls: config.databaseUrl ? config.databaseReplicaUrls : undefined,
      prepared: options.prepared,
    });
    if (!stopEmbedded) return database;
    return { ...database, close: async () => (await database.close(), await stopEmbedded!()) };
  } catch (err) {
    await stopEmbedded?.();
    throw err;
  }
}

/**
 * Opens the ORM and the pool on a database that exists (migrating it as `migrate` says).
 * `embedded`: the URL is the embedded PostgreSQL's, which serves every connection from one
 * session: a small pool, and no named prepared statements (one connection's name would
 * collide with the next's).
 */
export async function openDatabase(
  url: string,
  logger: Logger,
  options: {
    embedded: boolean;
    poolMax: number;
    migrate?: MigrateMode;
    /** DATABASE_DIRECT_URL: `url` is then a transaction pooler (unless it is the same URL). */
    directUrl?: string | undefined;
    /** DATABASE_REPLICA_URL, split. */
    replicaUrls?: string[] | undefined;
    /** false: no named prepared statements (connectDatabase's `prepared`). */
    prepared?: boolean | undefined;
  },
): Promise<Database> {
  const poolMax = options.embedded ? EMBEDDED_POOL : options.poolMax;
  const directUrl = options.directUrl ?? url;
  const pooled = directUrl !== url;
  const orm = await openOrm({ url, poolMax, logger, pooled });
  let applied: string[] = [];
  try {
    const mode = options.migrate ?? 'apply';
    if (mode === 'apply') {
      applied = await migrateDirectly(orm, url, directUrl, logger);
      if (applied.length) logger.info({ applied }, 'database migrated');
    } else if (mode === 'verify') {
      const pending = await pendingMigrations(orm);
      if (pending.length) {
        throw new Error(
          `the database lacks ${pending.length} migration(s) (${pending.join(', ')}): run \`trs db migrate\` first, or set MIGRATE_ON_START=true`,
        );
      }
    }
  } catch (err) {
    await orm.close();
    throw err;
  }
  // The one pool of the process: the ORM's, on which the repositories' SQL runs too. Behind a
  // transaction pooler a statement name prepared in one transaction's server connection is
  // unknown in the next's (PgBouncer 1.18 keeps none): unnamed statements there.
  const pool = ormPool(orm.em.getConnection(), { prepared: options.prepared !== false && !options.embedded && !pooled });
  if (pooled) await checkPooledTimeout(pool, logger);
  const replicas: ReplicaPool | undefined = options.replicaUrls?.length
    ? replicaPool({ urls: options.replicaUrls, poolMax, prepared: options.prepared !== false && !pooled, primary: pool, logger })
    : undefined;
  if (replicas) logger.info({ replicas: options.replicaUrls!.length }, 'lag-tolerant reads go to the read replicas (DATABASE_REPLICA_URL)');
  return {
    orm,
    pool,
    replicas: replicas ?? pool,
    url,
    directUrl,
    pooled,
    applied,
    embedded: options.embedded,
    async close() {
      await replicas?.close();
      await orm.close();
    },
  };
}

/**
 * Migrates on a direct connection: the migration lock is a session's, which a transaction
 * pooler would hand to another client between statements. Behind a pooler, a short-lived ORM
 * on DATABASE_DIRECT_URL does it.
 */
async function migrateDirectly(orm: Orm, url: string, directUrl: string, logger: Logger): Promise<string[]> {
  if (directUrl === url) return migrate(orm, url);
  const direct = await openOrm({ url: directUrl, poolMax: 2, logger });
  try {
    return await migrate(direct, directUrl);
  } finally {
    await direct.close();
  }
}

/**
 * Behind a transaction pooler the statement timeout is not sent with each connection (PgBouncer
 * passes on no such startup parameter): the pooler's `connect_query` or the role's or
 * database's own setting must give it. Said at start when the connections have none.
 */
async function checkPooledTimeout(pool: Pool, logger: Logger): Promise<void> {
  const { rows } = await pool.query<{ statement_timeout: string }>('show statement_timeout');
  if (rows[0]?.statement_timeout === '0') {
    logger.warn(
      "DATABASE_URL is a transaction pooler (DATABASE_DIRECT_URL is set) and its connections have no statement_timeout: set one (PgBouncer's connect_query, or ALTER ROLE ... SET statement_timeout = '15s'; docs/scaling.md)",
    );
  }
}
