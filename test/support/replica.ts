import { spawnSync } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, postgresBin } from './processes.js';

/**
 * A streaming replica of a PostgreSQL server on this machine: `pg_basebackup -R` (which writes
 * standby.signal and primary_conninfo) into a temporary folder, started with the server
 * binaries of this machine as the `postgres` user on a free port. The primary must accept
 * replication connections from 127.0.0.1 (initdb's own pg_hba.conf does, under trust; so does
 * the private server of startPrivatePostgres) and have wal_level replica (the default).
 */
export interface Replica {
  port: number;
  /** `database` on the replica. */
  url(database: string): string;
  /** Stops it at once (`pg_ctl stop -m immediate`): a replica that dies. */
  kill(): void;
  /** Starts it again after kill(). */
  start(): void;
  /** `pg_ctl promote`: the replica becomes a primary. */
  promote(): void;
  remove(): void;
}

/** Why a replica cannot be made here, or undefined. */
export function replicaMissing(): string | undefined {
  if (!postgresBin()) return 'needs the PostgreSQL server binaries (/usr/lib/postgresql/<n>/bin): not installed';
  if (process.getuid?.() !== 0) return 'needs root (the replica runs as the postgres user)';
  if (spawnSync('id', ['-u', 'postgres']).status !== 0) return 'needs a postgres user';
  return undefined;
}

export async function startReplica(primaryPort: number): Promise<Replica> {
  const bin = postgresBin()!;
  const uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const dir = mkdtempSync(path.join(tmpdir(), 'trs-pg-replica-'));
  chownSync(dir, uid, gid);
  const data = path.join(dir, 'data');
  const asPostgres = (args: string[]) => {
    const result = spawnSync('runuser', ['-u', 'postgres', '--', ...args], { encoding: 'utf8', timeout: 120_000 });
    if (result.status !== 0) throw new Error(`${path.basename(args[0]!)} failed: ${result.stderr || result.stdout}`);
  };
  const port = await freePort();
  asPostgres([path.join(bin, 'pg_basebackup'), '-h', '127.0.0.1', '-p', String(primaryPort), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '--checkpoint=fast', '--no-sync']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c hot_standby=on`;
  const start = () => asPostgres([path.join(bin, 'pg_ctl'), 'start', '-D', data, '-l', path.join(dir, 'log'), '-w', '-o', options]);
  start();
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    kill: () => void spawnSync('runuser', ['-u', 'postgres', '--', path.join(bin, 'pg_ctl'), 'stop', '-m', 'immediate', '-D', data], { timeout: 60_000 }),
    start,
    promote: () => asPostgres([path.join(bin, 'pg_ctl'), 'promote', '-w', '-D', data]),
    remove() {
      spawnSync('runuser', ['-u', 'postgres', '--', path.join(bin, 'pg_ctl'), 'stop', '-m', 'immediate', '-D', data], { timeout: 60_000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
