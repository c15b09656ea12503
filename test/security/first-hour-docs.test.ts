import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/relay-fakes.js';
import { startTestServer, type TestServer, type TestServerOptions } from '../support/server.js';

/**
 * "The first hour": /api/v2/docs after `npm install && npm start`, with no `npm run docs`. A
 * server without dist/reference.html builds the reference from its live document at the first
 * request (Redocly CLI, a dev dependency), once, for every request that comes meanwhile; a file
 * built ahead is served whenever it is there, and a rebuilt one without a restart; where nothing
 * can build it, the answer says what to run. The one test of this suite that runs the real build.
 */
let work: string;
const servers: TestServer[] = [];

/** A stand-in for Redocly CLI: counts its runs in `runs`, then does what `body` says. */
function fakeCli(name: string, body: string): { cli: string; runs: () => number } {
  const runs = path.join(work, `${name}.runs`);
  const cli = path.join(work, `${name}.mjs`);
  writeFileSync(
    cli,
    `import { appendFileSync, writeFileSync } from 'node:fs';
appendFileSync(${JSON.stringify(runs)}, 'run\\n');
const output = process.argv[process.argv.indexOf('--output') + 1];
${body}
`,
  );
  return { cli, runs: () => (existsSync(runs) ? readFileSync(runs, 'utf8').split('\n').filter(Boolean).length : 0) };
}

async function serverWith(reference: TestServerOptions['reference']) {
  const s = await startTestServer({ reference });
  servers.push(s);
  return s;
}

const docs = (s: TestServer) => fetch(`${s.origin}/api/v2/docs`);
const page = (title: string) => `<!doctype html>\n<html><head><title>${title}</title></head><body>${title}</body></html>\n`;
const logged = (s: TestServer, message: string) => s.logs.filter((line) => line.includes(`"msg":"${message}"`)).length;

beforeAll(() => {
  work = mkdtempSync(path.join(tmpdir(), 'trs-docs-'));
});
afterAll(async () => {
  for (const s of servers) await s.close();
  rmSync(work, { recursive: true, force: true });
});

describe('a server started without a built reference', () => {
  let s: TestServer;
  let file: string;
  let built: string;

  beforeAll(async () => {
    file = path.join(work, 'dist-real', 'reference.html');
    // The real Redocly CLI; a busy machine may take longer than the 10 s a request waits.
    s = await serverWith({ file, waitMs: 120_000 });
  });

  it('answers 200 text/html at /api/v2/docs: built from the live document once, for concurrent requests alike', async () => {
    const answers = await Promise.all(Array.from({ length: 4 }, () => docs(s)));
    const bodies: string[] = [];
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy')).toContain("worker-src 'self' blob:");
      bodies.push(await res.text());
    }
    built = bodies[0]!;
    expect(new Set(bodies).size).toBe(1);
    expect(built).toContain('Threat-Reputation Service API v2');
    expect(built).toContain('verifyKey'); // the live document's operations are in it
    expect(built).not.toMatch(/<script[^>]+src="https?:/); // nothing loaded from the network
    expect(logged(s, 'built the API reference')).toBe(1);
    // Kept in memory: nothing written where the built file belongs.
    expect(existsSync(file)).toBe(false);
    expect((await docs(s)).status).toBe(200);
    expect(logged(s, 'built the API reference')).toBe(1);
  }, 180_000);

  it('serves dist/reference.html once it is there, and a rebuilt one without a restart', async () => {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, page('first build'));
    expect(await (await docs(s)).text()).toContain('first build');

    // Replaced as a build tool does it (a new file renamed over the old one)…
    writeFileSync(`${file}.tmp`, page('second build'));
    renameSync(`${file}.tmp`, file);
    expect(await (await docs(s)).text()).toContain('second build');
    // …or rewritten in place, with a newer modification time.
    writeFileSync(file, page('third build!'));
    const later = new Date(Date.now() + 5_000);
    utimesSync(file, later, later);
    expect(await (await docs(s)).text()).toContain('third build!');

    // A file still being written (no end yet) is not served: the last whole one is.
    writeFileSync(file, '<!doctype html>\n<html><head><title>half');
    const half = await docs(s);
    expect(half.status).toBe(200);
    expect(await half.text()).toContain('third build!');

    // Removed: the reference built at the first request again, without another build.
    rmSync(file);
    expect(await (await docs(s)).text()).toBe(built);
    expect(logged(s, 'built the API reference')).toBe(1);
  });
});

describe('where the reference cannot be built', () => {
  it('without Redocly CLI (a production install) says what to run, and serves the file once it is there', async () => {
    const file = path.join(work, 'dist-prod', 'reference.html');
    const s = await serverWith({ file, cli: null });
    const res = await docs(s);
    expect(res.status).toBe(404);
    const body = (await res.json()) as { meta: { message: string } };
    expect(body.meta.message).toMatch(/^The API reference has not been built, and this install cannot build it: .*Run `npm run build` \(or `npm run docs`\)/);
    expect(body.meta.message).toContain('dist/reference.html');
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, page('copied in'));
    const now = await docs(s);
    expect(now.status).toBe(200);
    expect(await now.text()).toContain('copied in');
  });

  it('a failed build answers 500 with what to run, and is not tried again on every request', async () => {
    const failing = fakeCli('failing', `process.stderr.write('boom'); process.exit(3);`);
    const s = await serverWith({ file: path.join(work, 'dist-failing', 'reference.html'), cli: failing.cli });
    for (let i = 0; i < 3; i++) {
      const res = await docs(s);
      expect(res.status).toBe(500);
      expect(((await res.json()) as { meta: { message: string } }).meta.message).toMatch(/could not be built .*Run `npm run docs` to see why/);
    }
    expect(failing.runs()).toBe(1);
    expect(s.logs.some((line) => line.includes('boom'))).toBe(true); // the tool's output is in the log
  });
});

describe('a build that takes longer than a request waits', () => {
  it('answers 503 with Retry-After meanwhile, from one build, then the page', async () => {
    const slow = fakeCli(
      'slow',
      `await new Promise((r) => setTimeout(r, 1500));
writeFileSync(output, ${JSON.stringify(page('slowly built'))});`,
    );
    const s = await serverWith({ file: path.join(work, 'dist-slow', 'reference.html'), cli: slow.cli, waitMs: 200 });
    const early = await Promise.all(Array.from({ length: 3 }, () => docs(s)));
    for (const res of early) {
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as { meta: { message: string } }).meta.message).toMatch(/^The API reference is being built from the live document .*try again in 5 seconds/);
    }
    await eventually(async () => (await docs(s)).status === 200, 30_000);
    expect(await (await docs(s)).text()).toContain('slowly built');
    expect(slow.runs()).toBe(1);
  });
});
