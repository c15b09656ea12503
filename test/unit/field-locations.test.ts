import { describe, expect, it } from 'vitest';
import { fieldLocations } from '../../src/http/field-locations.js';
import { loadApiArtifacts, type ApiDocument } from '../../src/openapi.js';

/** Domain errors name fields as the contract does; the edge finds where each was sent. */
describe('fieldLocations', () => {
  const document = {
    openapi: '3.1.0',
    info: { title: 't', version: '1' },
    components: { parameters: { Limit: { name: 'limit', in: 'query', schema: { type: 'integer' } } } },
    paths: {
      '/things/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        get: { operationId: 'getThing', parameters: [{ $ref: '#/components/parameters/Limit' }, { name: 'X-Site', in: 'header', schema: { type: 'string' } }] },
        post: { operationId: 'postThing' },
      },
    },
  } as unknown as ApiDocument;
  const locate = fieldLocations([document]);

  it('finds an operation parameter, through $ref, and its path item parameters', () => {
    expect(locate('getThing', 'limit')).toBe('query');
    expect(locate('getThing', 'id')).toBe('path');
    expect(locate('postThing', 'id')).toBe('path');
    expect(locate('getThing', 'X-Site')).toBe('header');
  });

  it('takes any other name, nested or not, and any unknown operation, as a body field', () => {
    expect(locate('postThing', 'ips.3')).toBe('body');
    expect(locate('postThing', 'limit')).toBe('body');
    expect(locate(undefined, 'limit')).toBe('body');
    expect(locate('getThing', 'limit.0')).toBe('query');
  });

  it('reads the real documents: the names the services give their errors land where the contract puts them', () => {
    const api = loadApiArtifacts();
    const real = fieldLocations([api.document, api.protocols.crowdsec.document, api.protocols.abuseipdb.document, api.internal.document]);
    expect(real('checkBlock', 'network')).toBe('query');
    expect(real('listReports', 'ip')).toBe('path');
    expect(real('bulkCheckIps', 'ips')).toBe('body');
    expect(real('getBlacklist', 'since')).toBe('query');
    expect(real('getDecisions', 'ip')).toBe('query');
    expect(real('receiveSmsReceipt', 'provider')).toBe('path');
  });
});
