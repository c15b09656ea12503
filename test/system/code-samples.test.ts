import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAMPLE_BASE } from '../../scripts/code-samples.js';
import { loadApiArtifacts, projectRoot } from '../../src/openapi.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateSigningKey } from '../../src/rules/rulesets.js';
import { call } from '../support/http.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { missingTools, requireTools } from '../support/tools.js';

/**
 * The code samples the reference publishes (x-codeSamples, made by `npm run generate`) are run
 * as a reader would paste them, against a server with the relay configured and an Enterprise
 * key: every curl sample must be a request the server accepts, every Python sample (standard
 * library only) must get a 2xx (urlopen raises for anything else), and every JavaScript sample
 * must type-check against the typed client (clients/typescript) and get an answer without
 * `error`, run with the package name resolved to the client's source.
 */
const run = promisify(execFile);
const document = loadApiArtifacts().document as unknown as {
  paths: Record<string, Record<string, { 'x-codeSamples'?: { label: string; source: string }[] }>>;
};
const operations = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, samples: op['x-codeSamples'] ?? [] })),
);

let s: TestServer;
let env: NodeJS.ProcessEnv;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const missingPython = missingTools(['python3']);
const rulesDir = mkdtempSync(path.join(tmpdir(), 'trs-samples-rules-'));

beforeAll(async () => {
  [smtp, sms] = await Promise.all([startSmtp(), startSmsProvider()]);
  // What the samples read must be there: a published rule set, a stored notification configuration.
  writeFileSync(path.join(rulesDir, 'signing.pem'), generateSigningKey().privateKeyPem, { mode: 0o600 });
  writeFileSync(path.join(rulesDir, 'scan_paths.json'), JSON.stringify({ version: 1, rules: ['/.env'] }));
  s = await startTestServer({
    config: {
      relay: { mail: { smtpUrl: smtp.url, from: 'relay@example.net' }, sms: { url: sms.url, token: sms.token } },
      rules: { dir: rulesDir, signingKeyFile: path.join(rulesDir, 'signing.pem') },
    },
  });
  const key = (await s.createKey('enterprise')).key;
  env = { ...process.env, TRS_KEY: key };
  await call(s.base, '/notification-config', { key, json: { site_url: 'https://shop.example.com', recipients: ['security@example.com'] } });
});
afterAll(async () => {
  rmSync(rulesDir, { recursive: true, force: true });
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

const source = (samples: { label: string; source: string }[], label: string) => {
  const sample = samples.find((x) => x.label.startsWith(label));
  if (!sample) throw new Error(`no ${label} sample`);
  return sample.source.replaceAll(SAMPLE_BASE, s.base);
};

/**
 * Samples that cannot name what they read, so are answered 404: a delisting's status is read
 * with the token mailed to its requester (no published sample can hold one); a MISP feed's
 * event is named by a uuid of the server and the day of its listings, which its manifest gives.
 */
const NOT_HELD = new Set([
  'GET /delist-requests/{id}',
  'GET /feeds/misp/{event}.json',
  // A webhook's id is its account's own: the samples that name one (delete, test) are answered
  // 404, the answer to an id of no subscription of the key's account. The subscribing sample names
  // a public address literal (no DNS in the test).
  'DELETE /webhooks/{id}',
  'POST /webhooks/{id}/test',
]);
/** One open request per address: each language's sample asks afresh. */
const forgetDelistRequests = () => s.pool.query('delete from delist_requests');

describe('the published code samples', () => {
  it('cover every operation in curl, JavaScript and Python', () => {
    expect(operations.length).toBeGreaterThanOrEqual(22);
    for (const op of operations) expect(op.samples.map((x) => x.label), op.name).toEqual(['curl', 'JavaScript (typed client)', 'Python (standard library)']);
  });

  it.for(operations)('curl: $name is accepted', async ({ name, samples }, ctx) => {
    requireTools(ctx, missingTools(['curl']));
    await forgetDelistRequests();
    const { stdout } = await run('sh', ['-c', `${source(samples, 'curl')} -o /dev/null -w '%{http_code}'`], { env });
    if (NOT_HELD.has(name)) return expect(Number(stdout)).toBe(404);
    expect(Number(stdout)).toBeGreaterThanOrEqual(200);
    expect(Number(stdout)).toBeLessThan(300);
  });

  it.for(operations)('Python: $name succeeds', async ({ name, samples }, ctx) => {
    requireTools(ctx, missingPython);
    await forgetDelistRequests();
    const answer = run('python3', ['-c', source(samples, 'Python')], { env });
    if (NOT_HELD.has(name)) return expect(answer).rejects.toThrow(/HTTP Error 404/);
    const { stdout } = await answer;
    expect(stdout.length).toBeGreaterThan(0);
  });
});

describe('the published JavaScript samples', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'trs-samples-js-'));
  const files = operations.map((op, i) => ({ name: op.name, file: `sample-${String(i).padStart(2, '0')}.mts` }));
  let results: Record<string, string | null> = {};

  beforeAll(async () => {
    for (const [i, op] of operations.entries()) writeFileSync(path.join(dir, files[i]!.file), source(op.samples, 'JavaScript'));
    // Runs each sample in turn in one process, and notes what each threw.
    writeFileSync(
      path.join(dir, 'run.mts'),
      [
        "import { writeFileSync } from 'node:fs';",
        'const results: Record<string, string | null> = {};',
        'for (const file of process.argv.slice(2)) {',
        '  try {',
        '    await import(new URL(`./${file}`, import.meta.url).href);',
        '    results[file] = null;',
        '  } catch (err) {',
        '    results[file] = err instanceof Error ? err.message : String(err);',
        '  }',
        '}',
        "writeFileSync(new URL('./results.json', import.meta.url), JSON.stringify(results));",
      ].join('\n'),
    );
    // The package name resolves to the client's source, as a reader's installed package would.
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2023',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          lib: ['ES2023', 'DOM'],
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          typeRoots: [path.join(projectRoot, 'node_modules', '@types')],
          paths: { '@threat-reputation/client': [path.join(projectRoot, 'clients', 'typescript', 'src', 'index.ts')] },
        },
        files: [...files.map((f) => f.file), 'run.mts'],
      }),
    );
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('type-check against the typed client', async () => {
    const tsc = path.join(projectRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const result = await run(process.execPath, [tsc, '-p', path.join(dir, 'tsconfig.json')], { cwd: projectRoot }).then(
      () => '',
      (err: { stdout?: string }) => err.stdout ?? String(err),
    );
    expect(result).toBe('');
  }, 120_000);

  it('each get an answer without error', async () => {
    await forgetDelistRequests();
    await run(process.execPath, ['--import', 'tsx', path.join(dir, 'run.mts'), ...files.map((f) => f.file)], {
      cwd: projectRoot,
      env: { ...env, TSX_TSCONFIG_PATH: path.join(dir, 'tsconfig.json') },
      maxBuffer: 64 * 1024 * 1024,
    });
    results = JSON.parse(readFileSync(path.join(dir, 'results.json'), 'utf8')) as Record<string, string | null>;
    const failed = Object.fromEntries(files.filter((f) => results[f.file] !== null).map((f) => [f.name, results[f.file] ?? 'not run']));
    for (const name of NOT_HELD) {
      expect(failed[name]).toMatch(/"code":404/);
      delete failed[name];
    }
    expect(failed).toEqual({});
    expect(Object.keys(results)).toHaveLength(operations.length);
  }, 120_000);
});
