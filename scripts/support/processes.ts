import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../src/openapi.js';
import { LISTENING_MESSAGE } from '../../src/ipc.js';

export interface ListeningProcess {
  child: ChildProcess;
  port: number;
  /** `http://127.0.0.1:<port>` */
  origin: string;
}

/**
 * Starts `node <args>` (the server, or a baseline) on a port the system chooses: PORT=0, and
 * the process says which port it got over its IPC channel (src/process.ts, LISTENING_MESSAGE)
 * once it listens. Nothing else can answer in its place, whatever else runs on the machine.
 * Rejects, saying why, when the process exits before it listens.
 */
export function startListening(
  args: string[],
  env: Record<string, string | undefined>,
  options: { stdout?: 'ignore' | 'inherit' | number; timeoutMs?: number } = {},
): Promise<ListeningProcess> {
  const child = spawn(process.execPath, args, {
    cwd: projectRoot,
    env: { ...env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', options.stdout ?? 'ignore', 'inherit', 'ipc'],
  });
  const name = args.filter((a) => !a.startsWith('-') && a !== 'tsx').join(' ');
  return new Promise<ListeningProcess>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${name} did not listen within ${(options.timeoutMs ?? 120_000) / 1000} s`));
    }, options.timeoutMs ?? 120_000);
    const exited = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited (${signal ?? `exit code ${code}`}) before it listened; its errors are above`));
    };
    child.once('exit', exited);
    child.on('message', (message: { type?: string; port?: number }) => {
      if (message?.type !== LISTENING_MESSAGE || typeof message.port !== 'number') return;
      clearTimeout(timer);
      child.off('exit', exited);
      child.disconnect();
      resolve({ child, port: message.port, origin: `http://127.0.0.1:${message.port}` });
    });
  });
}

/**
 * Compiles the server (tsconfig.build.json) into a folder of its own under .build/, not into
 * dist/, so that two runs at once (two `npm test`, two benchmarks) never write the same files
 * nor run each other's half-written output. Inside the project, so that the compiled code finds
 * package.json, node_modules and generated/ as dist/ does. `remove()` deletes it.
 */
export function compileServer(name: string): { dir: string; main: string; remove(): void } {
  const dir = path.join(projectRoot, '.build', `${name}-${process.pid}-${randomBytes(3).toString('hex')}`);
  compileTo(dir);
  return { dir, main: path.join(dir, 'src', 'main.js'), remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** `tsc -p tsconfig.build.json` (what `npm run build` compiles) into `outDir` instead of dist/. */
export function compileTo(outDir: string): void {
  execFileSync(process.execPath, [path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir], {
    cwd: projectRoot,
    stdio: 'inherit',
  });
}
