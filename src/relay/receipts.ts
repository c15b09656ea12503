import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ReceiptEndpoint } from './delivery/sms.js';
import type { RelayRepository } from './repository.js';
import type { DeliveryMetrics } from './worker.js';

/** A receipt body is a handful of fields; anything larger is not one. */
export const RECEIPT_BODY_LIMIT = 16 * 1024;

/** A receipt as it came: its method, the query of its URL, its headers and raw body. */
export interface ReceivedReceipt {
  provider: string;
  method: string;
  /** `?…` of the request's URL, or ''. */
  query: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export type ReceiptOutcome =
  | { ok: true; matched: boolean }
  | { ok: false; status: 400 | 401 | 404 | 405; code: string; message: string; allow?: string };

/**
 * `/webhooks/sms/<provider>` (openapi/internal/): the configured SMS provider's delivery
 * receipts. Only the configured provider's path exists, with exactly that spelling; a receipt is
 * believed only once its signature verifies against the public URL the provider was given
 * (never the Host of the request, which a caller chooses) and the raw body.
 */
export class SmsReceipts {
  constructor(
    private readonly receipts: { provider: string; endpoint: ReceiptEndpoint } | undefined,
    private readonly messages: RelayRepository,
    private readonly clock: Clock,
    private readonly logger: Logger,
    private readonly metrics?: DeliveryMetrics,
  ) {}

  async receive(request: ReceivedReceipt): Promise<ReceiptOutcome> {
    if (!this.receipts || request.provider !== this.receipts.provider) {
      return { ok: false, status: 404, code: 'not_found', message: `No SMS provider posts receipts to /webhooks/sms/${request.provider} on this server.` };
    }
    const { provider, endpoint } = this.receipts;
    const method = request.method.toUpperCase();
    if (!(endpoint.methods as readonly string[]).includes(method)) {
      const allow = endpoint.methods.join(', ');
      return { ok: false, status: 405, code: 'method_not_allowed', message: `Receipts are ${endpoint.methods.join(' or ')} requests.`, allow };
    }
    const verdict = endpoint.verify({ method, url: endpoint.url + request.query, headers: request.headers, body: request.body }, this.clock.now());
    if (!verdict.ok) {
      this.logger.warn({ provider, code: verdict.code }, 'SMS delivery receipt refused');
      return { ok: false, status: verdict.status, code: verdict.code, message: verdict.message };
    }
    const matched = await this.messages.recordReceipt(provider, verdict.receipt, this.clock.now());
    if (matched > 0) this.metrics?.relayOutcomes.inc({ channel: 'sms', outcome: verdict.receipt.status });
    this.logger.info({ provider, providerId: verdict.receipt.providerId, status: verdict.receipt.status, matched }, 'SMS delivery receipt');
    // Providers retry a receipt that is not answered 2xx; one about no message of ours is done too.
    return { ok: true, matched: matched > 0 };
  }
}
