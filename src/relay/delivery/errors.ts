/**
 * A failed delivery attempt. `retryable` tells the relay worker whether sending the same
 * message again may succeed (a timeout, a 4xx SMTP reply, an HTTP 429 or 5xx) or is bound to
 * fail the same way (a refused recipient, a malformed message, an HTTP 4xx).
 */
export class DeliveryError extends Error {
  override readonly name = 'DeliveryError';

  constructor(
    message: string,
    readonly retryable: boolean,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}
