import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Whether a command is installed (in PATH or the sbin folders root's PATH has). */
export function installed(command: string): boolean {
  return spawnSync('sh', ['-c', `PATH="$PATH:/usr/sbin:/sbin" command -v ${command}`]).status === 0;
}

/**
 * Whether this process may make network namespaces (root with iproute2): the firewall tools
 * then load files for real there, touching nothing of the machine's own firewall.
 */
export function netnsAvailable(): boolean {
  if (process.getuid?.() !== 0 || !installed('ip')) return false;
  const name = `trs-probe-${randomBytes(3).toString('hex')}`;
  const ok = spawnSync('ip', ['netns', 'add', name]).status === 0;
  if (ok) spawnSync('ip', ['netns', 'del', name]);
  return ok;
}

/** A scratch network namespace; `sh` runs a shell command inside it. */
export interface Netns {
  name: string;
  sh(command: string, input?: string): Promise<{ out: string; err: string }>;
  remove(): Promise<void>;
}

export async function createNetns(prefix = 'trs-test'): Promise<Netns> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await run('ip', ['netns', 'add', name]);
  await run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
  return {
    name,
    async sh(command, input) {
      const child = execFile('ip', ['netns', 'exec', name, 'sh', '-c', `PATH="$PATH:/usr/sbin:/sbin"; ${command}`], { maxBuffer: 64 * 1024 * 1024 });
      if (input !== undefined) child.stdin!.end(input);
      else child.stdin!.end();
      let out = '';
      let err = '';
      child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
      child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
      const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
      if (code !== 0) throw new Error(`${command} failed (${code}) in ${name}: ${err || out}`);
      return { out, err };
    },
    async remove() {
      await run('ip', ['netns', 'del', name]).catch(() => undefined);
    },
  };
}
