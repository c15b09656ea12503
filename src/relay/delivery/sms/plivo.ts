import { createHmac } from 'node:crypto';
import type { SmsProvider } from './provider.js';
import { basicCredentials, createHttpClient, excerpt, jsonObject, retryableStatus } from './http.js';
import { bodyParams, header, refuse, safeEqual, type ReceiptRequest, type ReceiptStatus, type ReceiptVerdict } from './receipts.js';
import type { PlivoConfig } from '../../settings.js';

export type { PlivoConfig } from '../../settings.js';

const DEFAULT_API_BASE = 'https://api.plivo.com';

export function createPlivoProvider(config: PlivoConfig): SmsProvider {
  const credentials = basicCredentials(config.authId, config.authToken);
  const http = createHttpClient({ label: 'Plivo', timeoutMs: config.timeoutMs, secrets: [config.authToken, credentials] });
  const url = `${config.apiBase ?? DEFAULT_API_BASE}/v1/Account/${encodeURIComponent(config.authId)}/Message/`;
  const headers = {
    Authorization: `Basic ${credentials}`,
    'Content-Type': 'application/json',
    Accept: 'application/json',
  };

  return {
    name: 'plivo',
    async send({ to, text }) {
      const message: Record<string, string> = { dst: to, text };
      if (config.powerpackUuid) message.powerpack_uuid = config.powerpackUuid;
      if (config.from) message.src = config.from;
      if (config.receiptUrl) Object.assign(message, { url: config.receiptUrl, method: 'POST' });

      const { status, body } = await http.post(url, headers, JSON.stringify(message));
      const answer = jsonObject(body);
      if (status >= 200 && status <= 299) {
        // 202: {"api_id": "…", "message": "message(s) queued", "message_uuid": ["…"]}
        const ids = answer.message_uuid;
        const id: unknown = Array.isArray(ids) ? ids[0] : undefined;
        return { providerId: typeof id === 'string' ? id : null };
      }
      // 4xx and 5xx: {"api_id": "…", "error": "…"}; 400 bad number or sender, 401 bad
      // credentials, 402 out of credit, 404 unknown account, 429 too many requests.
      const detail = typeof answer.error === 'string' ? `: ${answer.error}` : excerpt(body);
      throw http.error(`Plivo answered HTTP ${status}${detail}`, retryableStatus(status));
    },
    close: () => http.close(),
    receipts: config.receiptUrl
      ? { url: config.receiptUrl, methods: ['POST'], verify: (request) => verifyPlivoReceipt(request, config) }
      : undefined,
  };
}

/**
 * Plivo's V3 signature, as its SDKs compute it (plivo-node `validateV3Signature`): for a POST,
 * the URL without its query, `?`, the query's parameters sorted (`name=value` joined by `&`,
 * then `.` when there are any), then every body parameter sorted as `namevalue` without
 * separators; then `.` and the nonce; base64 HMAC-SHA256 keyed with the auth token.
 * https://www.plivo.com/docs/messaging/concepts/signature-validation
 */
function signature(authToken: string, url: string, params: URLSearchParams, nonce: string): string {
  const parsed = new URL(url);
  const base = `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
  const query = sortedPairs(parsed.searchParams)
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
  const fields = sortedPairs(params)
    .map(([name, value]) => name + value)
    .join('');
  const signed = fields === '' ? (query === '' ? base : `${base}?${query}`) : `${base}?${query}${query === '' ? '' : '.'}${fields}`;
  return createHmac('sha256', authToken).update(`${signed}.${nonce}`).digest('base64');
}

/** By name, and the values of a repeated name among themselves. */
function sortedPairs(params: URLSearchParams): [string, string][] {
  return [...new Set(params.keys())].sort().flatMap((name) => params.getAll(name).sort().map((value): [string, string] => [name, value]));
}

/** https://www.plivo.com/docs/messaging/api/message#the-message-object */
function receiptStatus(status: string): ReceiptStatus {
  if (status === 'delivered' || status === 'read') return 'delivered';
  if (status === 'undelivered' || status === 'failed' || status === 'rejected') return 'undelivered';
  return 'sent'; // queued, sent
}

/**
 * Verifies a Plivo message status callback (`X-Plivo-Signature-V3` with
 * `X-Plivo-Signature-V3-Nonce`; the header may list several signatures, one per auth token
 * in use) and reads it: `MessageUUID`, `Status` and `ErrorCode`.
 */
export function verifyPlivoReceipt(request: ReceiptRequest, credentials: { authToken: string }): ReceiptVerdict {
  if (request.method.toUpperCase() !== 'POST') return refuse(400, 'invalid_receipt', 'Plivo receipts are POST requests here.');
  const given = header(request, 'x-plivo-signature-v3');
  const nonce = header(request, 'x-plivo-signature-v3-nonce');
  const params = bodyParams(request);
  const expected = nonce === undefined ? undefined : signature(credentials.authToken, request.url, params, nonce);
  if (!given || expected === undefined || !given.split(',').some((candidate) => safeEqual(expected, candidate.trim()))) {
    return refuse(401, 'invalid_signature', 'X-Plivo-Signature-V3 does not match the URL, parameters and nonce.');
  }
  const providerId = params.get('MessageUUID');
  const status = params.get('Status');
  if (!providerId || !status) return refuse(400, 'invalid_receipt', 'MessageUUID and Status are required.');
  const mapped = receiptStatus(status);
  const error = params.get('ErrorCode');
  return {
    ok: true,
    receipt: mapped === 'undelivered' && error ? { providerId, status: mapped, error } : { providerId, status: mapped },
  };
}
