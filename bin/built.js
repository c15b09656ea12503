import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The folder holding package.json. */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Runs a compiled entry of dist/ in this process, or, when dist/ has not been built, says so
 * and what to run instead of Node's MODULE_NOT_FOUND stack trace. Plain JavaScript, so that it
 * runs in a production install, which has no TypeScript.
 */
export async function runBuilt(entry, name) {
  const file = path.join(root, entry);
  if (existsSync(file)) {
    await import(pathToFileURL(file).href);
    return;
  }
  const canBuild = existsSync(path.join(root, 'node_modules', 'typescript'));
  console.error(
    [
      `${name}: ${entry} is missing: this install has not been built.`,
      canBuild
        ? '  Build it with `npm run build`, then run this again.'
        : '  Building needs the development dependencies (TypeScript, Redocly CLI), which `npm ci --omit=dev` leaves out:\n' +
          '  run `npm ci` and `npm run build` (then `npm prune --omit=dev` if you want them gone), or build the\n' +
          '  container image (Dockerfile), which builds in a stage of its own.',
      '  To run from source instead (development): `npm start`.',
    ].join('\n'),
  );
  process.exit(1);
}
