import { createHmac } from 'node:crypto';
import type { SmsProvider } from './provider.js';
import { basicCredentials, createHttpClient, excerpt, jsonObject, retryableStatus } from './http.js';
import { bodyParams, header, refuse, safeEqual, type ReceiptRequest, type ReceiptStatus, type ReceiptVerdict } from './receipts.js';
import type { TwilioConfig } from '../../settings.js';

export type { TwilioConfig } from '../../settings.js';

const DEFAULT_API_BASE = 'https://api.twilio.com';

/**
 * Twilio error codes a later attempt may get past; any other 4xx is a refusal that repeats
 * (e.g. 21211 invalid "To", 21408 region not enabled, 21610 recipient unsubscribed, 21614 not
 * a mobile number, 20003 bad credentials): https://www.twilio.com/docs/api/errors
 */
const RETRYABLE_CODES = new Set([
  20429, // Too Many Requests
  21611, // the sender's queue is full (more than its rate limit can send in 10 hours)
]);

export function createTwilioProvider(config: TwilioConfig): SmsProvider {
  const credentials = basicCredentials(config.accountSid, config.authToken);
  const http = createHttpClient({ label: 'Twilio', timeoutMs: config.timeoutMs, secrets: [config.authToken, credentials] });
  const url = `${config.apiBase ?? DEFAULT_API_BASE}/2010-04-01/Accounts/${encodeURIComponent(config.accountSid)}/Messages.json`;
  const headers = {
    Authorization: `Basic ${credentials}`,
    'Content-Type': 'application/x-www-form-urlencoded',
    Accept: 'application/json',
  };

  return {
    name: 'twilio',
    async send({ to, text }) {
      const form = new URLSearchParams({ To: to, Body: text });
      if (config.messagingServiceSid) form.set('MessagingServiceSid', config.messagingServiceSid);
      if (config.from) form.set('From', config.from);
      if (config.receiptUrl) form.set('StatusCallback', config.receiptUrl);

      const { status, body } = await http.post(url, headers, form.toString());
      const answer = jsonObject(body);
      if (status >= 200 && status <= 299) {
        return { providerId: typeof answer.sid === 'string' ? answer.sid : null };
      }
      // Error answers: {"code": 21211, "message": "…", "more_info": "…", "status": 400}
      const code = typeof answer.code === 'number' ? answer.code : undefined;
      const detail = typeof answer.message === 'string' ? `: ${answer.message}` : excerpt(body);
      throw http.error(
        `Twilio answered HTTP ${status}${code === undefined ? '' : `, error ${code}`}${detail}`,
        retryableStatus(status) || (code !== undefined && RETRYABLE_CODES.has(code)),
      );
    },
    close: () => http.close(),
    receipts: config.receiptUrl
      ? { url: config.receiptUrl, methods: ['POST'], verify: (request) => verifyTwilioReceipt(request, config) }
      : undefined,
  };
}

/**
 * Twilio's request signature: base64 HMAC-SHA1, keyed with the auth token, of the URL followed
 * by every POST parameter's name and value, sorted by name, without separators
 * (https://www.twilio.com/docs/usage/webhooks/webhooks-security).
 */
function signature(authToken: string, url: string, params: URLSearchParams): string {
  const names = [...new Set(params.keys())].sort();
  const data = names.map((name) => params.getAll(name).sort().map((value) => name + value).join('')).join('');
  return createHmac('sha1', authToken).update(url + data).digest('base64');
}

/**
 * The URL as configured, and with its port written out or left off: Twilio signs the URL as
 * it was given, which may or may not have carried `:443`, and its own libraries accept both.
 */
function urlVariants(url: string): string[] {
  const withoutPort = url.replace(/^(https?:\/\/[^/?#]*?)(:\d+)(?=[/?#]|$)/i, '$1');
  const defaultPort = url.toLowerCase().startsWith('https:') ? ':443' : ':80';
  const withPort = withoutPort.replace(/^(https?:\/\/[^/?#]*)/i, `$1${defaultPort}`);
  return [...new Set([url, withoutPort, withPort])];
}

/** https://www.twilio.com/docs/messaging/guides/track-outbound-message-status */
function receiptStatus(messageStatus: string): ReceiptStatus {
  if (messageStatus === 'delivered' || messageStatus === 'read') return 'delivered';
  if (messageStatus === 'undelivered' || messageStatus === 'failed' || messageStatus === 'canceled') return 'undelivered';
  return 'sent'; // accepted, scheduled, queued, sending, sent
}

/**
 * Verifies a Twilio status callback (`X-Twilio-Signature`) and reads it: `MessageSid`,
 * `MessageStatus` and, for a message that did not arrive, `ErrorCode`.
 */
export function verifyTwilioReceipt(request: ReceiptRequest, credentials: { authToken: string }): ReceiptVerdict {
  if (request.method.toUpperCase() !== 'POST') return refuse(400, 'invalid_receipt', 'Twilio status callbacks are POST requests.');
  const given = header(request, 'x-twilio-signature');
  const params = bodyParams(request);
  if (!given || !urlVariants(request.url).some((url) => safeEqual(signature(credentials.authToken, url, params), given))) {
    return refuse(401, 'invalid_signature', 'X-Twilio-Signature does not match the URL and parameters.');
  }
  const providerId = params.get('MessageSid');
  const messageStatus = params.get('MessageStatus');
  if (!providerId || !messageStatus) return refuse(400, 'invalid_receipt', 'MessageSid and MessageStatus are required.');
  const status = receiptStatus(messageStatus);
  const error = params.get('ErrorCode');
  return { ok: true, receipt: status === 'undelivered' && error ? { providerId, status, error } : { providerId, status } };
}
