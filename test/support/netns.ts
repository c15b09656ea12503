import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';

const run = promisify(execFile);

/**
 * A scratch network namespace (root with iproute2; tools.ts says whether this machine can make
 * one): the firewall tools load files for real there, touching nothing of the machine's own
 * firewall. `sh` runs a shell command inside it.
 */
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
