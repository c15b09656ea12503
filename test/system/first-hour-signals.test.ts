import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileTo } from '../../scripts/support/processes.js';
import { projectRoot } from '../../src/openapi.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { eventually } from '../support/relay-fakes.js';

/**
 * "The first hour": one signal stops the server once, cleanly, with exit 0, whichever npm script
 * started it. A terminal's Ctrl-C is SIGINT to the whole process group: npm and the server both
 * get it, and npm passes its copy on to the server too. A supervisor's stop is SIGTERM to the
 * process it started, npm, which passes it on. Under `npm start` (from source, tsx) and `npm run
 * serve` (compiled; in an install of its own in a temporary folder, built there, so that no
 * dist/ is shared with another run), no process of the group may be left.
 */
let db: TestDatabase;
let install: string;
const children: ChildProcess[] = [];

interface Launched {
  child: ChildProcess;
  /** Every line npm and the server wrote, stdout and stderr. */
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm run <script>` in `cwd`, in a process group of its own, as a terminal or a service manager starts it. */
function npmRun(cwd: string, script: string, extra: Record<string, string> = {}): Launched {
  const child = spawn('npm', ['run', '--silent', script], {
    cwd,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      ...process.env,
      DATABASE_URL: db.url,
      DATA_DIR: mkdtempSync(path.join(tmpdir(), 'trs-signals-data-')),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      SHUTDOWN_DRAIN_SECONDS: '1',
      BLACKLIST_INTERVAL_MINUTES: '1440',
      npm_config_update_notifier: 'false',
      ...extra,
    },
  });
  children.push(child);
  let out = '';
  child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, output: () => out, exited };
}

const messages = (text: string) =>
  text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg: string; port?: number });

/** Waits until the server listens (its log names the port the system chose) and is ready. */
async function ready(run: Launched): Promise<string> {
  let exitedEarly = false;
  void run.exited.then(() => (exitedEarly = true));
  await eventually(() => exitedEarly || messages(run.output()).some((m) => m.msg === 'listening'), 120_000);
  if (exitedEarly) throw new Error(`the server exited before it listened:\n${run.output()}`);
  const origin = `http://127.0.0.1:${messages(run.output()).find((m) => m.msg === 'listening')!.port}`;
  await eventually(async () => (await fetch(`${origin}/readyz`).catch(() => undefined))?.status === 200, 60_000);
  return origin;
}

const groupAlive = (pgid: number) => {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Sends the stop as a terminal (SIGINT to the group) or a supervisor (SIGTERM to npm) does, and checks the one clean stop. */
async function stopsOnce(cwd: string, script: string, how: 'Ctrl-C' | 'supervisor', workers = 1) {
  const run = npmRun(cwd, script, workers > 1 ? { WORKERS: String(workers) } : {});
  const origin = await ready(run);
  expect((await fetch(`${origin}/api/v2/categories`)).status).toBe(200);
  const pgid = run.child.pid!;
  if (how === 'Ctrl-C') process.kill(-pgid, 'SIGINT');
  else process.kill(pgid, 'SIGTERM');
  const { code, signal } = await run.exited;
  const output = run.output();
  expect({ code, signal }, output).toEqual({ code: 0, signal: null });
  const msgs = messages(output).map((m) => m.msg);
  // One stop per server process; under WORKERS, the supervisor's one clean end after theirs.
  expect(msgs.filter((m) => m === 'stopped: database connections closed'), output).toHaveLength(workers);
  if (workers > 1) expect(msgs.filter((m) => m === 'stopped: every worker process has exited'), output).toHaveLength(1);
  expect(msgs.filter((m) => /second signal|did not finish in time|did not stop cleanly/.test(m)), output).toEqual([]);
  expect(output).not.toMatch(/npm (ERR|error)/);
  // Nothing of the group is left: neither the server nor a helper it started.
  await eventually(() => !groupAlive(pgid), 10_000);
}

beforeAll(async () => {
  db = await createTestDatabase();
  // An install of its own: the project's package.json and launchers, its dependencies and
  // generated documents by link, and (later) dist/ compiled into it.
  install = mkdtempSync(path.join(tmpdir(), 'trs-install-'));
  cpSync(path.join(projectRoot, 'package.json'), path.join(install, 'package.json'));
  cpSync(path.join(projectRoot, 'bin'), path.join(install, 'bin'), { recursive: true });
  for (const shared of ['node_modules', 'generated', 'views', 'public']) symlinkSync(path.join(projectRoot, shared), path.join(install, shared));
}, 60_000);

afterAll(async () => {
  // Whatever is left of a group (npm may have exited, leaving the server behind) goes.
  for (const child of children) {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  rmSync(install, { recursive: true, force: true });
  await db?.drop();
});

describe('npm run serve before a build', () => {
  it('says what is missing and what to run, without a stack trace', async () => {
    const run = npmRun(install, 'serve');
    const { code } = await run.exited;
    const output = run.output();
    expect(code).toBe(1);
    expect(output).toContain('npm run serve: dist/src/main.js is missing: this install has not been built.');
    expect(output).toContain('`npm run build`');
    expect(output).not.toMatch(/MODULE_NOT_FOUND|ERR_MODULE_NOT_FOUND|\n\s+at /);
  }, 60_000);
});

describe('npm start (from source)', () => {
  it('Ctrl-C (SIGINT to the process group): one stop, exit 0, nothing left', () => stopsOnce(projectRoot, 'start', 'Ctrl-C'), 180_000);
  it('a supervisor\'s SIGTERM to npm: one stop, exit 0, nothing left', () => stopsOnce(projectRoot, 'start', 'supervisor'), 180_000);
  it('with WORKERS=2, Ctrl-C: each process stops once, exit 0, nothing left', async (ctx) => {
    if (db.embedded) return ctx.skip('needs a PostgreSQL server: the embedded database lives in the supervisor');
    await stopsOnce(projectRoot, 'start', 'Ctrl-C', 2);
  }, 180_000);
});

describe('npm run serve (compiled)', () => {
  beforeAll(() => {
    compileTo(path.join(install, 'dist'));
    // What `npm run build` writes besides: the reference (not needed here).
    mkdirSync(path.join(install, 'dist'), { recursive: true });
    writeFileSync(path.join(install, 'dist', 'reference.html'), '<!doctype html><html><body>reference</body></html>\n');
  }, 300_000);

  it('Ctrl-C (SIGINT to the process group): one stop, exit 0, nothing left', () => stopsOnce(install, 'serve', 'Ctrl-C'), 180_000);
  it('a supervisor\'s SIGTERM to npm: one stop, exit 0, nothing left', () => stopsOnce(install, 'serve', 'supervisor'), 180_000);
});
