import type { RequestListener } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryError } from '../../src/relay/delivery/errors.js';
import { createSmsProvider, type SmsConfig, type SmsProvider } from '../../src/relay/delivery/sms.js';
import { answer, closedPort, silence, startHttpFake } from '../support/http-fake.js';

const TWILIO = { accountSid: `AC${'0123456789abcdef'.repeat(2)}`, authToken: 'tw-auth-token-5f4e3d2c1b' };
const VONAGE = { apiKey: 'a1b2c3d4', apiSecret: 'Vo+nage/Secret=77' };
const PLIVO = { authId: 'MAODUZYTQ0Y2FMYJBLOW', authToken: 'plivo-auth-token-0a9b8c7d' };
const AWS = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const RECEIPTS = 'https://relay.example.com/webhooks/sms';

const sms = { to: '+4915112345678', text: 'Your login code is 482913. It expires in 5 minutes.', reference: '42' };
const form = (body: string) => Object.fromEntries(new URLSearchParams(body));
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let fake: Awaited<ReturnType<typeof startHttpFake>>;
const opened: SmsProvider[] = [];

/** A provider on the fake, closed after the test. */
function provider(config: SmsConfig): SmsProvider {
  const created = createSmsProvider(config);
  opened.push(created);
  return created;
}

beforeAll(async () => {
  fake = await startHttpFake();
});
afterEach(async () => {
  await Promise.all(opened.splice(0).map((p) => p.close()));
});
afterAll(async () => {
  await fake.close();
});

const failure = async (promise: Promise<unknown>) => {
  const error = await promise.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(DeliveryError);
  return error as DeliveryError;
};

/** An SNS (AWS query protocol) answer. */
const snsXml = (status: number, xml: string): RequestListener => answer(status, xml, { 'Content-Type': 'text/xml' });
const snsPublished = (id: string) =>
  snsXml(
    200,
    `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>${id}</MessageId></PublishResult>` +
      `<ResponseMetadata><RequestId>d74b8436-ae13-5ab4-a9ff-ce54dfea72a0</RequestId></ResponseMetadata></PublishResponse>`,
  );
const snsError = (status: number, type: 'Sender' | 'Receiver', code: string, message: string) =>
  snsXml(
    status,
    `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>${type}</Type><Code>${code}</Code>` +
      `<Message>${message}</Message></Error><RequestId>9a3f7c2e-0000-4a1b-8c2d-123456789abc</RequestId></ErrorResponse>`,
  );

interface ProviderCase {
  name: string;
  config(origin: string, timeoutMs?: number): SmsConfig;
  /** The provider's documented answer to an accepted message, and the id in it. */
  accepted: { respond: RequestListener; id: string };
  /** A refusal that repeats (a bad number), which echoes the request to catch leaked credentials. */
  refused: RequestListener;
  /** Its way of saying "too many requests". */
  throttled: RequestListener;
  /** Credentials that must not appear in any error message. */
  secrets: string[];
}

