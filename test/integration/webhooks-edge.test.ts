import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sign } from '../../src/relay/payments.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The inbound webhooks pass through the contract edge (openapi/internal/): the validator checks
 * what they are sent, and every refusal is the one error handler's, in the webhook shape
 * `{ok: false, code, message}`. The test server validates its answers against the document.
 */
const SECRET = 'whsec_edge_0123456789abcdef';
let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ config: { payments: { secret: SECRET, toleranceSeconds: 300 } } });
});
afterAll(async () => {
  await s?.close();
});

const signed = (raw: string) => ({
  body: raw,
  headers: { 'content-type': 'application/json', 'X-Signature': sign(SECRET, Math.floor(s.clock.now().getTime() / 1000), raw) },
});
const refusal = (code: string) => ({ ok: false, code, message: expect.any(String) });

describe('POST /webhooks/payments through the contract edge', () => {
  it('refuses a signed body that is not a bundle event with 400, naming each bad field', async () => {
    const res = await call(s.origin, '/webhooks/payments', signed(JSON.stringify({ id: 'evt_1', type: 'bundle.stolen' })));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject(refusal('invalid_request'));
    const names = (res.body.errors as { location: string; name: string }[]).map((e) => `${e.location}:${e.name}`);
    expect(names).toEqual(expect.arrayContaining(['body:type', 'body:data']));
  });

  it('refuses a body that is not JSON, one of another type, and one too large', async () => {
    const broken = await call(s.origin, '/webhooks/payments', signed('{"id": '));
    expect(broken.status).toBe(400);
    expect(broken.body).toMatchObject({ ok: false, code: 'invalid_request' });
    const text = await call(s.origin, '/webhooks/payments', { body: 'id=evt_1', headers: { 'content-type': 'text/plain' } });
    expect(text.status).toBe(415);
    expect(text.body).toMatchObject({ ok: false });
    const big = JSON.stringify({ id: 'evt_big', type: 'bundle.purchased', data: { account_id: 1, bundle_id: 'x' }, pad: 'x'.repeat(70 * 1024) });
    const large = await call(s.origin, '/webhooks/payments', signed(big));
    expect(large.status).toBe(413);
    expect(large.body).toMatchObject({ ok: false, code: 'payload_too_large' });
  });

  it('still checks the signature on the raw body: a valid event with a wrong or missing one is 401', async () => {
    const raw = JSON.stringify({ id: 'evt_2', type: 'bundle.purchased', data: { account_id: 1, bundle_id: 'svc_mail_bundle_1000' } });
    const forged = await call(s.origin, '/webhooks/payments', {
      body: raw,
      headers: { 'content-type': 'application/json', 'X-Signature': sign('another-secret', Math.floor(s.clock.now().getTime() / 1000), raw) },
    });
    expect(forged.status).toBe(401);
    expect(forged.body).toEqual(refusal('invalid_signature'));
    // The same event re-serialised with other spacing: its signature no longer holds.
    const reformatted = await call(s.origin, '/webhooks/payments', { ...signed(raw), body: JSON.stringify(JSON.parse(raw), null, 1) });
    expect(reformatted.status).toBe(401);
    const unsigned = await call(s.origin, '/webhooks/payments', { json: JSON.parse(raw) });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body).toEqual(refusal('invalid_signature'));
  });

  it('answers another method with 405 and Allow, and an unknown webhook with 404, in the webhook shape', async () => {
    const get = await call(s.origin, '/webhooks/payments');
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
    expect(get.body).toMatchObject({ ok: false, code: 'method_not_allowed' });
    const unknown = await call(s.origin, '/webhooks/paypal', { json: {} });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ ok: false, code: 'not_found' });
  });
});

describe('POST /webhooks/stripe without Stripe configured', () => {
  it('validates the event, then answers 404: the webhook does not exist here', async () => {
    const bad = await call(s.origin, '/webhooks/stripe', { json: { object: 'event' } });
    expect(bad.status).toBe(400);
    expect(bad.body).toMatchObject({ ok: false, code: 'invalid_request', errors: expect.arrayContaining([expect.objectContaining({ location: 'body', name: 'id' })]) });
    const event = await call(s.origin, '/webhooks/stripe', { json: { id: 'evt_1', type: 'checkout.session.completed' }, headers: { 'Stripe-Signature': 't=1,v1=00' } });
    expect(event.status).toBe(404);
    expect(event.body).toEqual(refusal('not_found'));
  });
});

describe('/webhooks/sms/{provider} without an SMS provider taking receipts', () => {
  it('answers 404 for any provider, 400 for a path no provider has, and 413 past 16 KiB', async () => {
    const form = { headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'MessageSid=SM1&MessageStatus=delivered' };
    const none = await call(s.origin, '/webhooks/sms/twilio', form);
    expect(none.status).toBe(404);
    expect(none.body).toEqual(refusal('not_found'));
    const query = await call(s.origin, '/webhooks/sms/vonage?messageId=1&status=delivered');
    expect(query.status).toBe(404);
    const odd = await call(s.origin, '/webhooks/sms/twilio-2', form);
    expect(odd.status).toBe(400);
    expect(odd.body).toMatchObject({ ok: false, code: 'invalid_request', errors: [expect.objectContaining({ location: 'path', name: 'provider' })] });
    const large = await call(s.origin, '/webhooks/sms/twilio', { ...form, body: `MessageSid=${'x'.repeat(17 * 1024)}` });
    expect(large.status).toBe(413);
    expect(large.body).toMatchObject({ ok: false, code: 'payload_too_large' });
  });
});
