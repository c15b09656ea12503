/**
 * Makes generated/ from openapi/: for each document (the API, the CrowdSec and AbuseIPDB
 * protocols, and the inbound webhooks') the bundled document (YAML and JSON; the API's with code samples for every
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
import { accessRules, type OperationId } from '../src/http/access.js';
import type { ApiDocument } from '../src/openapi.js';
import { operationSamples } from './code-samples.js';
import { accessBullets, relayTiersTable, rolesTable, type ChargeNotes } from './reference-text.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/**
 * Writes into the bundled document what the code's tables say: each operation's access and
 * cost at its `{{access}}` (from `x-access`/`x-charge`, checked as the server reads them), the
 * role table at `{{roles}}` and the relay tiers at `{{relay-tiers}}`. A placeholder left over,
 * or an operation without `{{access}}`, fails the generation.
 */
function writeFromTables(bundled: YAML.Document): void {
  const document = bundled.toJS() as ApiDocument;
  const rules = accessRules(document);
  const fill = (text: string, placeholder: string, value: string) => text.split('\n').map((line) => (line.trim() === placeholder ? value : line)).join('\n');
  for (const [route, item] of Object.entries(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = (item as Record<string, { operationId?: string; description?: string; 'x-charge'?: ChargeNotes } | undefined>)[method];
      if (!operation?.operationId) continue;
      const description = operation.description ?? '';
      if (!description.split('\n').some((line) => line.trim() === '{{access}}')) {
        throw new Error(`${operation.operationId}: its description has no {{access}} line for its access and cost`);
      }
      const rule = rules[operation.operationId as OperationId];
      if (!rule) throw new Error(`${operation.operationId}: no access rule`);
      const bullets = accessBullets(rule, operation['x-charge'] ?? {});
      bundled.setIn(['paths', route, method, 'description'], fill(description, '{{access}}', bullets));
    }
  }
  bundled.setIn(['info', 'description'], fill(String(bundled.getIn(['info', 'description'])), '{{roles}}', rolesTable()));
  const tags = (document.tags ?? []) as { name: string; description?: string }[];
  tags.forEach((tag, i) => {
    if (tag.description?.includes('{{relay-tiers}}')) bundled.setIn(['tags', i, 'description'], fill(tag.description, '{{relay-tiers}}', relayTiersTable()));
  });
  const left = /\{\{[a-z-]+\}\}/.exec(bundled.toString());
  if (left) throw new Error(`the bundled document still holds ${left[0]}`);
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');
const work = mkdtempSync(path.join(tmpdir(), 'trs-generate-'));

/** The documents: the API itself, and the other protocols' under their own base paths. */
const DOCUMENTS = [
  { root: 'openapi/openapi.yaml', name: 'openapi', types: 'generated/api.ts', samples: true, clientCopy: 'clients/typescript/src/api.ts' },
  { root: 'openapi/crowdsec/openapi.yaml', name: 'crowdsec', types: 'generated/crowdsec-api.ts', samples: false },
  { root: 'openapi/abuseipdb/openapi.yaml', name: 'abuseipdb', types: 'generated/abuseipdb-api.ts', samples: false },
  // The inbound webhooks (payments, Stripe, SMS receipts): not published, but the same edge.
  { root: 'openapi/internal/openapi.yaml', name: 'internal', types: 'generated/internal-api.ts', samples: false },
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
    // The API's reference says what the code's tables say; the other protocols state no access.
    if (spec.samples) writeFromTables(bundled);
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
