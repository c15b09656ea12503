import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Where a message stands after a provider's delivery receipt: `sent` means handed on (to the
 * provider's queue or the carrier) but not yet known to have arrived; `delivered` and
 * `undelivered` are final. Receipts can arrive out of order, so whoever stores them should not
 * let a `sent` replace a final status.
 */
export type ReceiptStatus = 'delivered' | 'undelivered' | 'sent';

export interface SmsReceipt {
  /** The id the provider gave the message when it took it (`SmsProvider.send`'s `providerId`). */
  providerId: string;
  status: ReceiptStatus;
  /** The provider's error code for an undelivered message, when it gives one. */
  error?: string;
}

/** A receipt request as it reached the server. */
export interface ReceiptRequest {
  method: string;
  /**
   * The full public URL the provider called, query included, exactly as it was configured
   * with the provider (the providers sign this URL, not the one a proxy passes on).
   */
  url: string;
  /** Header names in lower case, as node:http gives them. */
  headers: Record<string, string | string[] | undefined>;
  /** The raw body, before any parsing. */
  body: string;
}

export type ReceiptVerdict =
  | { ok: true; receipt: SmsReceipt }
  | { ok: false; status: 400 | 401; code: 'invalid_signature' | 'stale_receipt' | 'invalid_receipt'; message: string };

export const refuse = (status: 400 | 401, code: 'invalid_signature' | 'stale_receipt' | 'invalid_receipt', message: string) =>
  ({ ok: false, status, code, message }) as const;

export function header(request: ReceiptRequest, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/**
 * The parameters of a receipt body: form-encoded, or a flat JSON object (Vonage's POST-JSON
 * format), its values as strings.
 */
export function bodyParams(request: ReceiptRequest): URLSearchParams {
  if (!/^application\/json\b/i.test(header(request, 'content-type') ?? '')) return new URLSearchParams(request.body);
  const params = new URLSearchParams();
  try {
    const value: unknown = JSON.parse(request.body);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      for (const [key, field] of Object.entries(value)) {
        if (typeof field === 'string' || typeof field === 'number' || typeof field === 'boolean') params.append(key, String(field));
      }
    }
  } catch {
    // An unparsable body has no parameters; its signature check fails.
  }
  return params;
}

/** Compares in constant time, whatever the lengths (both sides are hashed first). */
export function safeEqual(a: string, b: string): boolean {
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(a), digest(b));
}
