import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/openapi.js';
import { eventually } from '../support/relay-fakes.js';

/**
 * "The first hour": `npm test` (scripts/test-all.ts) runs every step whatever the ones before
 * it did, and ends with each step's result. Run here in a project of its own whose steps are
 * stand-ins that record that they ran (with what), and pass or fail as told.
 */
const STEPS = ['lint:api', 'lint:imports', 'check:generated', 'typecheck', 'docs', 'test:unit', 'test:contract', 'test:bench-smoke'];
/** `npm run test:node` (`--profile node`): what CI runs on its second Node.js version. */
const NODE_STEPS = ['test:component', 'test:contract'];
const folders: string[] = [];
afterAll(() => {
  for (const folder of folders) rmSync(folder, { recursive: true, force: true });
});

/** A project whose npm scripts are the steps: each records itself, then exits with its code (or sleeps). */
function project(codes: Record<string, number | 'sleep' | 'report'>): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'trs-test-all-'));
  folders.push(dir);
  symlinkSync(path.join(projectRoot, 'node_modules'), path.join(dir, 'node_modules'));
  writeFileSync(
    path.join(dir, 'record.cjs'),
    `const [step, code] = process.argv.slice(2);
require('fs').appendFileSync(__dirname + '/ran.log', JSON.stringify({ step, pid: process.pid, args: process.argv.slice(4), docsOutput: process.env.DOCS_OUTPUT ?? null }) + '\\n');
if (code === 'sleep') setTimeout(() => process.exit(0), 60000);
else if (code === 'report') {
  // A Vitest step that fails one test, writing the JSON report where it was asked to.
  const out = process.argv.find((a) => a.startsWith('--outputFile.json=')).slice('--outputFile.json='.length);
  const failed = { fullName: 'quotas > charges once', status: 'failed', failureMessages: ['AssertionError: expected 2 to be 1\\n    at quotas.test.ts:10:3'] };
  require('fs').writeFileSync(out, JSON.stringify({ testResults: [
    { name: process.cwd() + '/test/quotas.test.ts', status: 'failed', assertionResults: [{ fullName: 'quotas > passes', status: 'passed' }, failed] },
    { name: process.cwd() + '/test/broken.test.ts', status: 'failed', message: 'Cannot find module x', assertionResults: [] },
  ] }));
  process.exit(1);
} else process.exit(Number(code));
`,
  );
  const scripts = Object.fromEntries([...new Set([...STEPS, ...NODE_STEPS])].map((step) => [step, `node record.cjs ${step} ${codes[step] ?? 0}`]));
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'stand-in', private: true, type: 'module', scripts }));
  return dir;
}

function testAll(cwd: string, ...args: string[]) {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'scripts', 'test-all.ts'), ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, output: () => out, exited };
}

const ran = (dir: string) =>
  readFileSync(path.join(dir, 'ran.log'), 'utf8')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line) as { step: string; pid: number; args: string[]; docsOutput: string | null });
const summary = (output: string, label = 'npm test') => output.slice(output.indexOf(`== ${label}: summary`));