const cases: ProviderCase[] = [
  {
    name: 'webhook',
    config: (origin, timeoutMs) => ({ provider: 'webhook', url: `${origin}/sms`, token: 'bearer-token-8a7b6c', timeoutMs }),
    accepted: { respond: answer(202, { id: 'msg-981', status: 'queued' }), id: 'msg-981' },
    refused: (req, res) => answer(400, { error: `invalid number (${req.headers.authorization})` })(req, res),
    throttled: answer(429, 'slow down'),
    secrets: ['bearer-token-8a7b6c'],
  },
  {
    name: 'twilio',
    config: (origin, timeoutMs) => ({ provider: 'twilio', ...TWILIO, from: '+15005550006', apiBase: origin, timeoutMs }),
    accepted: { respond: answer(201, { sid: 'SM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6f', status: 'queued' }), id: 'SM3f1c9a0b7e6d5c4b3a2f1e0d9c8b7a6f' },
    // Twilio's message names the refused number; this fake also echoes the Authorization header.
    refused: (req, res) =>
      answer(400, {
        code: 21211,
        message: `The 'To' number +4915112345678 is not a valid phone number. (${req.headers.authorization})`,
        more_info: 'https://www.twilio.com/docs/errors/21211',
        status: 400,
      })(req, res),
    throttled: answer(429, { code: 20429, message: 'Too Many Requests', status: 429 }),
    secrets: [TWILIO.authToken, Buffer.from(`${TWILIO.accountSid}:${TWILIO.authToken}`).toString('base64')],
  },
  {
    name: 'vonage',
    config: (origin, timeoutMs) => ({ provider: 'vonage', ...VONAGE, from: 'Example', apiBase: origin, timeoutMs }),
    accepted: {
      respond: answer(200, {
        'message-count': '1',
        messages: [{ to: '4915112345678', 'message-id': '0A0000000123ABCD1', status: '0', 'remaining-balance': '3.14', network: '26202' }],
      }),
      id: '0A0000000123ABCD1',
    },
    // HTTP 200 with the refusal inside; this fake echoes the request's form, api_secret and all.
    refused: (req, res) =>
      answer(200, { 'message-count': '1', messages: [{ status: '3', 'error-text': `Invalid to parameter: ${fake.last().body}` }] })(req, res),
    throttled: answer(200, { 'message-count': '1', messages: [{ status: '1', 'error-text': 'Throughput Rate Exceeded - please wait [ 20 ] and retry' }] }),
    secrets: [VONAGE.apiSecret],
  },
  {
    name: 'plivo',
    config: (origin, timeoutMs) => ({ provider: 'plivo', ...PLIVO, from: '+14155550100', apiBase: origin, timeoutMs }),
    accepted: {
      respond: answer(202, { api_id: '4e1f954c-baf3-11ec-bafe-0242ac110003', message: 'message(s) queued', message_uuid: ['db3ce55a-7f1d-11e1-8ea7-1231380bc196'] }),
      id: 'db3ce55a-7f1d-11e1-8ea7-1231380bc196',
    },
    refused: (req, res) => answer(400, { api_id: 'x', error: `dst parameter is invalid (auth ${req.headers.authorization})` })(req, res),
    throttled: answer(429, { api_id: 'x', error: 'too many requests' }),
    secrets: [PLIVO.authToken, Buffer.from(`${PLIVO.authId}:${PLIVO.authToken}`).toString('base64')],
  },
  {
    name: 'sns',
    config: (origin, timeoutMs) => ({
      provider: 'sns',
      region: 'eu-west-1',
      smsType: 'Transactional',
      endpoint: origin,
      credentials: AWS,
      timeoutMs,
    }),
    accepted: { respond: snsPublished('567910cd-659e-55d4-8ccb-5aaf14679dc0'), id: '567910cd-659e-55d4-8ccb-5aaf14679dc0' },
    refused: snsError(400, 'Sender', 'InvalidParameter', 'Invalid parameter: PhoneNumber Reason: +4915112345678 is not valid to publish to'),
    throttled: snsError(429, 'Sender', 'Throttled', 'Rate exceeded'),
    secrets: [AWS.secretAccessKey],
  },
];

const CASE = Object.fromEntries(cases.map((c) => [c.name, c])) as Record<'webhook' | 'twilio' | 'vonage' | 'plivo' | 'sns', ProviderCase>;

