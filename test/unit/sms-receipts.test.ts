import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { verifyPlivoReceipt } from '../../src/relay/delivery/sms/plivo.js';
import type { ReceiptRequest } from '../../src/relay/delivery/sms/receipts.js';
import { verifyTwilioReceipt } from '../../src/relay/delivery/sms/twilio.js';
import { verifyVonageReceipt } from '../../src/relay/delivery/sms/vonage.js';

const FORM = 'application/x-www-form-urlencoded';
const post = (url: string, params: Record<string, string>, headers: Record<string, string> = {}): ReceiptRequest => ({
  method: 'POST',
  url,
  headers: { 'content-type': FORM, ...headers },
  body: new URLSearchParams(params).toString(),
});

/*
 * Each signature below is computed here from the string the provider's documentation says it
 * signs, written out in full, not by the code under test.
 */

describe('Twilio status callbacks', () => {
  const authToken = 'tw-auth-token-5f4e3d2c1b';
  const url = 'https://relay.example.com/webhooks/sms/twilio';
  const sign = (signed: string, token = authToken) => createHmac('sha1', token).update(signed).digest('base64');
  const callback = {
    AccountSid: 'AC0123456789abcdef0123456789abcdef',
    ApiVersion: '2010-04-01',
    From: '+15005550006',
    MessageSid: 'SM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6f',
    MessageStatus: 'delivered',
    SmsSid: 'SM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6f',
    SmsStatus: 'delivered',
    To: '+4915112345678',
  };
  const signedCallback =
    `${url}AccountSidAC0123456789abcdef0123456789abcdefApiVersion2010-04-01From+15005550006` +
    'MessageSidSM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6fMessageStatusdeliveredSmsSidSM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6f' +
    'SmsStatusdeliveredTo+4915112345678';

  it("accepts the example of Twilio's documentation (URL with a query, sorted parameters)", () => {
    const request = post(
      'https://mycompany.com/myapp.php?foo=1&bar=2',
      { CallSid: 'CA1234567890ABCDE', Caller: '+12349013030', Digits: '1234', From: '+12349013030', To: '+18005551212' },
      { 'x-twilio-signature': '0/KCTR6DLpKmkAf8muzZqo1nDgQ=' },
    );
    // The signature holds; a call's callback is no message receipt.
    expect(verifyTwilioReceipt(request, { authToken: '12345' })).toMatchObject({ ok: false, status: 400, code: 'invalid_receipt' });
    const forged = { ...request, headers: { ...request.headers, 'x-twilio-signature': '1/KCTR6DLpKmkAf8muzZqo1nDgQ=' } };
    expect(verifyTwilioReceipt(forged, { authToken: '12345' })).toMatchObject({ ok: false, status: 401, code: 'invalid_signature' });
  });

  it('maps a delivered message', () => {
    const request = post(url, callback, { 'x-twilio-signature': sign(signedCallback) });
    expect(verifyTwilioReceipt(request, { authToken })).toEqual({
      ok: true,
      receipt: { providerId: 'SM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6f', status: 'delivered' },
    });
  });

  it('maps an undelivered message with its error code, and a sent one', () => {
    const undelivered = { ...callback, MessageStatus: 'undelivered', SmsStatus: 'undelivered', ErrorCode: '30003' };
    const signed = (params: Record<string, string>) =>
      sign(
        url +
          Object.keys(params)
            .sort()
            .map((name) => name + params[name])
            .join(''),
      );
    expect(verifyTwilioReceipt(post(url, undelivered, { 'x-twilio-signature': signed(undelivered) }), { authToken })).toEqual({
      ok: true,
      receipt: { providerId: callback.MessageSid, status: 'undelivered', error: '30003' },
    });
    const sent = { ...callback, MessageStatus: 'sent', SmsStatus: 'sent' };
    expect(verifyTwilioReceipt(post(url, sent, { 'x-twilio-signature': signed(sent) }), { authToken })).toMatchObject({
      ok: true,
      receipt: { status: 'sent' },
    });
  });

  it('takes the URL with or without its default port, as Twilio may sign either', () => {
    const withPort = sign(signedCallback.replace('relay.example.com', 'relay.example.com:443'));
    expect(verifyTwilioReceipt(post(url, callback, { 'x-twilio-signature': withPort }), { authToken })).toMatchObject({ ok: true });
  });

  it('refuses a bad signature: changed parameter, other token, other URL, none', () => {
    const signature = sign(signedCallback);
    const refused = { ok: false, status: 401, code: 'invalid_signature' };
    const changed = { ...callback, MessageStatus: 'undelivered' };
    expect(verifyTwilioReceipt(post(url, changed, { 'x-twilio-signature': signature }), { authToken })).toMatchObject(refused);
    expect(verifyTwilioReceipt(post(url, callback, { 'x-twilio-signature': sign(signedCallback, 'other-token') }), { authToken })).toMatchObject(
      refused,
    );
    expect(
      verifyTwilioReceipt(post(`${url}?x=1`, callback, { 'x-twilio-signature': signature }), { authToken }),
    ).toMatchObject(refused);
    expect(verifyTwilioReceipt(post(url, callback), { authToken })).toMatchObject(refused);
  });
});

