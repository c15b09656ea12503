import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { installed } from './tools.js';
import { freePort } from './processes.js';

/**
 * A real PgBouncer (Debian's `pgbouncer`) in transaction mode in front of a PostgreSQL server,
 * on a free port with a configuration in a temporary folder, run as `postgres` when the tests
 * run as root (PgBouncer refuses to run as root). What the server needs of it (docs/scaling.md):
 * `pool_mode = transaction`; `ignore_startup_parameters = extra_float_digits` (what some
 * clients send); the statement timeout of the server's connections given by `connect_query`,
 * since PgBouncer 1.18 refuses a client's `statement_timeout` startup parameter, which the
 * server therefore does not send through a pooler.
 */
export interface PgBouncer {
  port: number;
  /** `url` (a database of the server behind it) reached through the bouncer instead. */
  through(url: string): string;
  /** The bouncer's log so far. */
  log(): string;
  /** SHOW STATS of the admin console: transactions and queries each database had through the bouncer. */
  stats(database: string): Promise<{ transactions: number; queries: number }>;
  stop(): Promise<void>;
}

/** What the machine lacks to run PgBouncer, or undefined. */
export function pgbouncerMissing(): string | undefined {
  return installed('pgbouncer') ? undefined : 'needs pgbouncer: not installed (apt-get install pgbouncer)';
}

function postgresIds(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) throw new Error('running as root, and there is no postgres user to run pgbouncer as');
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

async function accepting(port: number, timeoutMs: number): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`pgbouncer did not listen on ${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts PgBouncer in front of the server `target` names (its host and port; every database). */
export async function startPgBouncer(
  target: string,
  options: {
    poolSize?: number;
    statementTimeoutMs?: number;
    /**
     * Also drop a client's `statement_timeout` startup parameter instead of refusing the client:
     * for clients given only DATABASE_URL (the command line a test runs, server processes a
     * system test starts), which send it as on a direct connection.
     */
    tolerant?: boolean;
  } = {},
): Promise<PgBouncer> {
  const server = new URL(target);
  const user = decodeURIComponent(server.username || 'postgres');
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'trs-pgbouncer-'));
  const ids = postgresIds();
  const ini = path.join(dir, 'pgbouncer.ini');
  const logFile = path.join(dir, 'pgbouncer.log');
  writeFileSync(
    ini,
    [
      '[databases]',
      `* = host=${server.hostname} port=${server.port || 5432} connect_query='SET statement_timeout = ${options.statementTimeoutMs ?? 15_000}'`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${path.join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 20}`,
      'max_client_conn = 1000',
      // Not statement_timeout, unless tolerant: the server sends none through a pooler.
      `ignore_startup_parameters = extra_float_digits${options.tolerant ? ',statement_timeout' : ''}`,
      'server_reset_query =',
      `admin_users = ${user}`,
      `logfile = ${logFile}`,
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  writeFileSync(path.join(dir, 'users.txt'), `"${user}" ""\n`);
  if (ids) for (const file of [dir, ini, path.join(dir, 'users.txt')]) chownSync(file, ids.uid, ids.gid);
  const child: ChildProcess = spawn('pgbouncer', [ini], { stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}), env: { ...process.env, PATH: `${process.env.PATH}:/usr/sbin:/sbin` } });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = once(child, 'exit');
  try {
    await Promise.race([
      accepting(port, 10_000),
      exited.then(([code]) => {
        throw new Error(`pgbouncer exited with ${code}: ${stderr}`);
      }),
    ]);
  } catch (err) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const log = () => {
    try {
      return readFileSync(logFile, 'utf8');
    } catch {
      return '';
    }
  };
  return {
    port,
    through(url: string) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    log,
    async stats(database: string) {
      const admin = new pg.Client({ connectionString: `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/pgbouncer` });
      await admin.connect();
      try {
        const { rows } = await admin.query<{ database: string; total_xact_count: string; total_query_count: string }>('show stats');
        const row = rows.find((r) => r.database === database);
        return { transactions: Number(row?.total_xact_count ?? 0), queries: Number(row?.total_query_count ?? 0) };
      } finally {
        await admin.end();
      }
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
