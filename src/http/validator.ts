import { createRequire } from 'node:module';
import url from 'node:url';
import type { Application, NextFunction, Request, RequestHandler, Response } from 'express';
import type * as ValidatorModule from 'express-openapi-validator';
import type { OpenApiContext } from 'express-openapi-validator/dist/framework/openapi.context.js';
import type { Spec } from 'express-openapi-validator/dist/framework/openapi.spec.loader.js';
import { runChain } from './chain.js';

type Options = Parameters<typeof ValidatorModule.middleware>[0];

/**
 * The library's request step parses each request's URL with the legacy `url.parse()`. Since Node.js
 * 24, `url.parse()` decides at each call whether to warn about it (DEP0169) by capturing the
 * caller's stack and looking for `node_modules` in it, until one call from outside a package has
 * warned: from a package, every call pays the capture (2.2 µs a call in a small script, 7% of a
 * `/check`'s CPU in the server). One call from here, with deprecation warnings silenced for its
 * duration, is that call: later calls skip the capture, and nothing is printed. Nothing of this
 * server calls `url.parse()` itself (it uses WHATWG URLs). Harmless on Node.js 20 (it warns by a
 * flag alone).
 */
function settleUrlParseWarning(): void {
  const silenced = process.noDeprecation;
  process.noDeprecation = true;
  try {
    url.parse('/');
  } finally {
    process.noDeprecation = silenced;
  }
}
settleUrlParseWarning();

/**
 * express-openapi-validator's middleware, its steps called directly.
 *
 * `OpenApiValidator.middleware()` returns steps (path parameters, metadata, security, multipart,
 * request, response) that each wait on the loaded document with a promise of their own on every
 * request, however long ago it loaded: four to five promises and microtasks per request, and the
 * metadata step finds the request's operation by trying every route of the document in turn.
 * Here the document is loaded once by the library's own loader, and the same steps the library
 * would build (`OpenApiValidator`'s methods, with its normalised options) run one after the other
 * with nothing in between. Security is not among them: this server passes `validateSecurity:
 * false` (its guards are its own), and the library's step does nothing then.
 *
 * The operation of a request whose path is one of the document's own paths without parameters
 * (`/api/v2/check`) is looked up once per method and path by the library's step, then kept:
 * the answer is a function of the two. A path with parameters, or any other path, goes to the
 * library's step every time.
 *
 * What the library's steps do is unchanged; what this relies on (the internals named in
 * `Internals`) is checked by test/unit/validator.test.ts, which fails on an upgrade that moves them.
 */
export function openApiValidator(app: Application, options: Options): RequestHandler {
  const internals = load();
  const validator = new internals.OpenApiValidator(options) as unknown as ValidatorInternals;
  if (validator.options.validateSecurity) throw new Error('openApiValidator: security validation is not among the steps run here');
  let steps: RequestHandler[] | undefined;
  let failed: unknown;
  const ready = new internals.OpenApiSpecLoader({
    apiDoc: structuredClone(options.apiSpec),
    validateApiSpec: options.validateApiSpec,
    $refParser: options.$refParser,
  })
    .load()
    .then((spec) => {
      const resOpts = validator.options.validateResponses;
      const processed = new internals.SchemaPreprocessor(spec.apiDoc, validator.ajvOpts.preprocessor, resOpts).preProcess();
      const context = new internals.OpenApiContext(spec, validator.options.ignorePaths, validator.options.ignoreUndocumented, validator.options.useRequestUrl);
      validator.installPathParams(app, context);
      const built: RequestHandler[] = [knownOperations(validator.metadataMiddleware(context, processed.apiDocRes), context)];
      if (validator.options.fileUploader) built.push(validator.multipartMiddleware(context.apiDoc));
      if (validator.options.validateRequests) built.push(validator.requestValidationMiddleware(context.apiDoc));
      if (validator.options.validateResponses) built.push(validator.responseValidationMiddleware(processed.apiDocRes, context.serial));
      steps = built;
    })
    .catch((err: unknown) => {
      failed = err;
    });
  return (req, res, next) => {
    if (steps) return runChain(steps, req, res, next);
    if (failed !== undefined) return next(failed);
    ready.then(() => (steps ? runChain(steps, req, res, next) : next(failed)), next);
  };
}