describe('Vonage delivery receipts', () => {
  const url = 'https://relay.example.com/webhooks/sms/vonage';
  const secret = 'vonage-signature-secret-31';
  const timestamp = Date.parse('2026-06-15T12:00:05Z') / 1000;
  const now = new Date((timestamp + 20) * 1000);
  const receipt = {
    msisdn: '4915112345678',
    to: 'Example',
    'network-code': '26202',
    messageId: '0A0000000123ABCD1',
    price: '0.03330000',
    status: 'delivered',
    scts: '2606151200',
    'err-code': '0',
    'client-ref': 'a=b&c',
    'message-timestamp': '2026-06-15 12:00:05',
    timestamp: String(timestamp),
    nonce: '6b1f0a52-1f28-4d71-9e2b-1c5bd0d8a6b1',
  };
  // Sorted by name, "&name=value", "&" and "=" in values made "_".
  const signed =
    '&client-ref=a_b_c&err-code=0&message-timestamp=2026-06-15 12:00:05&messageId=0A0000000123ABCD1' +
    '&msisdn=4915112345678&network-code=26202&nonce=6b1f0a52-1f28-4d71-9e2b-1c5bd0d8a6b1&price=0.03330000' +
    `&scts=2606151200&status=delivered&timestamp=${timestamp}&to=Example`;
  const md5hash = createHash('md5').update(signed + secret).digest('hex');
  const sha256 = createHmac('sha256', secret).update(signed).digest('hex').toUpperCase();

  it('maps a receipt signed with the default MD5 hash', () => {
    const verdict = verifyVonageReceipt(post(url, { ...receipt, sig: md5hash }), { secret, method: 'md5hash' }, now);
    expect(verdict).toEqual({ ok: true, receipt: { providerId: '0A0000000123ABCD1', status: 'delivered' } });
  });

  it('maps a POST-JSON receipt signed with SHA-256 HMAC (upper-case hex)', () => {
    const request: ReceiptRequest = {
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...receipt, sig: sha256 }),
    };
    expect(verifyVonageReceipt(request, { secret, method: 'sha256' }, now)).toMatchObject({ ok: true, receipt: { status: 'delivered' } });
  });

  it('maps a failed message with its error code', () => {
    const failed = { ...receipt, status: 'failed', 'err-code': '6' };
    const sig = createHash('md5')
      .update(signed.replace('err-code=0', 'err-code=6').replace('status=delivered', 'status=failed') + secret)
      .digest('hex');
    expect(verifyVonageReceipt(post(url, { ...failed, sig }), { secret, method: 'md5hash' }, now)).toEqual({
      ok: true,
      receipt: { providerId: '0A0000000123ABCD1', status: 'undelivered', error: '6' },
    });
  });

  it('refuses a bad signature, a wrong method or secret, a missing sig', () => {
    const refused = { ok: false, status: 401, code: 'invalid_signature' };
    const tampered = post(url, { ...receipt, status: 'failed', sig: md5hash });
    expect(verifyVonageReceipt(tampered, { secret, method: 'md5hash' }, now)).toMatchObject(refused);
    expect(verifyVonageReceipt(post(url, { ...receipt, sig: md5hash }), { secret, method: 'sha256' }, now)).toMatchObject(refused);
    expect(verifyVonageReceipt(post(url, { ...receipt, sig: md5hash }), { secret: 'other', method: 'md5hash' }, now)).toMatchObject(refused);
    expect(verifyVonageReceipt(post(url, receipt), { secret, method: 'md5hash' }, now)).toMatchObject(refused);
  });

  it('refuses a correctly signed receipt from too long ago (a replay)', () => {
    const later = new Date((timestamp + 301) * 1000);
    expect(verifyVonageReceipt(post(url, { ...receipt, sig: md5hash }), { secret, method: 'md5hash' }, later)).toMatchObject({
      ok: false,
      status: 400,
      code: 'stale_receipt',
    });
  });
});

