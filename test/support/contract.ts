import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';
import { parseAddress } from '../../src/address.js';
import { loadApiArtifacts } from '../../src/openapi.js';

/**
 * Checks a body against a schema of a contract, for the responses the validator middleware
 * cannot see (streamed bodies: the blacklist in its formats, bouncers' decision streams).
 */
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addFormat('ip', (value: string) => parseAddress(value) !== undefined);
const artifacts = loadApiArtifacts();
ajv.addSchema(artifacts.document as object, 'api');
ajv.addSchema(artifacts.protocols.crowdsec.document as object, 'crowdsec');
ajv.addSchema(artifacts.protocols.abuseipdb.document as object, 'abuseipdb');

export function expectSchema(componentSchema: string, body: unknown, document: 'api' | 'crowdsec' | 'abuseipdb' = 'api'): void {
  const validate = ajv.getSchema(`${document}#/components/schemas/${componentSchema}`);
  if (!validate) throw new Error(`no schema ${componentSchema} in ${document}`);
  const ok = validate(body);
  expect(ok ? [] : validate.errors).toEqual([]);
}