/** What the metadata step leaves on a request: its operation as the document describes it. */
interface Metadata {
  openApiRoute: string;
  pathParams: Record<string, string>;
  [more: string]: unknown;
}

/**
 * The metadata step, with the operations of the document's parameterless paths kept (above). What
 * is kept is bounded by the document: one entry per operation on such a path (a method the path
 * does not take is refused by the library's step, and nothing is kept for it).
 */
function knownOperations(metadata: RequestHandler, context: OpenApiContext): RequestHandler {
  const literal = new Set(context.routes.filter((route) => route.pathParams.length === 0 && !route.openApiRoute.includes('{')).map((route) => route.openApiRoute));
  // Per method, then per path: no key string made per request.
  const known = new Map<string, Map<string, Metadata>>();
  return (req: Request, res: Response, next: NextFunction) => {
    const path = pathOf(req, context.useRequestUrl);
    if (!literal.has(path)) return metadata(req, res, next);
    const kept = known.get(req.method)?.get(path);
    if (kept) {
      const openapi = { ...kept, pathParams: {} };
      (req as { openapi?: Metadata }).openapi = openapi;
      req.params = openapi.pathParams;
      return next();
    }
    metadata(req, res, (err?: unknown) => {
      const openapi = (req as { openapi?: Metadata }).openapi;
      if (err === undefined && openapi?.openApiRoute === path) {
        let ofMethod = known.get(req.method);
        if (!ofMethod) known.set(req.method, (ofMethod = new Map()));
        ofMethod.set(path, { ...openapi });
      }
      next(err);
    });
  };
}

/** The path the library's metadata step matches (its `lookupRoute`). */
const pathOf = (req: Request, useRequestUrl: boolean) => {
  const url = useRequestUrl ? req.url : req.originalUrl;
  const query = url.indexOf('?');
  return query < 0 ? url : url.slice(0, query);
};

/** The parts of the library this builds on (not part of its typed surface, or private in it). */
interface ValidatorInternals {
  options: {
    validateSecurity: unknown;
    validateRequests: unknown;
    validateResponses: unknown;
    fileUploader: unknown;
    ignorePaths: unknown;
    ignoreUndocumented: boolean;
    useRequestUrl: boolean;
  };
  ajvOpts: { preprocessor: unknown };
  installPathParams(app: Application, context: OpenApiContext): void;
  metadataMiddleware(context: OpenApiContext, responseApiDoc: unknown): RequestHandler;
  multipartMiddleware(apiDoc: unknown): RequestHandler;
  requestValidationMiddleware(apiDoc: unknown): RequestHandler;
  responseValidationMiddleware(apiDoc: unknown, serial: number): RequestHandler;
}

export interface Internals {
  OpenApiValidator: new (options: Options) => unknown;
  OpenApiSpecLoader: new (args: { apiDoc: unknown; validateApiSpec?: boolean; $refParser?: unknown }) => { load(): Promise<Spec> };
  SchemaPreprocessor: new (apiDoc: unknown, ajvOptions: unknown, responseOptions: unknown) => { preProcess(): { apiDocRes: unknown } };
  OpenApiContext: new (spec: Spec, ignorePaths: unknown, ignoreUndocumented: boolean, useRequestUrl: boolean) => OpenApiContext;
}

/** The library's classes, from the modules its own `middleware()` uses. */
export function load(): Internals {
  const require = createRequire(createRequire(import.meta.url).resolve('express-openapi-validator'));
  return {
    OpenApiValidator: require('./openapi.validator.js').OpenApiValidator,
    OpenApiSpecLoader: require('./framework/openapi.spec.loader.js').OpenApiSpecLoader,
    SchemaPreprocessor: require('./middlewares/parsers/schema.preprocessor.js').SchemaPreprocessor,
    OpenApiContext: require('./framework/openapi.context.js').OpenApiContext,
  };
}