describe('Plivo message callbacks', () => {
  const authToken = 'plivo-auth-token-0a9b8c7d';
  const url = 'https://relay.example.com/webhooks/sms/plivo';
  const nonce = '05429567804466091622';
  const sign = (signed: string, token = authToken) => createHmac('sha256', token).update(signed).digest('base64');
  const callback = {
    To: '4915112345678',
    From: '14155550100',
    Status: 'delivered',
    MessageUUID: 'db3ce55a-7f1d-11e1-8ea7-1231380bc196',
    ErrorCode: '000',
    Units: '1',
  };
  // The URL, "?", the body's parameters sorted as namevalue, ".", the nonce.
  const signed =
    `${url}?ErrorCode000From14155550100MessageUUIDdb3ce55a-7f1d-11e1-8ea7-1231380bc196` + `StatusdeliveredTo4915112345678Units1.${nonce}`;
  const headers = (signature: string) => ({ 'x-plivo-signature-v3': signature, 'x-plivo-signature-v3-nonce': nonce });

  it('maps a delivered message', () => {
    expect(verifyPlivoReceipt(post(url, callback, headers(sign(signed))), { authToken })).toEqual({
      ok: true,
      receipt: { providerId: 'db3ce55a-7f1d-11e1-8ea7-1231380bc196', status: 'delivered' },
    });
  });

  it('signs the query too, sorted, before the body parameters', () => {
    const withQuery = `${url}?site=b&account=a`;
    const signature = sign(signed.replace(`${url}?`, `${url}?account=a&site=b.`));
    expect(verifyPlivoReceipt(post(withQuery, callback, headers(signature)), { authToken })).toMatchObject({ ok: true });
  });

  it('maps an undelivered message with its error code, and takes any of several signatures', () => {
    const failed = { ...callback, Status: 'undelivered', ErrorCode: '200' };
    const signature = sign(signed.replace('ErrorCode000', 'ErrorCode200').replace('Statusdelivered', 'Statusundelivered'));
    const request = post(url, failed, headers(`${sign(signed, 'a-rotated-out-token')},${signature}`));
    expect(verifyPlivoReceipt(request, { authToken })).toEqual({
      ok: true,
      receipt: { providerId: callback.MessageUUID, status: 'undelivered', error: '200' },
    });
  });

  it('refuses a bad signature, another nonce, a missing header', () => {
    const refused = { ok: false, status: 401, code: 'invalid_signature' };
    expect(verifyPlivoReceipt(post(url, { ...callback, Status: 'failed' }, headers(sign(signed))), { authToken })).toMatchObject(refused);
    const otherNonce = { 'x-plivo-signature-v3': sign(signed), 'x-plivo-signature-v3-nonce': '1' };
    expect(verifyPlivoReceipt(post(url, callback, otherNonce), { authToken })).toMatchObject(refused);
    expect(verifyPlivoReceipt(post(url, callback, headers(sign(signed, 'other-token'))), { authToken })).toMatchObject(refused);
    expect(verifyPlivoReceipt(post(url, callback), { authToken })).toMatchObject(refused);
  });
});
