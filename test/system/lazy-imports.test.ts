import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/openapi.js';

/**
 * The fixed cost of every process (the server, each test file, the command line): importing the
 * server's graph loads no optional heavy module that its settings do not ask for. The Stripe SDK
 * loads when Stripe is configured, the AWS SDK when SNS sends the SMS, the chart code (d3, the
 * world map, topojson) at the first home page.
 */
const OPTIONAL = ['stripe', '@aws-sdk/client-sns', '@smithy/core', 'd3-geo', 'd3-scale', 'd3-shape', 'topojson-client'];
const CENSUS = path.join(projectRoot, 'test', 'support', 'loaded-packages.mjs');
const work = mkdtempSync(path.join(tmpdir(), 'trs-lazy-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * The npm packages a process loads importing `file`: those imported as ES modules (a loader hook
 * writes each URL it loads to a file) and those required (loaded-packages.mjs's census).
 */
function packagesLoadedBy(file: string): string[] {
  const log = path.join(work, `${path.basename(file)}.log`);
  const hooks = path.join(work, 'hooks.mjs');
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.includes('/node_modules/')) appendFileSync(${JSON.stringify(log)}, url + '\\n');
  return next(url, context);
}
`,
  );
  const register = path.join(work, 'register.mjs');
  writeFileSync(register, `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`);
  writeFileSync(log, '');
  const url = pathToFileURL(path.join(projectRoot, file)).href;
  const result = spawnSync(
    process.execPath,
    ['--import', register, '--import', 'tsx', '--import', CENSUS, '--input-type=module', '-e', `await import(${JSON.stringify(url)});`],
    { cwd: projectRoot, env: { PATH: process.env.PATH, HOME: process.env.HOME }, encoding: 'utf8', timeout: 60_000 },
  );
  expect(result.status, result.stderr).toBe(0);
  const required = /^loaded packages: (.*)$/m.exec(result.stderr)?.[1]?.split(' ') ?? [];
  const imported = readFileSync(log, 'utf8')
    .split('\n')
    .map((line) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined);
  return [...new Set([...required, ...imported])];
}

describe('importing the graph', () => {
  it.each([
    ['src/start.ts', 'express'],
    ['src/cli/program.ts', 'commander'],
  ])('%s loads none of the optional heavy modules', (file, surely) => {
    const packages = packagesLoadedBy(file);
    expect(packages).toContain(surely); // the census works, and the graph was loaded
    expect(packages).toContain('zod'); // ES modules are counted too
    expect(packages.filter((p) => OPTIONAL.includes(p))).toEqual([]);
  });
});
