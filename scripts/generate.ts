/**
 * Makes generated/ from openapi/: for each document (the API, and the CrowdSec and AbuseIPDB
 * protocols) the bundled document (YAML and JSON; the API's with code samples for every
 * operation) and the TypeScript types (openapi-typescript), the API's also copied into the
 * typed client package. With --check it writes nothing and fails when any of them is stale.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import YAML from 'yaml';
import openapiTS, { astToString } from 'openapi-typescript';
import { operationSamples } from './code-samples.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const work = mkdtempSync(path.join(tmpdir(), 'trs-generate-'));

/** The documents: the API itself, and the other protocols' under their own base paths. */
const DOCUMENTS = [
  { root: 'openapi/openapi.yaml', name: 'openapi', types: 'generated/api.ts', samples: true, clientCopy: 'clients/typescript/src/api.ts' },
  { root: 'openapi/crowdsec/openapi.yaml', name: 'crowdsec', types: 'generated/crowdsec-api.ts', samples: false },
  { root: 'openapi/abuseipdb/openapi.yaml', name: 'abuseipdb', types: 'generated/abuseipdb-api.ts', samples: false },
] as const;

try {
  // Paths relative to the repository root.
  const outputs: Record<string, string> = {};
  for (const spec of DOCUMENTS) {
    const bundledYaml = path.join(work, `${spec.name}.yaml`);
    execFileSync(
      path.join(root, 'node_modules', '.bin', 'redocly'),
      ['bundle', spec.root, '--output', bundledYaml],
      { cwd: root, env: { ...process.env, REDOCLY_TELEMETRY: 'off' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const bundled = YAML.parseDocument(readFileSync(bundledYaml, 'utf8'));
    const header = '// Generated from openapi/ by `npm run generate`. Do not edit.\n';
    const types = header + astToString(await openapiTS(bundled.toJS() as never, { alphabetize: false }));
    if (spec.samples) {
      // Code samples for the reference, made from the document (scripts/code-samples.ts).
      for (const { path: route, method, samples } of operationSamples(bundled.toJS() as Record<string, unknown>)) {
        bundled.setIn(['paths', route, method, 'x-codeSamples'], samples);
      }
    }
    const yamlText = bundled.toString({ lineWidth: 0 });
    const document = YAML.parse(yamlText) as Record<string, unknown>;
    outputs[`generated/${spec.name}.yaml`] = '# Generated from openapi/ by `npm run generate`. Do not edit.\n' + yamlText;
    outputs[`generated/${spec.name}.json`] = JSON.stringify(document, null, 2) + '\n';
    outputs[spec.types] = types;
    // The typed client package carries its own copy, so that it builds and publishes alone.
    if ('clientCopy' in spec) outputs[spec.clientCopy] = types;
  }
  const stale: string[] = [];
  for (const [name, content] of Object.entries(outputs)) {
    const target = path.join(root, name);
    const current = existsSync(target) ? readFileSync(target, 'utf8') : undefined;
    if (current === content) continue;
    if (check) stale.push(name);
    else writeFileSync(target, content);
  }
  if (check && stale.length) {
    console.error(`generated/ is out of date with openapi/: ${stale.join(', ')}. Run \`npm run generate\` and commit.`);
    process.exit(1);
  }
  console.log(check ? 'generated/ is up to date' : 'generated/ written');
} finally {
  rmSync(work, { recursive: true, force: true });
}
