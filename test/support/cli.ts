import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { runTrs } from '../../src/cli/program.js';
import { projectRoot } from '../../src/openapi.js';

const run = promisify(execFile);

export interface CliResult {
  out: string;
  err: string;
  code: number;
}

/**
 * Runs the operator's command line (`trs <args>`) in this process, as the entry
 * (src/cli/index.ts) runs it in its own: the same program on the settings of `env`, its stdout
 * and stderr captured, and the exit code it would end with. No process start and no second
 * compile of the graph per command; `spawnCli` is the real process, for the one smoke test.
 */
export async function runCli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  let out = '';
  let err = '';
  const code = await runTrs(args, {
    env,
    stdout: { write: (text: string) => (out += text) },
    stderr: { write: (text: string) => (err += text) },
    exitCode: 0,
  });
  return { out, err, code };
}

/** `trs <args>` as an operator runs it, a process of its own with this environment. */
export async function spawnCli(env: NodeJS.ProcessEnv, ...args: string[]): Promise<CliResult> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli/index.ts', ...args], {
      cwd: projectRoot,
      env,
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { out: stdout, err: stderr, code: 0 };
  } catch (e) {
    const err = e as { stdout: string; stderr: string; code: number };
    return { out: err.stdout, err: err.stderr, code: err.code };
  }
}
