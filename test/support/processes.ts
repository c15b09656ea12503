import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startListening } from '../../scripts/support/processes.js';
import { eventually } from './relay-fakes.js';

export async function freePort(): Promise<number> {
  const srv = createServer().listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

export interface ServerProcess {
  child: ChildProcess;
  origin: string;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
}

/** Real server processes (`src/main.ts`), as an operator runs them; killed at the end if still up. */
export function serverProcesses() {
  const children: ChildProcess[] = [];
  return {
    async start(env: Record<string, string>): Promise<ServerProcess> {
      // On a port the system chooses, which the server tells over IPC (PORT=0).
      const { child, origin } = await startListening(['--import', 'tsx', 'src/main.ts'], {
        ...process.env,
        LOG_LEVEL: 'warn',
        BLACKLIST_INTERVAL_MINUTES: '1440',
        ...env,
      });
      children.push(child);
      const exited = once(child, 'exit').then(([code]) => code as number | null);
      await eventually(async () => (await fetch(`${origin}/readyz`).catch(() => undefined))?.status === 200, 60_000);
      return { child, origin, exited };
    },
    killAll() {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
  };
}

/** The PostgreSQL server binaries of this machine, if any (Debian: /usr/lib/postgresql/<n>/bin). */
export function postgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => path.join(root, v, 'bin')).find((bin) => existsSync(path.join(bin, 'pg_ctl')));
}

/**
 * A PostgreSQL server of the test's own (initdb in a temporary folder, trust on loopback), so
 * that a test can restart it without touching the server other tests use. Undefined where it
 * cannot be made: no server binaries, or not root (initdb must run as the `postgres` user).
 */
export async function startPrivatePostgres(): Promise<{ url: string; restart(): Promise<void>; stop(): void } | undefined> {
  const bin = postgresBin();
  if (!bin || process.getuid?.() !== 0) return undefined;
  const user = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  if (user.status !== 0) return undefined;
  const uid = Number(user.stdout.trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const dir = mkdtempSync(path.join(tmpdir(), 'trs-pg-cluster-'));
  chownSync(dir, uid, gid);
  const data = path.join(dir, 'data');
  const asPostgres = (args: string[]) => {
    const result = spawnSync('runuser', ['-u', 'postgres', '--', ...args], { encoding: 'utf8', timeout: 120_000 });
    if (result.status !== 0) throw new Error(`${args[0]} failed: ${result.stderr || result.stdout}`);
  };
  const port = await freePort();
  asPostgres([path.join(bin, 'initdb'), '-D', data, '--auth=trust', '--username=postgres', '-E', 'UTF8', '--no-sync']);
  const start = ['-D', data, '-l', path.join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off`];
  asPostgres([path.join(bin, 'pg_ctl'), 'start', ...start]);
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    /** `pg_ctl restart -m fast`: every connection is terminated, the server comes back. */
    restart: () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn('runuser', ['-u', 'postgres', '--', path.join(bin, 'pg_ctl'), 'restart', '-m', 'fast', ...start], { stdio: 'ignore' });
        child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`pg_ctl restart exited with ${code}`))));
      }),
    stop() {
      spawnSync('runuser', ['-u', 'postgres', '--', path.join(bin, 'pg_ctl'), 'stop', '-m', 'immediate', '-D', data], { timeout: 60_000 });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
