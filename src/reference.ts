import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Logger } from 'pino';

/** The reference's title, as `npm run docs` gives it. */
export const REFERENCE_TITLE = 'Threat-Reputation Service API v2';

/** Where `npm run docs` and `npm run build` (the Dockerfile's) write the reference. */
export const referenceFileOf = (root: string) => path.join(root, 'dist', 'reference.html');

/** How long a request waits for a build under way before it is answered 503 with Retry-After. */
export const REFERENCE_WAIT_MS = 10_000;
/** The Retry-After of that 503: a build takes 2 to 5 seconds on a small machine. */
const RETRY_AFTER_SECONDS = 5;
/** The end of redocly's output kept for the log when a build fails. */
const OUTPUT_TAIL = 4_000;

/** Redocly CLI's entry script where the dev dependencies are installed; undefined in a production install. */
export function redoclyCli(root: string): string | undefined {
  try {
    const manifest = createRequire(path.join(root, 'package.json')).resolve('@redocly/cli/package.json');
    const cli = path.join(path.dirname(manifest), 'bin', 'cli.js');
    return existsSync(cli) ? cli : undefined;
  } catch {
    return undefined;
  }
}

export type ReferenceAnswer =
  | { state: 'ready'; html: string }
  /** A build is under way and took longer than the wait. */
  | { state: 'building'; retryAfterSeconds: number; message: string }
  /** Not built, and this install cannot build it. */
  | { state: 'missing'; message: string }
  /** The build failed (once per process: it is not tried again). */
  | { state: 'failed'; message: string };

export interface ReferenceOptions {
  /** The reference built ahead (dist/reference.html); served whenever it is there. */
  file: string;
  /** The live document (the bundled YAML the server serves), which a build renders. */
  document: string;
  /** The folder redocly runs in (its redocly.yaml). */
  root: string;
  /** Redocly CLI's entry script; undefined where it is not installed. */
  cli: string | undefined;
  logger: Logger;
  /** How long a request waits for a build under way (REFERENCE_WAIT_MS). */
  waitMs?: number;
}

const NOT_BUILT =
  'The API reference has not been built, and this install cannot build it: Redocly CLI is a development dependency, ' +
  'absent from a production install (npm ci --omit=dev). Run `npm run build` (or `npm run docs`) where the development ' +
  'dependencies are installed, and put the dist/reference.html it writes in this install\'s dist/: it is served from there ' +
  'without a restart.';

/**
 * GET /api/v2/docs: the published reference. dist/reference.html (`npm run docs`, `npm run
 * build`, the container image's) is served whenever it is there, read again when it changes
 * (its modification time, size or inode), so a rebuild is served without a restart. Where it is
 * absent and Redocly CLI is installed (a development checkout after `npm install && npm start`),
 * the first request builds it from the live document, once per process: concurrent requests
 * wait for the same build, for at most `waitMs` (then 503 with Retry-After), and the result is
 * kept in memory; a failed build is not tried again. Nothing is written outside a temporary
 * folder, which is removed.
 */
export class ApiReference {
  private cached: { key: string; html: string } | undefined;
  private built: string | undefined;
  private build: Promise<string> | undefined;
  private failure: string | undefined;
  private child: ChildProcess | undefined;
  private closed = false;

  constructor(private readonly options: ReferenceOptions) {}

  async answer(): Promise<ReferenceAnswer> {
    const fromFile = await this.readBuiltFile();
    if (fromFile !== undefined) return { state: 'ready', html: fromFile };
    if (this.built !== undefined) return { state: 'ready', html: this.built };
    if (this.failure !== undefined) return { state: 'failed', message: this.failure };
    if (!this.options.cli) return { state: 'missing', message: NOT_BUILT };
    if (this.closed) return { state: 'building', retryAfterSeconds: RETRY_AFTER_SECONDS, message: 'The server is stopping.' };
    this.build ??= this.runBuild(this.options.cli).then(
      (html) => (this.built = html),
      (err: unknown) => {
        this.failure =
          'The API reference could not be built from the live document (the server log has the reason). ' +
          'Run `npm run docs` to see why; dist/reference.html is served as soon as it exists.';
        this.options.logger.error({ err }, 'could not build the API reference');
        throw err;
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const waited = await Promise.race([
      this.build.then(
        (html) => ({ state: 'ready', html }) as const,
        () => ({ state: 'failed', message: this.failure! }) as const,
      ),
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), this.options.waitMs ?? REFERENCE_WAIT_MS))),
    ]).finally(() => clearTimeout(timer));
    return (
      waited ?? {
        state: 'building',
        retryAfterSeconds: RETRY_AFTER_SECONDS,
        message: `The API reference is being built from the live document (the first request since the server started); try again in ${RETRY_AFTER_SECONDS} seconds. \`npm run docs\` builds it ahead.`,
      }
    );
  }

  /** Stops a build under way (the process is stopping); a waiting request is answered at once. */
  close(): void {
    this.closed = true;
    this.child?.kill('SIGTERM');
  }

  /** dist/reference.html when it is there and whole (a file being written is not served). */
  private async readBuiltFile(): Promise<string | undefined> {
    const { file } = this.options;
    const info = await stat(file).catch(() => undefined);
    if (!info?.isFile()) {
      this.cached = undefined;
      return undefined;
    }
    const key = `${info.ino}:${info.size}:${info.mtimeMs}`;
    if (this.cached?.key === key) return this.cached.html;
    const html = await readFile(file, 'utf8').catch(() => undefined);
    // A file still being written lacks its end: the previous one, if any, is served meanwhile.
    if (html === undefined || !/<\/html>\s*$/i.test(html)) return this.cached?.html;
    if (this.cached) this.options.logger.info({ file }, 'the API reference file changed: serving the new one');
    this.cached = { key, html };
    return html;
  }

  private async runBuild(cli: string): Promise<string> {
    const { root, logger } = this.options;
    const dir = await mkdtemp(path.join(tmpdir(), 'trs-reference-'));
    try {
      const input = path.join(dir, 'openapi.yaml');
      const output = path.join(dir, 'reference.html');
      await writeFile(input, this.options.document);
      logger.info('building the API reference from the live document (dist/reference.html is absent; `npm run docs` builds it ahead)');
      const started = performance.now();
      await new Promise<void>((resolve, reject) => {
        // Only what the tool needs from the environment: the server's settings hold secrets.
        const env = { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? dir, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' };
        const child = spawn(process.execPath, [cli, 'build-docs', input, '--inlineBundle', '--title', REFERENCE_TITLE, '--output', output], {
          cwd: root,
          env,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        this.child = child;
        let tail = '';
        const keep = (chunk: Buffer) => (tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL));
        child.stdout!.on('data', keep);
        child.stderr!.on('data', keep);
        child.once('error', reject);
        child.once('close', (code, signal) => {
          this.child = undefined;
          if (code === 0) resolve();
          else reject(new Error(`redocly build-docs ended with ${signal ?? `exit code ${code}`}: ${tail.trim()}`));
        });
      });
      const html = await readFile(output, 'utf8');
      logger.info({ ms: Math.round(performance.now() - started), bytes: html.length }, 'built the API reference');
      return html;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
