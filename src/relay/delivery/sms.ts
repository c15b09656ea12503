import { DeliveryError } from './errors.js';

export interface SmsConfig {
  /** The provider endpoint that takes `POST { to, text, sender?, reference? }`. */
  url: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Sender id or number, when the provider lets the relay choose one. */
  sender?: string;
  /** Deadline for the whole request, 10 s by default. */
  timeoutMs?: number;
}

export interface SmsProvider {
  /** Sends one SMS; fails with a {@link DeliveryError}. */
  send(sms: { to: string; text: string; reference?: string }): Promise<{ providerId: string | null }>;
}

const DEFAULT_TIMEOUT_MS = 10_000;
/** How much of an error answer's body goes into the error message. */
const BODY_EXCERPT_CHARS = 200;

export function createSmsProvider(config: SmsConfig): SmsProvider {
  const timeoutMs = config.timeoutMs ?? DEFAULT_TIMEOUT_MS;

  return {
    async send({ to, text, reference }) {
      const signal = AbortSignal.timeout(timeoutMs);
      let response: Response;
      try {
        response = await fetch(config.url, {
          method: 'POST',
          headers: { Authorization: `Bearer ${config.token}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ to, text, sender: config.sender, reference }),
          signal,
          // A redirect is reported as the non-2xx answer it is, not followed with the token.
          redirect: 'manual',
        });
      } catch (err) {
        const message = signal.aborted
          ? `SMS provider did not answer within ${timeoutMs} ms`
          : `SMS provider request failed: ${describe(err)}`;
        throw new DeliveryError(message, true, { cause: err });
      }
      // Once the status is known, a body that breaks off does not change the outcome: on a
      // 2xx the provider has taken the message, and sending it again would duplicate it.
      const body = await response.text().catch(() => '');
      if (!response.ok) {
        const retryable = response.status === 429 || response.status >= 500;
        throw new DeliveryError(`SMS provider answered HTTP ${response.status}${excerpt(body)}`, retryable);
      }
      return { providerId: providerId(body) };
    },
  };
}

/** `fetch` reports network errors as "fetch failed" with the actual reason as the cause. */
function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message} (${err.cause.message})` : err.message;
}

function excerpt(body: string): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  if (flat === '') return '';
  return `: ${flat.length > BODY_EXCERPT_CHARS ? `${flat.slice(0, BODY_EXCERPT_CHARS)}…` : flat}`;
}

/** The `id` of a JSON answer, when it has one. */
function providerId(body: string): string | null {
  try {
    const id: unknown = (JSON.parse(body) as { id?: unknown } | null)?.id;
    return typeof id === 'string' || typeof id === 'number' ? String(id) : null;
  } catch {
    return null;
  }
}
