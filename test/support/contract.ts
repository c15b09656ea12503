import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';
import { parseAddress } from '../../src/address.js';
import { loadApiArtifacts } from '../../src/openapi.js';

/**
 * Checks a body against a schema of the contract, for the responses the validator middleware
 * cannot see (streamed bodies: the blacklist in its three formats).
 */
const ajv = new Ajv2020({ strict: false, allErrors: true });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);
ajv.addFormat('ip', (value: string) => parseAddress(value) !== undefined);
ajv.addSchema(loadApiArtifacts().document as object, 'api');

export function expectSchema(componentSchema: string, body: unknown): void {
  const validate = ajv.getSchema(`api#/components/schemas/${componentSchema}`);
  if (!validate) throw new Error(`no schema ${componentSchema}`);
  const ok = validate(body);
  expect(ok ? [] : validate.errors).toEqual([]);
}
