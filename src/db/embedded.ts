import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { keepExtendedQueriesTogether } from './pglite-sequences.js';

/**
 * The embedded PostgreSQL: PGlite (PostgreSQL compiled to WebAssembly) under a data folder,
 * served over a Unix socket so that pg and MikroORM talk to it as to any server.
 *
 * The embedded server trusts whoever connects (PGlite has no authentication), so it listens on
 * a Unix socket in a folder only this user may enter (0700): under DATA_DIR, or in a private
 * temporary folder when that path would be too long for a socket. No TCP port is opened; no
 * other local user can reach the database.
 *
 * PGlite runs one query at a time; a transaction open on one connection holds all others.
 * Callers keep their pool small and never wait on a second connection inside a transaction.
 *
 * The process that owns the folder writes `embedded.json` (socket and pid, readable by this user
 * only) beside the data so
 * that the CLI, run while the server is up, connects to the same database instead of opening
 * the folder a second time.
 */
export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const MAX_CONNECTIONS = 8;
/** A Unix socket path must fit in sockaddr_un (108 bytes on Linux, 104 on macOS). */
const SOCKET_PATH_MAX = 100;
const SOCKET_NAME = '.s.PGSQL.5432';

/** A folder only this user may enter, for the socket: under the data folder when the path fits. */
async function privateSocketDir(dataDir: string | undefined): Promise<{ dir: string; temporary: boolean }> {
  if (dataDir) {
    const dir = path.resolve(dataDir, 'run');
    if (path.join(dir, SOCKET_NAME).length <= SOCKET_PATH_MAX) {
      await mkdir(dir, { recursive: true, mode: 0o700 });
      await chmod(dir, 0o700);
      await rm(path.join(dir, SOCKET_NAME), { force: true }); // left by a process that was killed
      return { dir, temporary: false };
    }
  }
  return { dir: await mkdtemp(path.join(os.tmpdir(), 'trs-pg-')), temporary: true };
}

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

/** Opens (creating if needed) the PGlite database under `dataDir` and serves it on a private Unix socket. */
export async function startEmbedded(dataDir: string | undefined): Promise<EmbeddedDatabase> {
  if (dataDir) {
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    await chmod(dataDir, 0o700);
  }
  const db = await PGlite.create(dataDir ? path.join(dataDir, 'pgdata') : undefined);
  const socket = await privateSocketDir(dataDir);
  const server = new PGLiteSocketServer({ db, path: path.join(socket.dir, SOCKET_NAME), maxConnections: MAX_CONNECTIONS });
  keepExtendedQueriesTogether(server);
  await server.start();
  // pg and MikroORM read a percent-encoded absolute path as the host as the socket's folder.
  const url = `postgres://postgres@${encodeURIComponent(socket.dir)}:5432/postgres`;
  const marker = dataDir ? path.join(dataDir, 'embedded.json') : undefined;
  if (marker) {
    await writeFile(marker, JSON.stringify({ pid: process.pid, url }), { mode: 0o600 });
    await chmod(marker, 0o600);
  }
  return {
    url,
    async stop() {
      await server.stop();
      await db.close();
      if (marker) await rm(marker, { force: true });
      await rm(socket.temporary ? socket.dir : path.join(socket.dir, SOCKET_NAME), { recursive: true, force: true });
    },
  };
}