describe('npm test', () => {
  it('runs every step after one fails, reports each, and exits 1', async () => {
    const dir = project({ 'check:generated': 3 });
    const run = testAll(dir);
    expect(await run.exited).toBe(1);
    expect(ran(dir).map((r) => r.step)).toEqual(STEPS);
    const table = summary(run.output());
    for (const step of STEPS) {
      expect(table).toMatch(new RegExp(`^  ${step}: +${step === 'check:generated' ? 'failed' : 'passed'} \\(\\d+\\.\\d s\\)$`, 'm'));
    }
    expect(table).toContain('1 of 8 steps failed: check:generated');
  }, 120_000);

  it('exits 0 when every step passes', async () => {
    const run = testAll(project({}));
    expect(await run.exited).toBe(0);
    expect(summary(run.output())).toContain('all 8 steps passed');
  }, 120_000);

  it('gives two runs at once their own reference and coverage folders, never dist/ or coverage/ itself', async () => {
    const [a, b] = [project({}), project({})];
    const runs = [testAll(a), testAll(b)];
    expect(await Promise.all(runs.map((r) => r.exited))).toEqual([0, 0]);
    const docs = [a, b].map((dir) => ran(dir).find((r) => r.step === 'docs')!.docsOutput!);
    const coverage = [a, b].map((dir) => ran(dir).find((r) => r.step === 'test:unit')!.args);
    for (const [i, dir] of [a, b].entries()) {
      expect(docs[i]).toMatch(/reference\.html$/);
      expect(path.relative(dir, docs[i]!).startsWith('..')).toBe(true); // outside the project, so not in dist/
      expect(coverage[i]![0]).toMatch(/^--coverage\.reportsDirectory=coverage\/[\w-]+$/);
      // Vitest's JSON report goes to the run's own scratch folder, outside the project.
      const report = coverage[i]!.find((a) => a.startsWith('--outputFile.json='))!.slice('--outputFile.json='.length);
      expect(path.relative(dir, report).startsWith('..')).toBe(true);
    }
    expect(docs[0]).not.toBe(docs[1]);
    expect(coverage[0]).not.toEqual(coverage[1]);
  }, 120_000);

  it('--profile node runs only the component tests and the contract test, each reported, without coverage', async () => {
    const dir = project({ 'test:contract': 2 });
    const run = testAll(dir, '--profile', 'node');
    expect(await run.exited).toBe(1);
    expect(ran(dir).map((r) => r.step)).toEqual(NODE_STEPS);
    expect(ran(dir).find((r) => r.step === 'test:component')!.args.filter((a) => a.startsWith('--coverage'))).toEqual([]);
    const table = summary(run.output(), 'npm run test:node');
    expect(table).toMatch(/^ {2}test:component: +passed \(\d+\.\d s\)$/m);
    expect(table).toMatch(/^ {2}test:contract: +failed \(\d+\.\d s\)$/m);
    expect(table).toContain('1 of 2 steps failed: test:contract');
    expect(table).not.toContain('coverage');
    // A profile it does not know is refused before any step runs.
    const unknown = testAll(project({}), '--profile', 'nightly');
    expect(await unknown.exited).toBe(2);
    expect(unknown.output()).toContain('usage: test-all.ts [--profile all|node]');
  }, 120_000);

  it('names the tests a Vitest step failed in the summary, with the first line of each error', async () => {
    const dir = project({ 'test:unit': 'report' });
    const run = testAll(dir);
    expect(await run.exited).toBe(1);
    const table = summary(run.output());
    expect(table).toMatch(/^ {2}test:unit: +failed \(\d+\.\d s\)$/m);
    expect(table).toContain('    failed: test/quotas.test.ts > quotas > charges once: AssertionError: expected 2 to be 1\n');
    expect(table).toContain('    failed: test/broken.test.ts: Cannot find module x\n');
    expect(table).not.toContain('passes');
  }, 120_000);

  it('on a signal stops the step under way, skips the rest, and still prints the summary', async () => {
    const dir = project({ 'test:unit': 'sleep' });
    const run = testAll(dir);
    await eventually(() => run.output().includes('== npm test: test:unit'), 60_000);
    await new Promise((r) => setTimeout(r, 1_000));
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(143);
    expect(ran(dir).map((r) => r.step)).toEqual(STEPS.slice(0, STEPS.indexOf('test:unit') + 1));
    const table = summary(run.output());
    expect(table).toMatch(/^ {2}test:unit: +failed \(\d+\.\d s\), stopped by SIGTERM$/m);
    expect(table).toMatch(/^ {2}test:contract: +skipped, after SIGTERM$/m);
    expect(table).toMatch(/^ {2}test:bench-smoke: +skipped, after SIGTERM$/m);
    // The step's own process got the signal too, not only npm and its shell: nothing is left.
    const step = ran(dir).find((r) => r.step === 'test:unit')!.pid;
    await eventually(() => {
      try {
        process.kill(step, 0);
        return false;
      } catch {
        return true;
      }
    }, 10_000);
  }, 120_000);
});
