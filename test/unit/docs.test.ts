import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLE_PATTERNS, CONFIG_VARIABLES } from '../../src/config.js';

/**
 * The documentation against the repository: every relative link (and #anchor) of the README,
 * docs/ and the root pages leads somewhere, and every setting the docs name is one the
 * configuration schema reads, each of which docs/configuration.md documents. Pure: reads files.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function markdownUnder(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = path.join(dir, entry.name);
    if (entry.isDirectory()) return markdownUnder(relative);
    return entry.name.endsWith('.md') ? [relative] : [];
  });
}

/** The pages a newcomer reads: the README and docs/. Their settings are checked against the schema. */
const DOC_PAGES = ['README.md', ...markdownUnder('docs')];
/** Their links are checked too. */
const LINKED_PAGES = [...DOC_PAGES, 'ARCHITECTURE.md', 'SECURITY.md', 'BENCHMARKS.md'];

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

/** The text outside fenced code blocks, and the text of the blocks. */
function splitFences(text: string): { prose: string; code: string } {
  const prose: string[] = [];
  const code: string[] = [];
  let fence: string | undefined;
  for (const line of text.split('\n')) {
    const marker = /^\s*(`{3,}|~{3,})/.exec(line)?.[1];
    if (marker && (!fence || (marker[0] === fence[0] && marker.length >= fence.length))) {
      fence = fence ? undefined : marker;
      prose.push('');
      continue;
    }
    (fence ? code : prose).push(line);
    if (fence) prose.push('');
  }
  return { prose: prose.join('\n'), code: code.join('\n') };
}

/** Inline code spans of prose, in order. */
function codeSpans(prose: string): string[] {
  return [...prose.matchAll(/(`+)([\s\S]*?[^`])\1(?!`)/g)].map((m) => m[2]!.trim());
}

