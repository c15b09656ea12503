import { Agent, fetch } from 'undici';
import { DeliveryError } from '../errors.js';

export const DEFAULT_TIMEOUT_MS = 10_000;
/** How much of an error answer's body goes into an error message. */
const BODY_EXCERPT_CHARS = 200;
const MIN_SECRET_CHARS = 6;

export interface HttpClientOptions {
  /** Names the provider in error messages: "Twilio did not answer within 10000 ms". */
  label: string;
  /** Deadline for one whole request, connecting and reading the answer included. */
  timeoutMs?: number;
  /** Credentials that must never appear in an error message, even when a provider echoes them. */
  secrets: string[];
}

export interface HttpAnswer {
  status: number;
  body: string;
}

export interface HttpClient {
  /**
   * POSTs once and returns the answer whatever its status; fails with a retryable
   * {@link DeliveryError} only when no answer came (network error, timeout).
   */
  post(url: string, headers: Record<string, string>, body: string): Promise<HttpAnswer>;
  /** A {@link DeliveryError} whose message has every credential blanked out. */
  error(message: string, retryable: boolean, cause?: unknown): DeliveryError;
  /** Closes the kept-alive connections. */
  close(): Promise<void>;
}

/**
 * The HTTP side of the REST providers: undici's fetch over an Agent of its own, so connections
 * to the provider stay open between messages (a 2FA code should not wait for a TLS handshake)
 * and close() can end them on shutdown, which the process-wide default dispatcher cannot.
 * Redirects are never followed: a 3xx is reported as the refusal it is, and the credentials in
 * the request never travel to another address.
 */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  // Providers keep idle connections for a minute or more; undici's default (4 s) would lose
  // most of them between the messages of a quiet hour.
  const agent = new Agent({ keepAliveTimeout: 30_000, keepAliveMaxTimeout: 60_000, connect: { timeout: timeoutMs } });
  // A string of a few characters is no real credential, and blanking it out everywhere would
  // garble the message.
  const secrets = options.secrets.filter((secret) => secret.length >= MIN_SECRET_CHARS);

  const error = (message: string, retryable: boolean, cause?: unknown) =>
    new DeliveryError(redact(message, secrets), retryable, cause === undefined ? undefined : { cause });

  return {
    async post(url, headers, body) {
      const signal = AbortSignal.timeout(timeoutMs);
      let response;
      try {
        response = await fetch(url, { method: 'POST', headers, body, signal, redirect: 'manual', dispatcher: agent });
      } catch (err) {
        const message = signal.aborted
          ? `${options.label} did not answer within ${timeoutMs} ms`
          : `${options.label} request failed: ${describe(err)}`;
        throw error(message, true, err);
      }
      // Once the status is known, a body that breaks off does not change the outcome: on a
      // 2xx the provider has taken the message, and sending it again would duplicate it.
      return { status: response.status, body: await response.text().catch(() => '') };
    },
    error,
    close: () => agent.close(),
  };
}

/** The credentials of `Authorization: Basic <credentials>` (RFC 7617): as secret as the password. */
export function basicCredentials(user: string, password: string): string {
  return Buffer.from(`${user}:${password}`).toString('base64');
}

/** The JSON object of an answer body, or an empty object when the body is not one. */
export function jsonObject(body: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** HTTP 429 and 5xx may pass; any other refusal would be repeated as it is. */
export function retryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** `: <the body, whitespace folded, cut at 200 characters>`, or nothing for an empty body. */
export function excerpt(body: string): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  if (flat === '') return '';
  return `: ${flat.length > BODY_EXCERPT_CHARS ? `${flat.slice(0, BODY_EXCERPT_CHARS)}…` : flat}`;
}

/** `fetch` reports network errors as "fetch failed" with the actual reason as the cause. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}

/** Blanks out each secret as it is and as a form or URL would encode it. */
export function redact(message: string, secrets: string[]): string {
  let clean = message;
  for (const secret of secrets) {
    for (const form of new Set([secret, encodeURIComponent(secret), new URLSearchParams({ s: secret }).toString().slice(2)])) {
      clean = clean.split(form).join('[redacted]');
    }
  }
  return clean;
}
