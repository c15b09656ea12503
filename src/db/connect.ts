import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { findRunningEmbedded, startEmbedded } from './embedded.js';
import { migrate, openOrm, type Orm } from './orm.js';
import { createPool, type Pool } from './pool.js';

export interface Database {
  orm: Orm;
  pool: Pool;
  url: string;
  /** True when this process serves the embedded PostgreSQL. */
  embedded: boolean;
  close(): Promise<void>;
}

/** Pool size on the embedded database: it runs one query at a time anyway. */
const EMBEDDED_POOL = 2;

/**
 * Opens the configured PostgreSQL, or the embedded one under DATA_DIR when DATABASE_URL is
 * unset (joining the one another local process already serves, if any), and migrates it.
 */
export async function connectDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir' | 'dbPoolMax'>,
  logger: Logger,
  options: { migrate?: boolean } = {},
): Promise<Database> {
  let url = config.databaseUrl;
  let stopEmbedded: (() => Promise<void>) | undefined;
  if (!url) {
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
  const isEmbedded = !config.databaseUrl;
  const orm = await openOrm({ url, poolMax: isEmbedded ? EMBEDDED_POOL : config.dbPoolMax, logger });
  try {
    if (options.migrate !== false) {
      const applied = await migrate(orm, url);
      if (applied.length) logger.info({ applied }, 'database migrated');
    }
  } catch (err) {
    await orm.close();
    await stopEmbedded?.();
    throw err;
  }
  const pool = createPool(url, isEmbedded ? EMBEDDED_POOL : config.dbPoolMax, {
    prepared: !isEmbedded,
    onError: (err) => logger.warn({ err: err.message }, 'an idle database connection failed; it will be replaced'),
  });
  return {
    orm,
    pool,
    url,
    embedded: stopEmbedded !== undefined,
    async close() {
      await pool.end();
      await orm.close();
      await stopEmbedded?.();
    },
  };
}