/** GitHub's heading anchor: rendered text, lower-cased, punctuation dropped, spaces to hyphens. */
export function slug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1') // links and images: their text
    .replace(/<[^>]+>/g, '') // inline HTML
    .replace(/[`*]/g, '') // code and emphasis markers (`_` stays: GitHub keeps it)
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{N}\p{M} _-]/gu, '').replace(/ /g, '-');
}

/** Every anchor a page offers: its headings' slugs (repeats numbered as GitHub does) and HTML ids. */
export function anchorsOf(text: string): Set<string> {
  const { prose } = splitFences(text);
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose.split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line);
    if (heading) {
      const base = slug(heading[1]!);
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      anchors.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const id of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id[1]!);
  }
  return anchors;
}

/** The link targets of a page: markdown links and images, and HTML src/href, outside code. */
export function linksOf(text: string): string[] {
  const prose = splitFences(text).prose.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, 'code');
  const targets = [...prose.matchAll(/!?\[(?:[^\]]|\][^(])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  for (const m of prose.matchAll(/<(?:img|a)\s[^>]*?(?:src|href)="([^"]+)"/g)) targets.push(m[1]!);
  return targets;
}

interface Files {
  exists(file: string): boolean;
  read(file: string): string;
}

/** What is wrong with each relative link of `file` (external links are not followed). */
export function brokenLinks(file: string, text: string, files: Files): string[] {
  const problems: string[] = [];
  for (const target of linksOf(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
    const [pathPart = '', anchor] = target.split('#', 2) as [string, string | undefined];
    const decoded = decodeURIComponent(pathPart);
    const resolved = decoded === '' ? file : path.normalize(decoded.startsWith('/') ? decoded.slice(1) : path.join(path.dirname(file), decoded));
    if (resolved.startsWith('..')) {
      problems.push(`${file}: ${target} leaves the repository`);
      continue;
    }
    if (!files.exists(resolved)) {
      problems.push(`${file}: ${target} (no file ${resolved})`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(files.read(resolved)).has(decodeURIComponent(anchor))) {
      problems.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  return problems;
}

/**
 * Names in the docs that look like settings but that the server's schema does not read, and why.
 * Anything else in UPPER_SNAKE_CASE that the docs name must be a setting.
 */
const NOT_SETTINGS: Record<string, string> = {
  NODE_OPTIONS: "Node.js's own (the heap limit the Dockerfile sets)",
  AWS_ACCESS_KEY_ID: "read by the AWS SDK's credential chain, not by the server",
  AWS_SECRET_ACCESS_KEY: "read by the AWS SDK's credential chain, not by the server",
  AWS_PROFILE: "read by the AWS SDK's credential chain, not by the server",
  POSTGRES_PASSWORD: "compose.yaml's variable for the postgres image and DATABASE_URL",
  TRS_KEY: 'a shell variable of the examples, holding a key',
  TRS_ENTERPRISE_KEY: 'a shell variable of the examples, holding an Enterprise key',
  TEST_DATABASE_URL: 'read by the tests (test/support/global-setup.ts)',
  TEST_EMBEDDED: 'read by the tests (test/support/global-setup.ts)',
  TEST_REQUIRE_POSTGRES: 'read by the tests (test/support/global-setup.ts), set by .ci/run',
  TEST_PGBOUNCER: 'read by the tests (test/support/database.ts): every test database behind a PgBouncer of its own',
  UPDATE_SCREENSHOTS: 'read by the browser tests (test/system/e2e-*.test.ts)',
  FUZZ_SEED: 'read by the contract fuzzer (test/integration/fuzz.test.ts)',
  FUZZ_RUNS: 'read by the contract fuzzer (test/integration/fuzz.test.ts)',
};

/** UPPER_SNAKE names (with `*` or `<…>` for a family) that a piece of code names as a variable. */
const NAME = /^\*?[A-Z][A-Z0-9]*(?:_(?:[A-Z0-9]+|\*|<[A-Z_]+>))+$|^\*(?:_[A-Z0-9]+)+$/;
const ASSIGNMENT = /(?<![\w$.-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)=/g;

/** The variables a page names: code spans that are a name (or `NAME=value`), and assignments in code. */
export function variablesOf(text: string): string[] {
  const { prose, code } = splitFences(text);
  const names: string[] = [];
  for (const span of codeSpans(prose)) {
    const whole = span.split('=', 1)[0]!;
    if (NAME.test(whole)) names.push(whole);
    for (const m of span.matchAll(ASSIGNMENT)) if (m[1] !== whole) names.push(m[1]!);
  }
  for (const m of code.matchAll(ASSIGNMENT)) names.push(m[1]!);
  return names;
}

const globRegExp = (name: string) => new RegExp(`^${name.replace(/\*|<[A-Z_]+>/g, '.+')}$`);

/** Why a name is not a setting the schema reads, or undefined when it is one. */
export function unknownSetting(name: string): string | undefined {
  if (NOT_SETTINGS[name]) return undefined;
  if (/[*<]/.test(name)) {
    if (CONFIG_VARIABLE_PATTERNS.some((p) => p.documentedAs === name)) return undefined;
    const re = globRegExp(name);
    return CONFIG_VARIABLES.some((v) => re.test(v)) ? undefined : `${name} matches no setting`;
  }
  if (CONFIG_VARIABLES.includes(name) || CONFIG_VARIABLE_PATTERNS.some((p) => p.pattern.test(name))) return undefined;
  return `${name} is not read by the configuration schema (src/config.ts)`;
}

const repository: Files = { exists: (file) => existsSync(path.join(ROOT, file)), read };

describe('the documentation', () => {
  it('keeps the README short: what it is, run it, test it, where next', () => {
    expect(read('README.md').split('\n').length).toBeLessThan(200);
  });

  it('makes GitHub\'s anchors from headings', () => {
    expect(slug('Enforcement: firewalls, CrowdSec bouncers, AbuseIPDB clients, fail2ban')).toBe(
      'enforcement-firewalls-crowdsec-bouncers-abuseipdb-clients-fail2ban',
    );
    expect(slug('The `STRIPE_PRICE_*` settings (2-core, 1,000 req/s)')).toBe('the-stripe_price_-settings-2-core-1000-reqs');
    expect([...anchorsOf('# A\n```\n# not a heading\n```\n## A\n<a id="x"></a>\n')]).toEqual(['a', 'a-1', 'x']);
  });

  it('finds a missing file and a missing anchor, and ignores links in code and external ones', () => {
    const files: Files = {
      exists: (file) => ['README.md', 'docs/a.md', 'src'].includes(file),
      read: (file) => (file === 'docs/a.md' ? '# Title\n## Some part\n' : '# Readme\n'),
    };
    const page = [
      '[ok](../README.md#readme) [ok](a.md#some-part) [ok](#title) [ok](../src) [web](https://example.com/x#y)',
      '[gone](b.md) [no anchor](a.md#other) ![img](../img.png) <img src="pic.png">',
      '`[in code](nowhere.md)`',
      '```\n[in a block](nowhere.md)\n```',
      '# Title',
    ].join('\n');
    expect(brokenLinks('docs/a.md', page, files)).toEqual([
      'docs/a.md: b.md (no file docs/b.md)',
      'docs/a.md: a.md#other (no heading #other in docs/a.md)',
      'docs/a.md: ../img.png (no file img.png)',
      'docs/a.md: pic.png (no file docs/pic.png)',
    ]);
  });

  it.each(LINKED_PAGES)('%s: every relative link and anchor resolves', (file) => {
    expect(brokenLinks(file, read(file), repository)).toEqual([]);
  });

  it('names settings in code spans and assignments, not other capitals', () => {
    const text = [
      'Set `DB_POOL_MAX`, `NODE_ENV=production`, `RELAY_*` and `STRIPE_PRICE_<BUNDLE_ID>`; not `GET` or `X-Request-Id`.',
      '`RELAY_MAIL_TRANSPORT=outbox',
      'RELAY_SMS_PROVIDER=outbox npm start` (a span over a line break)',
      '```sh\nexport RULES_SIGNING_KEY_FILE=/etc/trs/rules.pem\ncurl "$API/check?ip=1"\n```',
    ].join('\n');
    expect(variablesOf(text)).toEqual([
      'DB_POOL_MAX',
      'NODE_ENV',
      'RELAY_*',
      'STRIPE_PRICE_<BUNDLE_ID>',
      'RELAY_MAIL_TRANSPORT',
      'RELAY_SMS_PROVIDER',
      'RULES_SIGNING_KEY_FILE',
    ]);
    expect(unknownSetting('DB_POOL_MAX')).toBeUndefined();
    expect(unknownSetting('STRIPE_PRICE_SVC_MAIL_BUNDLE_1000')).toBeUndefined();
    expect(unknownSetting('RELAY_ENTERPRISE_*_CEILING')).toBeUndefined();
    expect(unknownSetting('DB_POOL_MIN')).toMatch(/not read/);
    expect(unknownSetting('NOTHING_*_LIKE_THIS')).toMatch(/matches no setting/);
  });

  it.each(DOC_PAGES)('%s: every setting it names is read by the configuration schema', (file) => {
    const unknown = variablesOf(read(file)).map(unknownSetting).filter(Boolean);
    expect([...new Set(unknown)]).toEqual([]);
  });

  it('docs/configuration.md documents every variable the schema reads', () => {
    const documented = new Set(codeSpans(splitFences(read('docs/configuration.md')).prose));
    const missing = [...CONFIG_VARIABLES, ...CONFIG_VARIABLE_PATTERNS.map((p) => p.documentedAs)].filter((name) => !documented.has(name));
    expect(missing).toEqual([]);
  });

  it('keeps its list of names that are not settings true and in use', () => {
    const named = new Set(DOC_PAGES.flatMap((file) => variablesOf(read(file))));
    for (const name of Object.keys(NOT_SETTINGS)) {
      expect(CONFIG_VARIABLES, `${name} is a setting after all`).not.toContain(name);
      expect(named.has(name), `${name} is named nowhere in the docs: drop it from NOT_SETTINGS`).toBe(true);
    }
  });
});
