import type { ApiDocument } from '../openapi.js';
import type { ErrorLocation } from './errors.js';

/** Where the field a domain error names was sent, for the operation that refused it. */
export type Locate = (operationId: string | undefined, name: string) => ErrorLocation;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;
const IN: Record<string, ErrorLocation> = { query: 'query', path: 'path', header: 'header', cookie: 'header' };

interface Parameter {
  $ref?: string;
  name?: string;
  in?: string;
}

/**
 * The domain names a bad input by the contract's name for it (`limit`, `ips.3`); the location
 * is the edge's to say. Each operation's parameters (its own and its path's, `$ref`s resolved)
 * give theirs; any other name is a body field.
 */
export function fieldLocations(documents: readonly ApiDocument[]): Locate {
  const byOperation = new Map<string, Map<string, ErrorLocation>>();
  for (const document of documents) {
    const resolve = (parameter: Parameter): Parameter => {
      if (!parameter.$ref?.startsWith('#/')) return parameter;
      const target = parameter.$ref
        .slice(2)
        .split('/')
        .reduce<unknown>((node, part) => (node as Record<string, unknown> | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], document);
      return (target as Parameter | undefined) ?? {};
    };
    for (const item of Object.values(document.paths ?? {}) as Record<string, unknown>[]) {
      const shared = (item.parameters as Parameter[] | undefined) ?? [];
      for (const method of METHODS) {
        const operation = item[method] as { operationId?: string; parameters?: Parameter[] } | undefined;
        if (!operation?.operationId) continue;
        const locations = new Map<string, ErrorLocation>();
        for (const parameter of [...shared, ...(operation.parameters ?? [])].map(resolve)) {
          const location = parameter.in && IN[parameter.in];
          if (parameter.name && location) locations.set(parameter.name, location);
        }
        byOperation.set(operation.operationId, locations);
      }
    }
  }
  return (operationId, name) => {
    const locations = operationId === undefined ? undefined : byOperation.get(operationId);
    return locations?.get(name) ?? locations?.get(name.split(/[.[]/)[0]!) ?? 'body';
  };
}
