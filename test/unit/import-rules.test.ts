import { readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../../src/openapi.js';

/**
 * The import rules (.dependency-cruiser.cjs) name the business areas in one pattern; an area
 * missing from it escapes every rule about areas (a service importing the HTTP edge would pass).
 * Every folder of src/ is an area unless it is an edge or the data layer.
 */
const NOT_AREAS = new Set(['cli', 'db', 'http', 'web']);

describe('the import rules', () => {
  it('name every area of src/', () => {
    const rules = createRequire(import.meta.url)(path.join(projectRoot, '.dependency-cruiser.cjs')) as {
      forbidden: { name: string; from: { path?: string } }[];
    };
    const pattern = rules.forbidden.find((r) => r.name === 'areas-not-to-http')!.from.path!;
    const areas = new RegExp(pattern);
    const folders = readdirSync(path.join(projectRoot, 'src'), { withFileTypes: true })
      .filter((d) => d.isDirectory() && !NOT_AREAS.has(d.name))
      .map((d) => d.name);
    expect(folders.length).toBeGreaterThan(10);
    expect(folders.filter((name) => !areas.test(`src/${name}/service.ts`))).toEqual([]);
  });
});
