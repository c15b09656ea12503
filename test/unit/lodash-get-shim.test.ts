import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

const require = createRequire(import.meta.url);
/** What express-openapi-validator gets for `require('lodash.get')`: the shim in vendor/. */
const shim = createRequire(require.resolve('express-openapi-validator'))('lodash.get') as (o: unknown, p: unknown, d?: unknown) => unknown;
/** The behaviour it must keep: lodash's own get. */
const lodashGet = require('lodash/get') as typeof shim;

describe('the lodash.get shim', () => {
  it('is the shim, not the deprecated package', () => {
    expect(createRequire(require.resolve('express-openapi-validator'))('lodash.get/package.json').version).toMatch(/es-toolkit/);
  });

  const doc = {
    paths: { '/check': { get: { responses: { '200': { content: { 'application/json': { schema: { type: 'object' } } } } } } } },
    components: { schemas: { 'Check.Result': { type: 'object' }, List: { items: [{ a: 1 }, { a: 2 }] } } },
  };
  // The shapes the validator passes: traversal paths as arrays, `$ref`s turned into dotted
  // strings, bracket indices, keys with dots, missing paths and no path at all.
  const cases: [unknown, unknown][] = [
    [['paths', '/check', 'get', 'responses', '200'], undefined],
    ['components.schemas.List', undefined],
    ['components.schemas.List.items[1].a', undefined],
    [['components', 'schemas', 'Check.Result'], undefined],
    ['components.schemas.Missing.type', 'fallback'],
    [undefined, undefined],
    [[], undefined],
    ['paths["/check"].get', undefined],
  ];
  it.each(cases)('answers %j as lodash does', (path, fallback) => {
    expect(shim(doc, path, fallback)).toEqual(lodashGet(doc, path, fallback));
  });
});
