/**
 * Runs the Dockerfile's recipe in a plain shell, as no container engine runs here, then starts
 * what it built and smoke-tests it:
 *
 *   npm run test:recipe [-- --node-bin DIR]    (DIR holds the `node` and `npm` to build with)
 *
 * Each stage gets a folder of its own standing for its file system; COPY, WORKDIR, ENV and RUN
 * do there what they do in an image (RUN through `sh -c`). The last stage is then started with
 * its CMD as an unprivileged user, against a database that does not exist yet (the server must
 * create it and say so), polled with its HEALTHCHECK command until ready, and called through
 * the typed client: check, report and blacklist. Its production install must hold no dev tool.
 * A SIGTERM must stop it with exit code 0 and its shutdown steps logged in order.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createTrsClient } from '../clients/typescript/src/index.js';
import { projectRoot } from '../src/openapi.js';

const { values: args } = parseArgs({ options: { 'node-bin': { type: 'string' }, keep: { type: 'boolean', default: false } } });
const nodeBin = args['node-bin'] ? path.resolve(args['node-bin']) : path.dirname(process.execPath);
const adminUrl = process.env.TEST_DATABASE_URL ?? process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

interface Instruction {
  keyword: string;
  rest: string;
}
interface Stage {
  name: string;
  image: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
  user?: string;
  healthcheck?: string;
  cmd?: string[];
}

function log(message: string): void {
  process.stdout.write(`recipe: ${message}\n`);
}

/** The Dockerfile's instructions, continuation lines joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const lines = text.split('\n').filter((line) => !/^\s*#/.test(line));
  const joined = lines.join('\n').replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
    .map((line) => {
      const [keyword, ...rest] = line.split(/\s+/);
      return { keyword: keyword!.toUpperCase(), rest: line.slice(keyword!.length).trim() };
    });
}

function run(command: string, stage: Stage): void {
  log(`[${stage.name}] RUN ${command}`);
  const started = Date.now();
  const result = spawnSync('sh', ['-c', command], {
    cwd: inStage(stage, stage.workdir),
    env: { ...process.env, ...stage.env, PATH: `${nodeBin}:${process.env.PATH}` },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (result.status !== 0) throw new Error(`[${stage.name}] RUN ${command} exited with ${result.status}`);
  log(`[${stage.name}]   done in ${Math.round((Date.now() - started) / 1000)} s`);
}

const inStage = (stage: Stage, target: string) => path.join(stage.root, path.posix.resolve(stage.workdir, target));

function copy(rest: string, stage: Stage, stages: Map<string, Stage>): void {
  const words = rest.split(/\s+/);
  const from = words[0]!.startsWith('--from=') ? stages.get(words.shift()!.slice('--from='.length)) : undefined;
  const dest = words.pop()!;
  for (const source of words) {
    const origin = from ? inStage(from, source) : path.join(projectRoot, source);
    if (!existsSync(origin)) throw new Error(`[${stage.name}] COPY: ${source} does not exist`);
    const target = dest.endsWith('/') && !statSync(origin).isDirectory() ? path.join(inStage(stage, dest), path.basename(source)) : inStage(stage, dest);
    mkdirSync(path.dirname(target), { recursive: true });
    cpSync(origin, target, { recursive: true });
  }
}

/** Carries out the Dockerfile; returns the last stage. */
function build(work: string): Stage {
  const stages = new Map<string, Stage>();
  let stage: Stage | undefined;
  for (const { keyword, rest } of parseDockerfile(readFileSync(path.join(projectRoot, 'Dockerfile'), 'utf8'))) {
    if (keyword === 'FROM') {
      const [image, , name = `stage${stages.size}`] = rest.split(/\s+/);
      stage = { name, image: image!, root: path.join(work, name), workdir: '/', env: {} };
      mkdirSync(stage.root, { recursive: true });
      stages.set(name, stage);
      continue;
    }
    if (!stage) throw new Error(`${keyword} before FROM`);
    switch (keyword) {
      case 'WORKDIR':
        stage.workdir = path.posix.resolve(stage.workdir, rest);
        mkdirSync(inStage(stage, '.'), { recursive: true });
        break;
      case 'ENV': {
        const match = /^(\w+)[=\s](.*)$/.exec(rest);
        if (!match) throw new Error(`ENV ${rest}: expected NAME=value`);
        stage.env[match[1]!] = match[2]!.replace(/^"(.*)"$/, '$1');
        break;
      }
      case 'COPY':
        copy(rest, stage, stages);
        break;
      case 'RUN':
        run(rest, stage);
        break;
      case 'USER':
        stage.user = rest;
        break;
      case 'HEALTHCHECK':
        stage.healthcheck = rest.replace(/^.*?\bCMD\s+/, '');
        break;
      case 'CMD':
        stage.cmd = JSON.parse(rest) as string[];
        break;
      case 'EXPOSE':
        break;
      default:
        throw new Error(`the recipe runner does not know ${keyword}: teach it, or keep the Dockerfile to what it knows`);
    }
  }
  if (!stage?.cmd || !stage.healthcheck || !stage.user) throw new Error('the last stage needs CMD, HEALTHCHECK and USER');
  return stage;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

/** `USER node` where this machine has no such user: run as `nobody`, unprivileged all the same. */
function asUser(user: string, command: string[]): string[] {
  if (process.getuid?.() !== 0) return command;
  const known = spawnSync('id', ['-u', user]).status === 0 ? user : 'nobody';
  return ['setpriv', `--reuid=${known}`, `--regid=${known === 'nobody' ? 'nogroup' : known}`, '--clear-groups', '--', ...command];
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(tmpdir(), 'trs-recipe-'));
  chmodSync(work, 0o755); // the unprivileged user must reach the image's files
  const database = `trs_recipe_${randomBytes(4).toString('hex')}`;
  const databaseUrl = Object.assign(new URL(adminUrl), { pathname: `/${database}` }).toString();
  let server: ChildProcess | undefined;
  const started = Date.now();
  try {
    log(`node ${spawnSync(path.join(nodeBin, 'node'), ['--version']).stdout.toString().trim()} from ${nodeBin}`);
    const image = build(work);
    log(`built in ${Math.round((Date.now() - started) / 1000)} s`);
    const app = inStage(image, '.');
    for (const devTool of ['typescript', 'tsx', '@redocly/cli', 'vitest', 'dredd', 'patch-package']) {
      if (existsSync(path.join(app, 'node_modules', devTool))) throw new Error(`the run stage holds the dev tool ${devTool}`);
    }

    const port = await freePort();
    const env = { ...process.env, ...image.env, PATH: `${nodeBin}:${process.env.PATH}`, DATABASE_URL: databaseUrl, PORT: String(port), HOST: '127.0.0.1' };
    const output: string[] = [];
    const command = asUser(image.user!, image.cmd!);
    log(`starting ${image.cmd!.join(' ')} as ${command[0] === 'setpriv' ? command[1]!.slice('--reuid='.length) : 'this user'}`);
    const startedAt = Date.now();
    server = spawn(command[0]!, command.slice(1), { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    server.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
    const exited = new Promise<number | null>((resolve) => server!.once('exit', (code) => resolve(code)));

    let healthy = false;
    for (let i = 0; i < 120 && !healthy && server.exitCode === null; i++) {
      healthy = spawnSync('sh', ['-c', image.healthcheck!], { env }).status === 0;
      if (!healthy) await new Promise((r) => setTimeout(r, 500));
    }
    if (!healthy) throw new Error(`the HEALTHCHECK never passed; the server wrote:\n${output.join('')}`);
    log(`healthy ${((Date.now() - startedAt) / 1000).toFixed(1)} s after start`);
    const lines = () => output.join('').split('\n').filter(Boolean);
    if (!lines().some((l) => l.includes('created the database named in DATABASE_URL'))) throw new Error('the server created its database without saying so');
    if (lines().some((l) => /end.of.support|redocly/i.test(l))) throw new Error('the server printed a Redocly notice on start');

    // The operator's first step, with the compiled CLI of the production install.
    const created = spawnSync('npx', ['--no-install', 'trs', 'keys', 'create', '--role', 'enterprise', '--json'], { cwd: app, env, encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`npx trs keys create failed: ${created.stderr}`);
    const { key } = JSON.parse(created.stdout) as { key: string };

    const trs = createTrsClient({ baseUrl: `http://127.0.0.1:${port}/api/v2`, key });
    const report = await trs.POST('/report', { body: { ip: '45.155.205.233', categories: [18, 22], comment: 'recipe smoke test' } });
    if (report.response.status !== 200) throw new Error(`POST /report answered ${report.response.status}: ${JSON.stringify(report.error)}`);
    const check = await trs.GET('/check', { params: { query: { ip: '45.155.205.233' } } });
    if (check.response.status !== 200 || check.data?.data.totalReports !== 1) throw new Error(`GET /check answered ${check.response.status}: ${JSON.stringify(check.data ?? check.error)}`);
    const blacklist = await trs.GET('/blacklist', { params: { query: { format: 'txt' } }, parseAs: 'text' });
    const etag = blacklist.response.headers.get('etag');
    if (blacklist.response.status !== 200 || !etag) throw new Error(`GET /blacklist answered ${blacklist.response.status}`);
    const again = await trs.GET('/blacklist', { params: { query: { format: 'txt' }, header: { 'If-None-Match': etag } }, parseAs: 'text' });
    if (again.response.status !== 304) throw new Error(`GET /blacklist with its ETag answered ${again.response.status}, not 304`);
    const docs = await fetch(`http://127.0.0.1:${port}/api/v2/docs`);
    if (docs.status !== 200) throw new Error(`the reference answered ${docs.status}: the build stage did not build it`);
    const signIn = await fetch(`http://127.0.0.1:${port}/account/sign-in`);
    const page = await signIn.text();
    const stylesheet = /href="(\/assets\/site\.[0-9a-f]+\.css)"/.exec(page)?.[1];
    if (signIn.status !== 200 || !stylesheet) throw new Error(`the sign-in page answered ${signIn.status}: the image lacks views/ or public/`);
    const css = await fetch(`http://127.0.0.1:${port}${stylesheet}`);
    if (css.status !== 200) throw new Error(`${stylesheet} answered ${css.status}: the image lacks public/`);
    log('smoke test passed: report, check, blacklist (200, then 304 for its ETag), reference, account pages and their assets');

    server.kill('SIGTERM');
    const code = await exited;
    if (code !== 0) throw new Error(`after SIGTERM the server exited with ${code}`);
    const order = ['stopping: no new connections', 'stopping: every request answered', 'stopping: scheduled jobs', 'stopped: database'];
    const positions = order.map((message) => lines().findIndex((l) => l.includes(message)));
    if (positions.some((p, i) => p < 0 || (i > 0 && p < positions[i - 1]!))) {
      throw new Error(`shutdown steps not logged in order (${order.join(' → ')}):\n${lines().slice(-8).join('\n')}`);
    }
    log(`stopped cleanly, steps logged in order; all in ${Math.round((Date.now() - started) / 1000)} s`);
    console.log('1 passed, 0 failed');
  } finally {
    if (server && server.exitCode === null) server.kill('SIGKILL');
    const admin = new pg.Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.end();
    if (!args.keep) rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(`recipe: ${err instanceof Error ? err.message : String(err)}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
});
