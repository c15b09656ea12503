import type { Request, Response } from 'express';
import type { operations as apiOperations } from '../../generated/api.js';
import type { operations as abuseipdbOperations } from '../../generated/abuseipdb-api.js';
import type { operations as crowdsecOperations } from '../../generated/crowdsec-api.js';
import type { operations as internalOperations } from '../../generated/internal-api.js';

/** The operations of every document the server answers: /api/v2, the other protocols' and the webhooks'. */
type Operations = apiOperations & abuseipdbOperations & crowdsecOperations & internalOperations;
export type AnyOperationId = keyof Operations;

type Op<K extends AnyOperationId> = Operations[K];
type Params<K extends AnyOperationId> = Op<K> extends { parameters: infer P } ? P : never;

export type QueryOf<K extends AnyOperationId> = Params<K> extends { query?: infer Q } ? NonNullable<Q> : never;
export type PathOf<K extends AnyOperationId> = Params<K> extends { path?: infer P } ? NonNullable<P> : never;
export type BodyOf<K extends AnyOperationId> = Op<K> extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;
/** The JSON body of the operation's 200 response. */
export type ResponseOf<K extends AnyOperationId> = Op<K> extends {
  responses: { 200: { content: { 'application/json': infer R } } };
}
  ? R
  : never;
/** `data` of an envelope response. */
export type DataOf<K extends AnyOperationId> = ResponseOf<K> extends { data: infer D } ? D : never;

/** The request as the validator leaves it: parameters coerced and checked against the document. */
export type ApiRequest<K extends AnyOperationId> = Request<PathOf<K>, unknown, BodyOf<K>, QueryOf<K>>;

/** A thin handler: read the validated input, call a service, shape the response. */
export type Handler<K extends AnyOperationId> = (req: ApiRequest<K>, res: Response) => Promise<void> | void;
export type Handlers = { [K in AnyOperationId]?: Handler<K> };

