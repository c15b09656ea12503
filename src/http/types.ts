import type { Request, Response } from 'express';
import type { operations } from '../../generated/api.js';
import type { OperationId } from './access.js';

type Op<K extends OperationId> = operations[K];
type Params<K extends OperationId> = Op<K> extends { parameters: infer P } ? P : never;

export type QueryOf<K extends OperationId> = Params<K> extends { query?: infer Q } ? NonNullable<Q> : never;
export type PathOf<K extends OperationId> = Params<K> extends { path?: infer P } ? NonNullable<P> : never;
export type BodyOf<K extends OperationId> = Op<K> extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;
/** The JSON body of the operation's 200 response. */
export type ResponseOf<K extends OperationId> = Op<K> extends {
  responses: { 200: { content: { 'application/json': infer R } } };
}
  ? R
  : never;
/** `data` of an envelope response. */
export type DataOf<K extends OperationId> = ResponseOf<K> extends { data: infer D } ? D : never;

/** The request as the validator leaves it: parameters coerced and checked against the document. */
export type ApiRequest<K extends OperationId> = Request<PathOf<K>, unknown, BodyOf<K>, QueryOf<K>>;

/** A thin handler: read the validated input, call a service, shape the response. */
export type Handler<K extends OperationId> = (req: ApiRequest<K>, res: Response) => Promise<void> | void;
export type Handlers = { [K in OperationId]?: Handler<K> };
