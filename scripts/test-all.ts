/**
 * `npm test`: every step of the suite, in order, each run whatever the ones before it did, then
 * one line per step (passed, failed or skipped, and its seconds); the exit code is 1 when any
 * step failed. A failure early (a lint warning, a type error) no longer hides whether the
 * contract test and the benchmark smoke run would pass.
 *
 * Two runs at once on one machine do not write the same files: the reference is built into a
 * temporary folder of the run (the step checks that it builds; dist/reference.html is `npm run
 * docs`'s), and the coverage goes to coverage/<run>/. Ports, databases and temporary folders of
 * the steps are each run's own already.
 *
 * A signal (Ctrl-C, or SIGTERM to this process) is passed on to every process of the step under
 * way (each step runs in a process group of its own: npm's shell would die of it and leave the
 * step's own process running); the steps after it are skipped, and the summary is still printed.
 *
 * `--profile node` (`npm run test:node`) runs only what depends on the Node.js version beyond
 * what `npm test` already proved on the first one: the component tests (vitest's `component`
 * project, without coverage) and the contract test. CI runs it on the second Node.js version;
 * the lint, generate check, type check, reference, unit and system tests, coverage and the
 * benchmark smoke run once, in `npm test`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** The steps of each profile: `all`, as `npm test` has always run them, and `node` (above). */
const PROFILES = {
  all: { label: 'npm test', steps: ['lint:api', 'lint:imports', 'check:generated', 'typecheck', 'docs', 'test:unit', 'test:contract', 'test:bench-smoke'] },
  node: { label: 'npm run test:node', steps: ['test:component', 'test:contract'] },
} as const;
type Profile = keyof typeof PROFILES;
type Step = (typeof PROFILES)[Profile]['steps'][number];

const args = process.argv.slice(2);
const profileArg = args[0] === '--profile' ? args[1] : args[0]?.startsWith('--profile=') ? args[0].slice('--profile='.length) : args.length ? '' : 'all';
if (!profileArg || !(profileArg in PROFILES) || args.length > (args[0] === '--profile' ? 2 : 1)) {
  process.stderr.write(`usage: test-all.ts [--profile ${Object.keys(PROFILES).join('|')}]\n`);
  process.exit(2);
}
const { label, steps: STEPS } = PROFILES[profileArg as Profile];

const run = `${new Date().toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-')}-${process.pid}-${randomBytes(2).toString('hex')}`;
const scratch = mkdtempSync(path.join(tmpdir(), 'trs-test-'));
const coverage = path.join('coverage', run);

/**
 * Vitest's steps also write a JSON report, so the summary can name the tests that failed: the
 * failure's own text scrolls away under the steps after it, and a CI log is often read from its end.
 */
const vitestReport = (name: string) => ['--reporter=default', '--reporter=json', `--outputFile.json=${path.join(scratch, `${name}.json`)}`];

/** What a step gets besides its npm script: where it writes what another run would write too. */
const extras: Partial<Record<Step, { args?: string[]; env?: Record<string, string> }>> = {
  docs: { env: { DOCS_OUTPUT: path.join(scratch, 'reference.html') } },
  'test:unit': { args: [`--coverage.reportsDirectory=${coverage}`, ...vitestReport('test:unit')] },
  'test:component': { args: vitestReport('test:component') },
};

/** The tests a Vitest step's JSON report says failed, as `file > test: first line of the error`. */
function failedTests(step: Step): string[] {
  let report: { testResults?: { name: string; status: string; message?: string; assertionResults?: { fullName: string; status: string; failureMessages?: string[] }[] }[] };
  try {
    report = JSON.parse(readFileSync(path.join(scratch, `${step}.json`), 'utf8'));
  } catch {
    return [];
  }
  const lines: string[] = [];
  for (const file of report.testResults ?? []) {
    const name = path.relative(process.cwd(), file.name);
    const failed = (file.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of failed) lines.push(`${name} > ${t.fullName}: ${firstLine(t.failureMessages?.[0])}`);
    if (!failed.length && file.status === 'failed') lines.push(`${name}: ${firstLine(file.message)}`);
  }
  return lines;
}
/**
 * A failure's first line. Vitest's timeout errors carry the stack of an error it made when the
 * test was declared, whose first line is `Error: STACK_TRACE_ERROR`; the summary says what it means.
 */
function firstLine(text = ''): string {
  const line = text.split('\n', 1)[0]!.slice(0, 300);
  return line === 'Error: STACK_TRACE_ERROR' ? 'timed out (vitest reports a test or hook past its timeout as STACK_TRACE_ERROR)' : line;
}

type Result = { step: Step; result: 'passed' | 'failed' | 'skipped'; seconds?: number; note?: string; failures?: string[] };
const results: Result[] = [];
let current: ChildProcess | undefined;
let interrupted: NodeJS.Signals | undefined;

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    interrupted ??= signal;
    if (current?.pid !== undefined) {
      try {
        process.kill(-current.pid, signal);
      } catch {
        // the step has just ended
      }
    }
  });
}

function runStep(step: Step): Promise<number | null> {
  const extra = extras[step] ?? {};
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', step, ...(extra.args ? ['--', ...extra.args] : [])], {
      stdio: 'inherit',
      env: { ...process.env, ...extra.env },
      detached: true,
    });
    current = child;
    child.once('error', (err) => {
      process.stderr.write(`${label}: ${step} could not be started: ${err.message}\n`);
      resolve(null);
    });
    child.once('exit', (code) => resolve(code));
  });
}

for (const step of STEPS) {
  if (interrupted) {
    results.push({ step, result: 'skipped', note: `after ${interrupted}` });
    continue;
  }
  process.stdout.write(`\n== ${label}: ${step} (${results.length + 1} of ${STEPS.length})\n`);
  const started = performance.now();
  const code = await runStep(step);
  current = undefined;
  const seconds = (performance.now() - started) / 1000;
  const result = code === 0 && !interrupted ? 'passed' : 'failed';
  results.push({ step, result, seconds, note: interrupted ? `stopped by ${interrupted}` : undefined, failures: result === 'failed' ? failedTests(step) : [] });
}
rmSync(scratch, { recursive: true, force: true });

const width = Math.max(...STEPS.map((s) => s.length)) + 1;
process.stdout.write(`\n== ${label}: summary\n`);
for (const { step, result, seconds, note, failures } of results) {
  const time = seconds === undefined ? '' : ` (${seconds.toFixed(1)} s)`;
  process.stdout.write(`  ${`${step}:`.padEnd(width)} ${result}${time}${note ? `, ${note}` : ''}\n`);
  for (const failure of failures ?? []) process.stdout.write(`    failed: ${failure}\n`);
}
const failed = results.filter((r) => r.result === 'failed').map((r) => r.step);
const skipped = results.filter((r) => r.result === 'skipped').length;
if (results.some((r) => r.step === 'test:unit' && r.result !== 'skipped')) process.stdout.write(`  coverage of src/: ${coverage}/\n`);
process.stdout.write(
  failed.length
    ? `${failed.length} of ${STEPS.length} steps failed: ${failed.join(', ')}${skipped ? `; ${skipped} skipped` : ''}\n`
    : skipped
      ? `no step failed; ${skipped} skipped\n`
      : `all ${STEPS.length} steps passed\n`,
);
process.exitCode = interrupted ? 128 + (interrupted === 'SIGINT' ? 2 : 15) : failed.length ? 1 : 0;
