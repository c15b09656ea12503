import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { OpenAPIV3 } from 'express-openapi-validator/dist/framework/types.js';

/** The folder holding package.json, whether running from src/ (tsx) or dist/src/ (built). */
export const projectRoot = (() => {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
})();

export type ApiDocument = OpenAPIV3.DocumentV3_1;

export interface ApiArtifacts {
  /** The bundled document (generated/openapi.json), as the validator and routes read it. */
  document: ApiDocument;
  json: string;
  yaml: string;
  /** The published reference (`npm run docs`), when it has been built. */
  referenceHtml: string | undefined;
}

export const API_BASE = '/api/v2';

/** Reads the generated contract and its reference once, at start. */
export function loadApiArtifacts(root = projectRoot): ApiArtifacts {
  const json = readFileSync(path.join(root, 'generated', 'openapi.json'), 'utf8');
  const yaml = readFileSync(path.join(root, 'generated', 'openapi.yaml'), 'utf8');
  const referencePath = path.join(root, 'dist', 'reference.html');
  return {
    document: JSON.parse(json) as ApiDocument,
    json,
    yaml,
    referenceHtml: existsSync(referencePath) ? readFileSync(referencePath, 'utf8') : undefined,
  };
}
