import { createRequire } from 'node:module';

/**
 * express-openapi-validator 5.6 finds the operation of a request by compiling every route of
 * the document with path-to-regexp's `pathToRegexp`, on every request (upstream pull request
 * cdimascio/express-openapi-validator#1217, not released). That compilation was the largest
 * single cost of a `/check`.
 *
 * The validator calls the function through the module object it required
 * (`(0, path_to_regexp_1.pathToRegexp)(…)`), so replacing that export with a memoised one
 * fixes it at run time: no install-time patch, nothing to re-apply after `npm ci --omit=dev`.
 * `pathToRegexp` is a pure function of its arguments and its result (a non-global RegExp and
 * the key list) is only read, so sharing one result is safe. Express's router uses `match`,
 * which is left alone. `test/unit/route-matchers.test.ts` fails when a validator upgrade
 * stops calling through the export, which is the moment to drop this file.
 */

type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => { regexp: RegExp; keys: unknown[] };

export interface RouteMatcherStats {
  /** Patterns compiled (each pattern and option set once). */
  compiled: number;
  /** Calls answered from the memo. */
  reused: number;
}

/** Patterns are the document's routes: a few dozen. The bound only guards against misuse. */
const MAX_ENTRIES = 1_000;

const stats: RouteMatcherStats = { compiled: 0, reused: 0 };
let installed = false;

/**
 * The memo's key for the options: the validator passes `{ sensitive, strict }` on every call of
 * every request, so those two are spelt as two characters; anything else falls back to JSON.
 */
function optionsKey(options: Record<string, unknown> | undefined): string {
  if (!options) return '\u0000';
  for (const name in options) if (name !== 'sensitive' && name !== 'strict') return `\u0000${JSON.stringify(options)}`;
  return `\u0001${options.sensitive ? 's' : '-'}${options.strict ? 't' : '-'}`;
}

/** Memoises `pathToRegexp` in the copy of path-to-regexp that express-openapi-validator loads. Idempotent. */
export function memoiseValidatorRouteMatchers(): RouteMatcherStats {
  if (installed) return stats;
  const fromValidator = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
  const module = fromValidator('path-to-regexp') as { pathToRegexp: PathToRegexp };
  const original = module.pathToRegexp;
  const memo = new Map<string, ReturnType<PathToRegexp>>();
  module.pathToRegexp = (path, options) => {
    if (typeof path !== 'string') return original(path, options);
    const key = path + optionsKey(options);
    const known = memo.get(key);
    if (known) {
      stats.reused++;
      return known;
    }
    const result = original(path, options);
    stats.compiled++;
    if (memo.size < MAX_ENTRIES) memo.set(key, result);
    return result;
  };
  installed = true;
  return stats;
}
