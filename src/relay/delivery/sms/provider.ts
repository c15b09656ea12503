import type { ReceiptRequest, ReceiptVerdict } from './receipts.js';

/** What the relay asks of an SMS provider; each adapter in this folder is one. */
export interface SmsProvider {
  /** The provider's id (`twilio`, `sns`, …), e.g. for a metrics label. */
  readonly name: string;
  /**
   * Sends one SMS; fails with a {@link DeliveryError} whose `retryable` says whether the same
   * message may get through later. `providerId` is the provider's id of the message, which its
   * delivery receipts name.
   */
  send(sms: { to: string; text: string; reference?: string }): Promise<{ providerId: string | null }>;
  /** Closes kept-alive connections; the provider sends nothing afterwards. */
  close(): Promise<void>;
  /**
   * Where the provider posts delivery receipts, and how one is verified and read; only for a
   * provider that posts them and was given a receipt URL (RELAY_RECEIPT_BASE_URL).
   */
  readonly receipts?: ReceiptEndpoint;
}

export interface ReceiptEndpoint {
  /** The public URL the provider was given, as it signs it (`…/webhooks/sms/<provider>`). */
  url: string;
  /** HTTP methods the provider uses for its receipts. */
  methods: readonly ('GET' | 'POST')[];
  verify(request: ReceiptRequest, now: Date): ReceiptVerdict;
}
