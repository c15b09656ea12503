// Preloaded with `node --import` by a test: at exit, writes to stderr the npm packages the
// process loaded through the CommonJS loader (the ORM, pg, Express, pino …; ESM-only ones such
// as zod do not show), as `loaded packages: a b c`.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
process.on('exit', () => {
  const packages = new Set(Object.keys(require.cache).map((file) => /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(file)?.[1]).filter(Boolean));
  process.stderr.write(`loaded packages: ${[...packages].sort().join(' ')}\n`);
});
