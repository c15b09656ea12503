import { createHash, createHmac } from 'node:crypto';
import type { SmsProvider } from './provider.js';
import { createHttpClient, excerpt, jsonObject, retryableStatus } from './http.js';
import { bodyParams, refuse, safeEqual, type ReceiptRequest, type ReceiptStatus, type ReceiptVerdict } from './receipts.js';
import type { VonageConfig, VonageSignature, VonageSignatureMethod } from '../../settings.js';

export type { VonageConfig, VonageSignature, VonageSignatureMethod } from '../../settings.js';

const DEFAULT_API_BASE = 'https://rest.nexmo.com';

/**
 * The `status` values of a refused message a later attempt may get past: 1 throttled,
 * 5 internal error, 10 too many existing binds. Every other one (3 invalid parameters,
 * 4 invalid credentials, 6 unroutable, 7 number barred, 9 out of credit, 15 invalid sender,
 * 29 non-whitelisted destination, …) repeats: https://developer.vonage.com/en/api-errors/sms
 */
const RETRYABLE_STATUSES = new Set(['1', '5', '10']);

/**
 * GSM 03.38: its basic table, and the extension table's characters (sent as two septets).
 * Text made only of these goes as `type=text`; anything else needs `type=unicode`, which
 * Vonage would otherwise turn into question marks.
 */
const GSM7 = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà' +
    '\f^{}\\[~]|€',
);

export function createVonageProvider(config: VonageConfig): SmsProvider {
  const http = createHttpClient({ label: 'Vonage', timeoutMs: config.timeoutMs, secrets: [config.apiSecret] });
  const url = `${config.apiBase ?? DEFAULT_API_BASE}/sms/json`;
  const headers = { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' };

  return {
    name: 'vonage',
    async send({ to, text, reference }) {
      const form = new URLSearchParams({
        api_key: config.apiKey,
        api_secret: config.apiSecret,
        from: config.from,
        // E.164 without the leading "+", as the API expects.
        to: to.replace(/^\+/, ''),
        text,
      });
      if (![...text].every((char) => GSM7.has(char))) form.set('type', 'unicode');
      if (config.receiptUrl) form.set('callback', config.receiptUrl);
      if (reference) form.set('client-ref', reference);

      const { status, body } = await http.post(url, headers, form.toString());
      if (status < 200 || status > 299) {
        throw http.error(`Vonage answered HTTP ${status}${excerpt(body)}`, retryableStatus(status));
      }
      // HTTP 200 whatever became of the message; each part of it has its own status:
      // {"message-count": "1", "messages": [{"status": "0", "message-id": "…", …}]}
      const parts = jsonObject(body).messages;
      const messages = Array.isArray(parts) ? (parts as Record<string, unknown>[]) : [];
      const refused = messages.find((part) => part.status !== '0');
      if (messages.length === 0 || refused) {
        const code = typeof refused?.status === 'string' ? refused.status : undefined;
        const reason = typeof refused?.['error-text'] === 'string' ? `: ${refused['error-text']}` : excerpt(body);
        throw http.error(
          `Vonage refused the message${code === undefined ? '' : ` with status ${code}`}${reason}`,
          code !== undefined && RETRYABLE_STATUSES.has(code),
        );
      }
      const id = messages[0]?.['message-id'];
      return { providerId: typeof id === 'string' ? id : null };
    },
    close: () => http.close(),
    // Vonage sends receipts as GET, POST or POST-JSON, as chosen in its dashboard.
    receipts:
      config.receiptUrl && config.receiptSignature
        ? {
            url: config.receiptUrl,
            methods: ['GET', 'POST'],
            verify: (request, now) => verifyVonageReceipt(request, config.receiptSignature!, now),
          }
        : undefined,
  };
}

/**
 * The SMS API's signature over the parameters but `sig`: `&name=value` for each, sorted by
 * name, with `&` and `=` in values turned into `_`; then MD5 of that and the secret
 * (`md5hash`), or an HMAC of it keyed with the secret; hex
 * (https://developer.vonage.com/en/getting-started/concepts/signing-messages).
 */
function signature(params: URLSearchParams, { secret, method }: VonageSignature): string {
  const signed = [...params.entries()]
    .filter(([name]) => name !== 'sig')
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]) => `&${name}=${value.replace(/[&=]/g, '_')}`)
    .join('');
  if (method === 'md5hash') return createHash('md5').update(signed + secret).digest('hex');
  return createHmac(method, secret).update(signed).digest('hex');
}

/** https://developer.vonage.com/en/messaging/sms/guides/delivery-receipts */
function receiptStatus(status: string): ReceiptStatus {
  if (status === 'delivered') return 'delivered';
  if (status === 'expired' || status === 'failed' || status === 'rejected') return 'undelivered';
  return 'sent'; // accepted, buffered, unknown
}

/**
 * Verifies a signed Vonage delivery receipt (`sig`, `timestamp`, `nonce` among its
 * parameters; signed receipts are switched on by Vonage support) and reads it: `messageId`,
 * `status` and `err-code`. A receipt signed more than `toleranceSeconds` from `now` is
 * refused, so a captured one cannot be replayed later.
 */
export function verifyVonageReceipt(
  request: ReceiptRequest,
  credentials: VonageSignature,
  now: Date = new Date(),
  toleranceSeconds = 300,
): ReceiptVerdict {
  // Vonage sends receipts as GET (query), POST (form) or POST-JSON, as set in the dashboard.
  const params = request.method.toUpperCase() === 'GET' ? new URL(request.url).searchParams : bodyParams(request);
  const given = params.get('sig');
  if (!given || !safeEqual(signature(params, credentials), given.toLowerCase())) {
    return refuse(401, 'invalid_signature', 'The sig parameter does not match the receipt.');
  }
  const timestamp = Number(params.get('timestamp'));
  if (!Number.isInteger(timestamp) || Math.abs(now.getTime() / 1000 - timestamp) > toleranceSeconds) {
    return refuse(400, 'stale_receipt', `The receipt was signed more than ${toleranceSeconds} seconds away from now.`);
  }
  const providerId = params.get('messageId');
  const status = params.get('status');
  if (!providerId || !status) return refuse(400, 'invalid_receipt', 'messageId and status are required.');
  const mapped = receiptStatus(status);
  const error = params.get('err-code');
  return {
    ok: true,
    receipt: mapped === 'undelivered' && error ? { providerId, status: mapped, error } : { providerId, status: mapped },
  };
}
