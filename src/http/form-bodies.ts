import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { ApiDocument } from '../openapi.js';

/** Form bodies are parsed like PHP does (`name[]=…`, `name[0]=…`, `name[key]=…`), nested at most this deep. */
const FORM_DEPTH = 3;
const FORM_PARAMETERS_MAX = 2_000;
const FORM = 'application/x-www-form-urlencoded';

/** The parser of `application/x-www-form-urlencoded` bodies, bounded like the JSON one. */
export function formParser(limit: number): RequestHandler {
  // `depth` is body-parser 2's option; its type declarations predate it.
  const options = { extended: true, depth: FORM_DEPTH, parameterLimit: FORM_PARAMETERS_MAX, limit, type: FORM };
  return express.urlencoded(options as Parameters<typeof express.urlencoded>[0]);
}

type Schema = { $ref?: string; type?: string | string[]; properties?: Record<string, Schema> };

/**
 * For each operation that takes a form: its top-level fields whose schema is an array. A form
 * cannot tell one value from a list of one (`ips=1.2.3.4`), so a single value of such a field
 * becomes a list of one before the validator reads the body; everything else the validator
 * checks and coerces as it does for JSON, against the same schema.
 */
export function formArrayFields(document: ApiDocument): Map<string, string[]> {
  const deref = (node: Schema | undefined): Schema | undefined => {
    if (!node?.$ref) return node;
    const target = node.$ref.slice(2).split('/').reduce<unknown>((o, k) => (o as Record<string, unknown>)?.[k.replace(/~1/g, '/')], document);
    return deref(target as Schema);
  };
  const fields = new Map<string, string[]>();
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, { requestBody?: Schema & { content?: Record<string, { schema?: Schema }> } }>)) {
      const body = deref(op?.requestBody as Schema) as { content?: Record<string, { schema?: Schema }> } | undefined;
      const schema = deref(body?.content?.[FORM]?.schema);
      if (!schema?.properties) continue;
      const arrays = Object.entries(schema.properties)
        .filter(([, property]) => deref(property)?.type === 'array')
        .map(([name]) => name);
      fields.set(`${method.toUpperCase()} ${path}`, arrays);
    }
  }
  return fields;
}

/** Turns single values of array fields of a form body into lists of one (see formArrayFields). */
export function formArrays(fields: string[]): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    if (fields.length && req.is(FORM) && req.body && typeof req.body === 'object') {
      const body = req.body as Record<string, unknown>;
      for (const name of fields) {
        if (Object.hasOwn(body, name) && !Array.isArray(body[name]) && typeof body[name] !== 'object') body[name] = [body[name]];
      }
    }
    next();
  };
}
