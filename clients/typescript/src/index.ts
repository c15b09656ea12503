/**
 * A typed client for the Threat-Reputation Service API v2: openapi-fetch over the types
 * generated from the OpenAPI document, with the key sent in the `X-Key` header and `429`
 * answers retried after the server's `Retry-After`, up to a limit.
 *
 *   const trs = createTrsClient({ baseUrl: 'https://trs.example.net/api/v2', key: process.env.TRS_KEY });
 *   const { data, error } = await trs.GET('/check', { params: { query: { ip: '203.0.113.9' } } });
 */
import createClient, { type Client } from 'openapi-fetch';
import type { paths } from './api.js';

export type { paths, components, operations } from './api.js';

export interface RetryOptions {
  /** Retries of a request answered `429` (default 2; 0 turns retrying off). */
  max?: number;
  /**
   * The longest `Retry-After` worth waiting for, in seconds (default 60). A longer one (a
   * daily quota used up answers with the time to the next UTC day) returns the `429` at once.
   */
  maxWaitSeconds?: number;
}

export interface TrsClientOptions {
  /** The API base, e.g. `https://trs.example.net/api/v2`. */
  baseUrl: string;
  /** The API key, sent as `X-Key`; omit it for the public operations. */
  key?: string;
  retry?: RetryOptions;
  /** Further headers on every request. */
  headers?: Record<string, string>;
  /** The fetch to use (default: the global one). */
  fetch?: (request: Request) => Promise<Response>;
  /** How to wait between retries (tests replace it). */
  sleep?: (ms: number) => Promise<void>;
}

export type TrsClient = Client<paths>;

const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Seconds to wait from a `Retry-After` value (seconds or an HTTP date); undefined when absent or unreadable. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

/** A fetch that retries `429` answers after their `Retry-After`, within the limits given. */
export function retryingFetch(
  send: (request: Request) => Promise<Response>,
  { max = 2, maxWaitSeconds = 60 }: RetryOptions = {},
  sleep: (ms: number) => Promise<void> = wait,
): (request: Request) => Promise<Response> {
  return async (request) => {
    for (let attempt = 0; ; attempt++) {
      // A body can be read once: each attempt sends a copy, the original stays for the next.
      const response = await send(attempt < max ? request.clone() : request);
      if (response.status !== 429 || attempt >= max) return response;
      const seconds = retryAfterSeconds(response.headers.get('retry-after'));
      if (seconds === undefined || seconds > maxWaitSeconds) return response;
      await response.body?.cancel();
      await sleep(seconds * 1000);
    }
  };
}

/** Makes a client for one server and key. */
export function createTrsClient(options: TrsClientOptions): TrsClient {
  const send = options.fetch ?? ((request: Request) => globalThis.fetch(request));
  return createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ''),
    headers: { ...options.headers, ...(options.key ? { 'X-Key': options.key } : {}) },
    fetch: retryingFetch(send, options.retry, options.sleep),
  });
}
