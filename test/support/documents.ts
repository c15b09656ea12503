import { loadApiArtifacts } from '../../src/openapi.js';

const artifacts = loadApiArtifacts();

/** Every document the server answers, under its base, with the header its clients send keys in. */
export const DOCUMENTS = [
  { base: '/api/v2', doc: artifacts.document as any, protocol: 'api', keyHeader: 'X-Key' },
  { base: '/crowdsec/v1', doc: artifacts.protocols.crowdsec.document as any, protocol: 'crowdsec', keyHeader: 'X-Api-Key' },
  { base: '/abuseipdb/api/v2', doc: artifacts.protocols.abuseipdb.document as any, protocol: 'abuseipdb', keyHeader: 'Key' },
] as const;

/** A `$ref` of a document followed to what it names. */
export function dereferencer(doc: any) {
  const deref = (node: any): any =>
    node && typeof node.$ref === 'string' ? deref(node.$ref.slice(2).split('/').reduce((o: any, k: string) => o[k.replace(/~1/g, '/')], doc)) : node;
  return deref;
}
