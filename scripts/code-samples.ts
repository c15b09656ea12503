/**
 * Code samples for every operation, made from the document itself: the parameters it marks
 * required (with their examples), the first example of the JSON request body, and whether the
 * operation needs a key. `npm run generate` writes them into the bundled document as
 * `x-codeSamples`, which the published reference (Redoc) shows beside each operation, so a
 * change to the contract changes its samples and no sample is written by hand.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Node = Record<string, unknown>;

export interface CodeSample {
  lang: string;
  label: string;
  source: string;
}

/** Where the samples send requests: the server of the README's "Run it", so they work as pasted. */
export const SAMPLE_BASE = 'http://localhost:8080/api/v2';
const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function resolve(document: Node, node: unknown): Node {
  let current = node as Node;
  for (let depth = 0; typeof current?.$ref === 'string' && depth < 10; depth++) {
    const pointer = (current.$ref as string).replace(/^#\//, '').split('/');
    current = pointer.reduce<unknown>((at, part) => (at as Node)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], document) as Node;
  }
  return current;
}

function exampleOf(document: Node, holder: Node | undefined): Json | undefined {
  if (!holder) return undefined;
  if (holder.example !== undefined) return holder.example as Json;
  const examples = holder.examples as Node | unknown[] | undefined;
  if (Array.isArray(examples)) return examples[0] as Json;
  const first = examples ? Object.values(examples)[0] : undefined;
  if (first !== undefined) return resolve(document, first).value as Json;
  const schema = holder.schema ? resolve(document, holder.schema) : undefined;
  if (schema && schema !== holder) return exampleOf(document, schema);
  return undefined;
}

export interface SampleRequest {
  method: (typeof METHODS)[number];
  /** The document's path, e.g. `/reports/{ip}`. */
  path: string;
  pathParams: Record<string, Json>;
  query: Record<string, Json>;
  body: Json | undefined;
  needsKey: boolean;
  /** Whether the success answer is JSON by default (else the samples read it as text). */
  answersJson: boolean;
}

/** The request a sample makes for one operation. */
export function sampleRequest(document: Node, path: string, method: (typeof METHODS)[number]): SampleRequest {
  const item = resolve(document, (document.paths as Node)[path]);
  const operation = resolve(document, item[method]);
  const parameters = [...((item.parameters as unknown[]) ?? []), ...((operation.parameters as unknown[]) ?? [])].map((p) => resolve(document, p));
  const pathParams: Record<string, Json> = {};
  const query: Record<string, Json> = {};
  for (const parameter of parameters) {
    if (!parameter.required) continue;
    const value = exampleOf(document, parameter);
    if (value === undefined) throw new Error(`${method.toUpperCase()} ${path}: required parameter ${String(parameter.name)} has no example`);
    if (parameter.in === 'path') pathParams[parameter.name as string] = value;
    else if (parameter.in === 'query') query[parameter.name as string] = value;
  }
  const content = resolve(document, operation.requestBody)?.content as Node | undefined;
  const body = content ? exampleOf(document, content['application/json'] as Node) : undefined;
  const security = (operation.security ?? document.security ?? []) as Node[];
  const needsKey = security.length > 0 && !security.some((requirement) => Object.keys(requirement).length === 0);
  const responses = (operation.responses ?? {}) as Node;
  const success = resolve(document, responses['200'] ?? responses['201'] ?? responses['202']);
  const answersJson = Object.keys((success?.content as Node | undefined) ?? { 'application/json': {} })[0] === 'application/json';
  return { method, path, pathParams, query, body, needsKey, answersJson };
}

function url({ path, pathParams, query }: SampleRequest): string {
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(pathParams[name])));
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  return `${SAMPLE_BASE}${filled}${search ? `?${search}` : ''}`;
}

