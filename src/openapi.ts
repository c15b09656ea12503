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

export interface ProtocolDocument {
  /** The bundled document, as the validator and routes read it. */
  document: ApiDocument;
  json: string;
  yaml: string;
}

export interface ApiArtifacts extends ProtocolDocument {
  /** The documents of the other protocols, each served under its own base path. */
  protocols: { crowdsec: ProtocolDocument; abuseipdb: ProtocolDocument };
  /** The inbound webhooks (payments, Stripe, SMS receipts) under WEBHOOKS_BASE: not published. */
  internal: ProtocolDocument;
}

export const API_BASE = '/api/v2';
/** CrowdSec's bouncer API (its LAPI's `/v1`), under a base of its own. */
export const CROWDSEC_BASE = '/crowdsec/v1';
/** AbuseIPDB's API v2, under a base of its own. */
export const ABUSEIPDB_BASE = '/abuseipdb/api/v2';
/** The inbound webhooks (openapi/internal/). */
export const WEBHOOKS_BASE = '/webhooks';

function loadDocument(root: string, name: string): ProtocolDocument {
  const json = readFileSync(path.join(root, 'generated', `${name}.json`), 'utf8');
  const yaml = readFileSync(path.join(root, 'generated', `${name}.yaml`), 'utf8');
  return { document: JSON.parse(json) as ApiDocument, json, yaml };
}

/** Reads the generated contracts once, at start (the reference is src/reference.ts's). */
export function loadApiArtifacts(root = projectRoot): ApiArtifacts {
  return {
    ...loadDocument(root, 'openapi'),
    protocols: { crowdsec: loadDocument(root, 'crowdsec'), abuseipdb: loadDocument(root, 'abuseipdb') },
    internal: loadDocument(root, 'internal'),
  };
}