describe.each(cases)('$name: outcomes', (c) => {
  const make = (timeoutMs?: number) => provider(c.config(fake.origin, timeoutMs));

  it('returns the provider id of an accepted message', async () => {
    fake.stub.respond = c.accepted.respond;
    await expect(make().send(sms)).resolves.toEqual({ providerId: c.accepted.id });
  });

  it('names itself', () => {
    expect(make().name).toBe(c.name);
  });

  it('reports a refusal that would repeat as not retryable, without credentials in the message', async () => {
    fake.stub.respond = c.refused;
    const error = await failure(make().send(sms));
    expect(error.retryable).toBe(false);
    expect(error.message).toMatch(/invalid|not (a )?valid/i);
    for (const secret of c.secrets) {
      expect(error.message).not.toContain(secret);
      expect(error.message).not.toContain(encodeURIComponent(secret));
    }
  });

  // Retrying is the queue's job, with its backoff: one attempt per delivery, never more.
  it('reports throttling as retryable, after one attempt', async () => {
    fake.stub.respond = c.throttled;
    const before = fake.requests.length;
    expect((await failure(make().send(sms))).retryable).toBe(true);
    expect(fake.requests.length).toBe(before + 1);
  });

  it('reports a 5xx as retryable, after one attempt', async () => {
    fake.stub.respond =
      c.name === 'sns' ? snsError(500, 'Receiver', 'InternalError', 'An internal error occurred') : answer(503, 'upstream unavailable');
    const before = fake.requests.length;
    const error = await failure(make().send(sms));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/50[03]/);
    expect(fake.requests.length).toBe(before + 1);
  });

  it('gives up on a provider that does not answer within the timeout, retryably', async () => {
    fake.stub.respond = silence;
    const started = Date.now();
    const error = await failure(make(300).send(sms));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/did not answer within 300 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('reports a refused connection as retryable', async () => {
    const error = await failure(provider(c.config(`http://127.0.0.1:${await closedPort()}`)).send(sms));
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('sends one message after another over one kept-alive connection', async () => {
    fake.stub.respond = c.accepted.respond;
    const sender = make();
    const before = fake.connections();
    for (const reference of ['43', '44', '45']) {
      await sender.send({ ...sms, reference });
      // undici hands the connection back to its pool a turn of the event loop after the
      // answer; the worker always has database work between two sends.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(fake.requests.slice(-3)).toHaveLength(3);
    expect(fake.connections() - before).toBe(1);
  });

  it('does not follow a redirect, and sends the credentials nowhere else', async () => {
    fake.stub.respond = answer(307, '', { Location: `${fake.origin}/elsewhere` });
    const before = fake.requests.length;
    const error = await failure(make().send(sms));
    expect(error.retryable).toBe(false);
    expect(fake.requests.length).toBe(before + 1);
    expect(fake.last().url).not.toBe('/elsewhere');
  });
});

describe('twilio: the request', () => {
  it('posts the form to the Messages resource with Basic auth and the status callback', async () => {
    fake.stub.respond = answer(201, { sid: 'SM1' });
    const sender = provider({ provider: 'twilio', ...TWILIO, from: '+15005550006', apiBase: fake.origin, receiptUrl: `${RECEIPTS}/twilio` });
    await sender.send(sms);

    const request = fake.last();
    expect(request.method).toBe('POST');
    expect(request.url).toBe(`/2010-04-01/Accounts/${TWILIO.accountSid}/Messages.json`);
    expect(request.headers.authorization).toBe(basic(TWILIO.accountSid, TWILIO.authToken));
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(form(request.body)).toEqual({ To: sms.to, From: '+15005550006', Body: sms.text, StatusCallback: `${RECEIPTS}/twilio` });
  });

  it('sends through a Messaging Service, and without a callback when receipts are not configured', async () => {
    fake.stub.respond = answer(201, { sid: 'SM2' });
    const service = `MG${'f'.repeat(32)}`;
    await provider({ provider: 'twilio', ...TWILIO, messagingServiceSid: service, apiBase: fake.origin }).send(sms);
    expect(form(fake.last().body)).toEqual({ To: sms.to, MessagingServiceSid: service, Body: sms.text });
  });

  it('maps the error code: a full sender queue may pass, an unsubscribed recipient does not', async () => {
    const twilio = provider({ provider: 'twilio', ...TWILIO, from: '+15005550006', apiBase: fake.origin });
    fake.stub.respond = answer(400, { code: 21611, message: "This 'From' number has exceeded the maximum number of queued messages", status: 400 });
    expect(await failure(twilio.send(sms))).toMatchObject({ retryable: true, message: expect.stringContaining('error 21611') });
    fake.stub.respond = answer(400, { code: 21610, message: 'Attempt to send to unsubscribed recipient', status: 400 });
    expect(await failure(twilio.send(sms))).toMatchObject({
      retryable: false,
      message: 'Twilio answered HTTP 400, error 21610: Attempt to send to unsubscribed recipient',
    });
    fake.stub.respond = answer(401, { code: 20003, message: 'Authenticate', status: 401 });
    expect(await failure(twilio.send(sms))).toMatchObject({ retryable: false });
  });
});

describe('vonage: the request', () => {
  it('posts the form with api_key and api_secret, the number without "+", the callback and the reference', async () => {
    fake.stub.respond = CASE.vonage.accepted.respond;
    await provider({ provider: 'vonage', ...VONAGE, from: 'Example', apiBase: fake.origin, receiptUrl: `${RECEIPTS}/vonage` }).send(sms);

    const request = fake.last();
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/sms/json');
    expect(request.headers.authorization).toBeUndefined();
    expect(request.headers['content-type']).toBe('application/x-www-form-urlencoded');
    expect(form(request.body)).toEqual({
      api_key: VONAGE.apiKey,
      api_secret: VONAGE.apiSecret,
      from: 'Example',
      to: '4915112345678',
      text: sms.text,
      callback: `${RECEIPTS}/vonage`,
      'client-ref': '42',
    });
  });

  it('asks for unicode only for text outside GSM-7', async () => {
    fake.stub.respond = CASE.vonage.accepted.respond;
    const vonage = provider({ provider: 'vonage', ...VONAGE, from: 'Example', apiBase: fake.origin });
    await vonage.send({ to: sms.to, text: 'Ihr Bestätigungscode lautet 482913. {€}' });
    expect(form(fake.last().body).type).toBeUndefined();
    await vonage.send({ to: sms.to, text: 'Twój kod weryfikacyjny: 482913' });
    expect(form(fake.last().body).type).toBe('unicode');
  });

  it('maps the message status: out of credit and a non-whitelisted destination are final, an internal error is not', async () => {
    const vonage = provider({ provider: 'vonage', ...VONAGE, from: 'Example', apiBase: fake.origin });
    const status = (code: string, text: string) => answer(200, { 'message-count': '1', messages: [{ status: code, 'error-text': text }] });
    fake.stub.respond = status('9', 'Quota Exceeded - rejected');
    expect(await failure(vonage.send(sms))).toMatchObject({
      retryable: false,
      message: 'Vonage refused the message with status 9: Quota Exceeded - rejected',
    });
    fake.stub.respond = status('29', 'Non White-listed Destination - rejected');
    expect((await failure(vonage.send(sms))).retryable).toBe(false);
    fake.stub.respond = status('5', 'Internal Error');
    expect((await failure(vonage.send(sms))).retryable).toBe(true);
    fake.stub.respond = answer(200, { 'message-count': '0', messages: [] });
    expect((await failure(vonage.send(sms))).retryable).toBe(false);
  });
});

describe('plivo: the request', () => {
  it('posts JSON to the Message resource with Basic auth and the status url', async () => {
    fake.stub.respond = CASE.plivo.accepted.respond;
    await provider({ provider: 'plivo', ...PLIVO, from: '+14155550100', apiBase: fake.origin, receiptUrl: `${RECEIPTS}/plivo` }).send(sms);

    const request = fake.last();
    expect(request.method).toBe('POST');
    expect(request.url).toBe(`/v1/Account/${PLIVO.authId}/Message/`);
    expect(request.headers.authorization).toBe(basic(PLIVO.authId, PLIVO.authToken));
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({ src: '+14155550100', dst: sms.to, text: sms.text, url: `${RECEIPTS}/plivo`, method: 'POST' });
  });

  it('sends through a Powerpack instead of a number', async () => {
    fake.stub.respond = CASE.plivo.accepted.respond;
    const powerpackUuid = 'd35f2e82-d387-427f-8594-6fa07703b6b2';
    await provider({ provider: 'plivo', ...PLIVO, powerpackUuid, apiBase: fake.origin }).send(sms);
    expect(JSON.parse(fake.last().body)).toEqual({ powerpack_uuid: powerpackUuid, dst: sms.to, text: sms.text });
  });

  it('reports bad credentials and an unknown account as final', async () => {
    const plivo = provider({ provider: 'plivo', ...PLIVO, from: '+14155550100', apiBase: fake.origin });
    fake.stub.respond = answer(401, { error: 'Authentication failed' });
    expect(await failure(plivo.send(sms))).toMatchObject({ retryable: false, message: 'Plivo answered HTTP 401: Authentication failed' });
    fake.stub.respond = answer(404, 'not found');
    expect((await failure(plivo.send(sms))).retryable).toBe(false);
  });
});

describe('sns: the request', () => {
  it('publishes to the phone number with a SigV4 signature and the SMS attributes', async () => {
    fake.stub.respond = CASE.sns.accepted.respond;
    await provider({
      provider: 'sns',
      region: 'eu-west-1',
      smsType: 'Transactional',
      senderId: 'Example',
      originationNumber: '+14155550100',
      endpoint: fake.origin,
      credentials: AWS,
    }).send(sms);

    const request = fake.last();
    expect(request.method).toBe('POST');
    expect(request.url).toBe('/');
    expect(request.headers['content-type']).toMatch(/^application\/x-www-form-urlencoded\b/);
    expect(request.headers.authorization).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${AWS.accessKeyId}/\\d{8}/eu-west-1/sns/aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}$`),
    );
    const body = form(request.body);
    expect(body).toMatchObject({ Action: 'Publish', Version: '2010-03-31', PhoneNumber: sms.to, Message: sms.text });
    expect(body.TopicArn).toBeUndefined();
    // MessageAttributes.entry.N.{Name, Value.DataType, Value.StringValue}, in any order.
    const attributes = Object.fromEntries(
      Object.keys(body)
        .filter((key) => /^MessageAttributes\.entry\.\d+\.Name$/.test(key))
        .map((key) => {
          const entry = key.slice(0, -'.Name'.length);
          expect(body[`${entry}.Value.DataType`]).toBe('String');
          return [body[key], body[`${entry}.Value.StringValue`]];
        }),
    );
    expect(attributes).toEqual({
      'AWS.SNS.SMS.SMSType': 'Transactional',
      'AWS.SNS.SMS.SenderID': 'Example',
      'AWS.MM.SMS.OriginationNumber': '+14155550100',
    });
  });

  it('takes the throttling codes SNS sends with HTTP 400 as retryable', async () => {
    const sns = provider(CASE.sns.config(fake.origin));
    fake.stub.respond = snsError(400, 'Sender', 'Throttling', 'Rate exceeded');
    expect(await failure(sns.send(sms))).toMatchObject({ retryable: true, message: expect.stringContaining('HTTP 400, Throttling') });
    fake.stub.respond = snsError(400, 'Sender', 'KMSThrottling', 'KMS rate exceeded');
    expect((await failure(sns.send(sms))).retryable).toBe(true);
  });

  it('reports an authorization error as final and keeps the secret key out of the message', async () => {
    fake.stub.respond = snsError(403, 'Sender', 'AuthorizationError', 'User is not authorized to perform: SNS:Publish');
    const sns = provider(CASE.sns.config(fake.origin));
    expect(await failure(sns.send(sms))).toMatchObject({
      retryable: false,
      message: 'Amazon SNS answered HTTP 403, AuthorizationErrorException: User is not authorized to perform: SNS:Publish',
    });
  });
});

describe('webhook', () => {
  it('is the provider when none is named, as before there was a choice', async () => {
    fake.stub.respond = answer(202, { id: 'msg-1' });
    const webhook = provider({ url: `${fake.origin}/sms`, token: 'bearer-token-123' });
    expect(webhook.name).toBe('webhook');
    await expect(webhook.send(sms)).resolves.toEqual({ providerId: 'msg-1' });
    expect(fake.last().headers.authorization).toBe('Bearer bearer-token-123');
  });
});