const shellQuote = (text: string) => `'${text.replace(/'/g, `'\\''`)}'`;

function curl(request: SampleRequest): string {
  const lines = [`curl -sS${request.method === 'get' ? '' : ` -X ${request.method.toUpperCase()}`} ${shellQuote(url(request))}`];
  if (request.needsKey) lines.push(`-H "X-Key: $TRS_KEY"`);
  if (request.body !== undefined) lines.push(`-H 'Content-Type: application/json'`, `-d ${shellQuote(JSON.stringify(request.body))}`);
  return lines.join(' \\\n  ');
}

function javascript(request: SampleRequest): string {
  const options: string[] = [];
  const params: string[] = [];
  if (Object.keys(request.pathParams).length) params.push(`path: ${literal(request.pathParams, JAVASCRIPT, '    ')}`);
  if (Object.keys(request.query).length) params.push(`query: ${literal(request.query, JAVASCRIPT, '    ')}`);
  if (params.length) options.push(`params: { ${params.join(', ')} }`);
  if (request.body !== undefined) options.push(`body: ${literal(request.body, JAVASCRIPT, '    ')}`);
  if (!request.answersJson) options.push("parseAs: 'text'");
  const call = `trs.${request.method.toUpperCase()}('${request.path}'${options.length ? `, {\n    ${options.join(',\n    ')},\n}` : ''})`;
  return [
    "import { createTrsClient } from '@threat-reputation/client';",
    '',
    `const trs = createTrsClient({ baseUrl: '${SAMPLE_BASE}'${request.needsKey ? ', key: process.env.TRS_KEY' : ''} });`,
    `const { data, error } = await ${call};`,
    'if (error) throw new Error(JSON.stringify(error));',
    'console.log(data);',
  ].join('\n');
}

/** How a language writes a JSON value. */
interface Literals {
  null: string;
  true: string;
  false: string;
  string(text: string): string;
  key(name: string): string;
}
const PYTHON: Literals = { null: 'None', true: 'True', false: 'False', string: (t) => JSON.stringify(t), key: (k) => JSON.stringify(k) };
const JAVASCRIPT: Literals = {
  null: 'null',
  true: 'true',
  false: 'false',
  string: (t) => `'${JSON.stringify(t).slice(1, -1).replace(/\\"/g, '"').replace(/'/g, "\\'")}'`,
  key: (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? k : `'${k}'`),
};

/** A value as source code: on one line when short and flat, else one item a line with trailing commas. */
function literal(value: Json, lang: Literals, pad = ''): string {
  if (value === null) return lang.null;
  if (value === true) return lang.true;
  if (value === false) return lang.false;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return lang.string(value);
  const inner = `${pad}    `;
  const items = Array.isArray(value)
    ? value.map((v) => literal(v, lang, inner))
    : Object.entries(value).map(([k, v]) => `${lang.key(k)}: ${literal(v, lang, inner)}`);
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}'];
  const flat = Array.isArray(value) ? value.every((v) => typeof v !== 'object' || v === null) : Object.values(value).every((v) => typeof v !== 'object' || v === null);
  const oneLine = Array.isArray(value) ? `[${items.join(', ')}]` : items.length ? `{ ${items.join(', ')} }` : '{}';
  if (flat && pad.length + oneLine.length <= 72) return oneLine;
  return `${open}\n${items.map((item) => inner + item).join(',\n')},\n${pad}${close}`;
}

/**
 * Python with the standard library only (urllib), so that a sample runs on any Python 3 as
 * pasted: `urlopen` raises `HTTPError` for a 4xx or 5xx answer, as `raise_for_status` would.
 */
function python(request: SampleRequest): string {
  const filled = `${SAMPLE_BASE}${request.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(String(request.pathParams[name])))}`;
  const hasQuery = Object.keys(request.query).length > 0;
  // Query values as the URL carries them (a JSON true is the text "true", not Python's "True").
  const query = Object.fromEntries(Object.entries(request.query).map(([k, v]) => [k, String(v)]));
  const headers: string[] = [];
  if (request.needsKey) headers.push('"X-Key": os.environ["TRS_KEY"]');
  if (request.body !== undefined) headers.push('"Content-Type": "application/json"');
  const args = [`    ${hasQuery ? `f${JSON.stringify(`${filled}?{query}`)}` : JSON.stringify(filled)}`];
  if (request.method !== 'get') args.push(`    method=${JSON.stringify(request.method.toUpperCase())}`);
  if (headers.length) args.push(`    headers={${headers.join(', ')}}`);
  if (request.body !== undefined) args.push(`    data=json.dumps(body).encode()`);
  const imports = [
    ...(request.answersJson || request.body !== undefined ? ['import json'] : []),
    ...(request.needsKey ? ['import os'] : []),
    ...(hasQuery ? ['import urllib.parse'] : []),
    'import urllib.request',
  ];
  return [
    ...imports,
    '',
    ...(request.body !== undefined ? [`body = ${literal(request.body, PYTHON)}`] : []),
    ...(hasQuery ? [`query = urllib.parse.urlencode(${literal(query, PYTHON)})`] : []),
    'request = urllib.request.Request(',
    `${args.join(',\n')},`,
    ')',
    'with urllib.request.urlopen(request, timeout=30) as response:',
    request.answersJson ? '    print(json.load(response))' : '    print(response.read().decode())',
  ].join('\n');
}

/** The samples of one operation: curl, JavaScript with the typed client, Python with its standard library. */
export function codeSamples(request: SampleRequest): CodeSample[] {
  return [
    { lang: 'Shell', label: 'curl', source: curl(request) },
    { lang: 'JavaScript', label: 'JavaScript (typed client)', source: javascript(request) },
    { lang: 'Python', label: 'Python (standard library)', source: python(request) },
  ];
}

/** Every operation of the document, with its samples. */
export function operationSamples(document: Node): { path: string; method: (typeof METHODS)[number]; request: SampleRequest; samples: CodeSample[] }[] {
  return Object.keys(document.paths as Node).flatMap((path) =>
    METHODS.filter((method) => resolve(document, (document.paths as Node)[path])[method]).map((method) => {
      const request = sampleRequest(document, path, method);
      return { path, method, request, samples: codeSamples(request) };
    }),
  );
}
