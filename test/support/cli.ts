import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/openapi.js';

const run = promisify(execFile);

/**
 * Runs the operator's command line (`trs <args>`) as an operator does, a process of its own
 * with this environment; resolves with stdout, stderr and the exit code.
 */
export async function runCli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ out: string; err: string; code: number }> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], { cwd: projectRoot, env, timeout: 60_000 });
    return { out: stdout, err: stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout: string; stderr: string; code: number };
    return { out: err.stdout, err: err.stderr, code: err.code };
  }
}
