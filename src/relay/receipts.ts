import express, { type Router } from 'express';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ReceiptEndpoint } from './delivery/sms.js';
import type { RelayRepository } from './repository.js';
import type { DeliveryMetrics } from './worker.js';

/** A receipt body is a handful of fields; anything larger is not one. */
const RECEIPT_BODY_LIMIT = '16kb';

/**
 * `/webhooks/sms/<provider>`, outside /api/v2: the configured SMS provider's delivery receipts.
 * Only the configured provider's path exists, with exactly that spelling; a receipt is believed
 * only once its signature verifies against the public URL the provider was given (never the
 * Host of the request, which a caller chooses).
 */
export function receiptsRouter(
  provider: string,
  endpoint: ReceiptEndpoint,
  messages: RelayRepository,
  clock: Clock,
  logger: Logger,
  metrics?: DeliveryMetrics,
): Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  const raw = express.raw({ type: ['application/x-www-form-urlencoded', 'application/json'], limit: RECEIPT_BODY_LIMIT });
  const path = `/webhooks/sms/${provider}`;
  const query = (url: string) => {
    const at = url.indexOf('?');
    return at < 0 ? '' : url.slice(at);
  };
  router.all(path, raw, async (req, res) => {
    const method = req.method.toUpperCase();
    if (!(endpoint.methods as readonly string[]).includes(method)) {
      res.status(405).set('Allow', endpoint.methods.join(', ')).json({ ok: false, code: 'method_not_allowed', message: `Receipts are ${endpoint.methods.join(' or ')} requests.` });
      return;
    }
    const verdict = endpoint.verify(
      {
        method,
        url: endpoint.url + query(req.originalUrl),
        headers: req.headers,
        body: Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '',
      },
      clock.now(),
    );
    if (!verdict.ok) {
      logger.warn({ provider, code: verdict.code }, 'SMS delivery receipt refused');
      res.status(verdict.status).json({ ok: false, code: verdict.code, message: verdict.message });
      return;
    }
    const matched = await messages.recordReceipt(provider, verdict.receipt, clock.now());
    if (matched > 0) metrics?.relayOutcomes.inc({ channel: 'sms', outcome: verdict.receipt.status });
    logger.info({ provider, providerId: verdict.receipt.providerId, status: verdict.receipt.status, matched }, 'SMS delivery receipt');
    // Providers retry a receipt that is not answered 2xx; one about no message of ours is done too.
    res.json({ ok: true, matched: matched > 0 });
  });
  return router;
}
