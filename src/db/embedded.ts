import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

/**
 * The embedded PostgreSQL: PGlite (PostgreSQL compiled to WebAssembly) under a data folder,
 * served over a loopback socket so that pg and MikroORM talk to it as to any server.
 *
 * PGlite runs one query at a time; a transaction open on one connection holds all others.
 * Callers keep their pool small and never wait on a second connection inside a transaction.
 *
 * The process that owns the folder writes `embedded.json` (port and pid) beside the data so
 * that the CLI, run while the server is up, connects to the same database instead of opening
 * the folder a second time.
 */
export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const MAX_CONNECTIONS = 8;

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The URL of an embedded database another live process already serves from `dataDir`, if any. */
export async function findRunningEmbedded(dataDir: string): Promise<string | undefined> {
  try {
    const info = JSON.parse(await readFile(path.join(dataDir, 'embedded.json'), 'utf8')) as {
      pid: number;
      url: string;
    };
    return info.pid !== process.pid && isAlive(info.pid) ? info.url : undefined;
  } catch {
    return undefined;
  }
}

/** Opens (creating if needed) the PGlite database under `dataDir` and serves it on loopback. */
export async function startEmbedded(dataDir: string | undefined): Promise<EmbeddedDatabase> {
  const db = dataDir
    ? await (async () => {
        await mkdir(dataDir, { recursive: true });
        return PGlite.create(path.join(dataDir, 'pgdata'));
      })()
    : await PGlite.create();
  const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: MAX_CONNECTIONS });
  await server.start();
  const url = `postgres://postgres@${server.getServerConn()}/postgres`;
  const marker = dataDir ? path.join(dataDir, 'embedded.json') : undefined;
  if (marker) await writeFile(marker, JSON.stringify({ pid: process.pid, url }));
  return {
    url,
    async stop() {
      await server.stop();
      await db.close();
      if (marker) await rm(marker, { force: true });
    },
  };
}
