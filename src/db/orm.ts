import { MikroORM, UnderscoreNamingStrategy, type Options } from '@mikro-orm/postgresql';
import { Migration, Migrator } from '@mikro-orm/migrations';
import pg from 'pg';
import type { Logger } from 'pino';
import { AccountEntity, ApiKeyEntity, ThreatCategoryEntity } from './entities.js';
import { accountsEntities } from './entities/accounts.js';
import { blacklistEntities } from './entities/blacklist.js';
import { delistingEntities } from './entities/delisting.js';
import { webhooksEntities } from './entities/webhooks.js';
import { keysEntities } from './entities/keys.js';
import { notificationsEntities } from './entities/notifications.js';
import { relayEntities } from './entities/relay.js';
import { reputationEntities } from './entities/reputation.js';
import { statisticsEntities } from './entities/statistics.js';
import { migrationsList } from './migrations/index.js';
import { incidentLogger } from '../logging.js';
import { STATEMENT_TIMEOUT_MS, UNBOUNDED } from './pool.js';

export type Orm = MikroORM;

/**
 * Every table of the schema, each mapped once (test/integration/schema-diff.test.ts compares them
 * with the migrated database). The aggregates' files under entities/ name Account and ApiKey by
 * entity name in their relations and import only their types from entities.ts, which imports
 * none of them back: the list of all of them lives here, where the ORM is made.
 */
const entities = [
  AccountEntity,
  ApiKeyEntity,
  ThreatCategoryEntity,
  ...reputationEntities,
  ...statisticsEntities,
  ...blacklistEntities,
  ...keysEntities,
  ...relayEntities,
  ...accountsEntities,
  ...notificationsEntities,
  ...delistingEntities,
  ...webhooksEntities,
];

/**
 * MikroORM's names for columns (snake case), and PostgreSQL's own for constraints and indexes
 * (`<table>_<columns>_pkey|key|fkey|check|idx`): the names the migrations' DDL got from
 * PostgreSQL, so that the schema diff (test/integration/schema-diff.test.ts) compares like
 * with like.
 */
export class PostgresNamingStrategy extends UnderscoreNamingStrategy {
  override indexName(tableName: string, columns: string[], type: Parameters<UnderscoreNamingStrategy['indexName']>[2]): string {
    const suffix = { foreign: 'fkey', unique: 'key', index: 'idx' }[type as string];
    if (suffix) return `${tableName.replace(/^.*\./, '')}_${columns.join('_')}_${suffix}`;
    return super.indexName(tableName, columns, type);
  }
}

export interface OrmOptions {
  url: string;
  poolMax: number;
  logger?: Logger;
  /**
   * `url` is a transaction pooler (PgBouncer, pool_mode=transaction): no startup parameter but
   * the pooler's own is sent (PgBouncer 1.18 refuses or drops the others), so the statement
   * timeout comes from the pooler's `connect_query` or the role's or database's setting
   * (docs/scaling.md); `checkPooledTimeout` warns when it is missing.
   */
  pooled?: boolean;
}

/**
 * The migrations, each lifting the statement timeout of the pool's connections for its
 * transaction: a migration may backfill a table of millions of rows.
 */
export const unboundedMigrations = migrationsList.map(({ name, class: Base }) => {
  const Concrete = Base as new (...args: ConstructorParameters<typeof Migration>) => Migration;
  return {
    name,
    class: class extends Concrete {
      override async up(): Promise<void> {
        this.addSql(UNBOUNDED);
        await Concrete.prototype.up.call(this);
      }
    },
  };
});

/** Any stable 64-bit number: the advisory lock that lets one process at a time migrate. */
const MIGRATION_LOCK = 7_260_112_002;

export function ormConfig({ url, poolMax, logger, pooled = false }: OrmOptions): Options {
  const incident = logger ? incidentLogger(logger) : undefined;
  return {
    clientUrl: url,
    entities,
    namingStrategy: PostgresNamingStrategy,
    extensions: [Migrator],
    migrations: { migrationsList: unboundedMigrations, transactional: true, allOrNothing: true, snapshot: false },
    pool: {
      min: 0,
      max: poolMax,
      // A dead database must fail requests fast (503), not leave them waiting for a connection.
      acquireTimeoutMillis: 5_000,
      idleTimeoutMillis: 30_000,
      // A connection that dies while idle (the database restarts) must not end the process:
      // the pool drops it and opens another when one is needed.
      afterCreate: (connection: { on(event: 'error', listener: (err: Error) => void): void }, done: (err: Error | null, c: unknown) => void) => {
        connection.on('error', (err) => incident?.('warn', 'db-pool', err, 'a database connection failed; it will be replaced'));
        done(null, connection);
      },
    },
    // Connections are short-lived statements; a dead server must fail fast, not hang a request.
    driverOptions: {
      connection: { connectionTimeoutMillis: 5_000, ...(pooled ? {} : { statement_timeout: STATEMENT_TIMEOUT_MS }) },
      // knex warns on the console for each broken connection it discards; the pool's own
      // listener (above) logs one line per incident instead.
      log: { warn: () => undefined, error: () => undefined, deprecate: () => undefined, debug: () => undefined },
    },
    // A missing database is created by connectDatabase, which says so; MikroORM would do it silently.
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: true },
    debug: false,
    logger: (message) => logger?.debug({ orm: message }),
    allowGlobalContext: false,
  };
}

export async function openOrm(options: OrmOptions): Promise<Orm> {
  return MikroORM.init(ormConfig(options));
}

/**
 * Applies pending migrations. Several processes may start at once against one database:
 * an advisory lock lets the first migrate while the others wait, then find nothing to do.
 * The lock is a session's: `url` is a direct connection, never a transaction pooler
 * (DATABASE_DIRECT_URL when DATABASE_URL is one; see connect.ts).
 */
export async function migrate(orm: Orm, url: string): Promise<string[]> {
  // The lock is held on a connection of its own, outside any transaction, so the migrator's
  // own connections (one, on the embedded database) are free to work while it is held.
  const lock = new pg.Client({ connectionString: url });
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK]);
    const applied = await orm.getMigrator().up();
    return applied.map((migration) => migration.name);
  } finally {
    await lock.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    await lock.end();
  }
}

/** Names of the migrations the database has not had yet. */
export async function pendingMigrations(orm: Orm): Promise<string[]> {
  return (await orm.getMigrator().getPendingMigrations()).map((migration) => migration.name);
}
