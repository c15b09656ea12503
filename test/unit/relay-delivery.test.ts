import { createHash, generateKeyPairSync, verify, type KeyObject } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simpleParser, type AddressObject } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeliveryError } from '../../src/relay/delivery/errors.js';
import { createMailTransport, type MailTransport } from '../../src/relay/delivery/mail.js';
import { createSmsProvider } from '../../src/relay/delivery/sms.js';
import { ManualClock } from '../../src/clock.js';
import { BUILTIN_SMS_TEMPLATES } from '../../src/db/migrations/Migration20261123010000FieldClients.js';
import { UnknownTemplateError, type SmsTemplateVars } from '../../src/relay/delivery/templates.js';
import { SmsTemplates } from '../../src/relay/delivery/templates.js';

interface ReceivedMail {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
}

/**
 * A plain-text SMTP server on loopback that keeps every message it takes. Recipients at
 * `bounce.test` are refused for good (550), those at `later.test` for now (451).
 */
async function startSmtpServer() {
  const received: ReceivedMail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onRcptTo(address, _session, callback) {
      if (address.address.endsWith('@bounce.test')) return callback(Object.assign(new Error('No such user'), { responseCode: 550 }));
      if (address.address.endsWith('@later.test')) return callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const { mailFrom, rcptTo } = session.envelope;
        received.push({ mailFrom: mailFrom ? mailFrom.address : '', rcptTo: rcptTo.map((r) => r.address), raw: Buffer.concat(chunks) });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.server.address() as AddressInfo;
  return { port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** A port on loopback that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : []).flatMap((a) => a.value.map((v) => v.address));

/** The tags of a DKIM-Signature header value, with the folding whitespace removed. */
function dkimTags(value: string): Record<string, string> {
  return Object.fromEntries(
    value
      .split(';')
      .map((tag) => tag.replace(/\s+/g, ''))
      .filter((tag) => tag !== '')
      .map((tag) => [tag.slice(0, tag.indexOf('=')), tag.slice(tag.indexOf('=') + 1)]),
  );
}

/** RFC 6376 3.4.2 "relaxed" header canonicalization of one (possibly folded) header field. */
function relaxedHeader(field: string): string {
  const colon = field.indexOf(':');
  const value = field.slice(colon + 1).replace(/\r\n/g, '').replace(/[ \t]+/g, ' ').trim();
  return `${field.slice(0, colon).trim().toLowerCase()}:${value}`;
}

/** RFC 6376 3.4.4 "relaxed" body canonicalization. */
function relaxedBody(body: string): string {
  const lines = body.replace(/[ \t]+/g, ' ').replace(/ (?=\r\n|$)/g, '').replace(/(\r\n)+$/, '');
  return lines === '' ? '' : `${lines}\r\n`;
}

/**
 * Verifies the rsa-sha256, relaxed/relaxed DKIM signature of a raw message the way a receiving
 * server does (RFC 6376 section 6): body hash first, then the signature over the signed headers.
 */
function verifyDkim(raw: Buffer, publicKey: KeyObject): { d: string; s: string; valid: boolean } {
  const message = raw.toString('latin1');
  const split = message.indexOf('\r\n\r\n');
  const fields = message.slice(0, split).split(/\r\n(?![ \t])/);
  const signature = fields.find((field) => /^dkim-signature:/i.test(field));
  if (!signature) throw new Error('no DKIM-Signature header');
  const tags = dkimTags(signature.slice(signature.indexOf(':') + 1));
  expect(tags).toMatchObject({ v: '1', a: 'rsa-sha256', c: 'relaxed/relaxed' });

  const bodyHash = createHash('sha256').update(relaxedBody(message.slice(split + 4)), 'latin1').digest('base64');
  expect(tags.bh).toBe(bodyHash);

  // Each name in h= takes the last instance of that field not taken yet, counting from the bottom.
  const unused = fields.filter((field) => field !== signature);
  const signed = tags.h!.split(':').flatMap((name) => {
    const index = unused.findLastIndex((field) => relaxedHeader(field).startsWith(`${name.toLowerCase()}:`));
    return index === -1 ? [] : unused.splice(index, 1).map((field) => `${relaxedHeader(field)}\r\n`);
  });
  const unsigned = relaxedHeader(signature).replace(/([;:] ?b=)[^;]*/, '$1');
  const data = Buffer.from(signed.join('') + unsigned, 'latin1');
  return { d: tags.d!, s: tags.s!, valid: verify('sha256', data, publicKey, Buffer.from(tags.b!, 'base64')) };
}

describe('mail transport', () => {
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let transport: MailTransport;
  const from = 'Relay <relay@mail.example.com>';

  beforeAll(async () => {
    smtp = await startSmtpServer();
    transport = createMailTransport({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, from });
  });

  afterAll(async () => {
    transport.close();
    await smtp.close();
  });

  const lastReceived = () => smtp.received.at(-1)!;

  it('passes verify() against a reachable server', async () => {
    await expect(transport.verify()).resolves.toBeUndefined();
  });

  it('sends the message with the configured From, the given fields and only the given headers', async () => {
    const result = await transport.send({
      to: 'alice@example.org',
      subject: 'Your code: 482913',
      text: 'Your code is 482913.',
      html: '<p>Your code is <b>482913</b>.</p>',
      replyTo: 'Shop Support <support@shop.example>',
      headers: [
        { name: 'X-Relay-Id', value: '42' },
        { name: 'X-Site', value: 'shop.example' },
      ],
      messageId: '<queue-42@mail.example.com>',
    });

    expect(result.messageId).toBe('<queue-42@mail.example.com>');
    expect(result.response).toMatch(/^250\b/);
    const received = lastReceived();
    expect(received.mailFrom).toBe('relay@mail.example.com');
    expect(received.rcptTo).toEqual(['alice@example.org']);

    const parsed = await simpleParser(received.raw);
    expect(parsed.from?.value).toEqual([{ name: 'Relay', address: 'relay@mail.example.com' }]);
    expect(addresses(parsed.to)).toEqual(['alice@example.org']);
    expect(parsed.replyTo?.value).toEqual([{ name: 'Shop Support', address: 'support@shop.example' }]);
    expect(parsed.subject).toBe('Your code: 482913');
    expect(parsed.messageId).toBe('<queue-42@mail.example.com>');
    expect(parsed.headers.get('x-relay-id')).toBe('42');
    expect(parsed.headers.get('x-site')).toBe('shop.example');
    expect(parsed.text?.trim()).toBe('Your code is 482913.');
    expect(parsed.html).toBe('<p>Your code is <b>482913</b>.</p>');
    expect(parsed.headers.has('dkim-signature')).toBe(false);
    expect(parsed.headers.has('cc')).toBe(false);
    expect(parsed.headers.has('bcc')).toBe(false);
  });

  it('refuses a header value with a line break, and a malformed header name, before connecting', async () => {
    const before = smtp.received.length;
    const send = (headers: { name: string; value: string }[]) =>
      transport.send({ to: 'alice@example.org', subject: 's', text: 't', headers });

    for (const headers of [
      [{ name: 'X-Note', value: 'ok\r\nBcc: victim@example.net' }],
      [{ name: 'X-Note', value: 'ok\nBcc: victim@example.net' }],
      [{ name: 'X-Note: x\r\nBcc', value: 'victim@example.net' }],
    ]) {
      const error = await send(headers).catch((err: unknown) => err);
      expect(error).toBeInstanceOf(DeliveryError);
      expect(error).toMatchObject({ retryable: false });
    }
    await expect(send([{ name: 'X-Note', value: 'ok\r\nBcc: victim@example.net' }])).rejects.toThrow(/line break/);
    expect(smtp.received.length).toBe(before);
  });

  it('refuses more than one recipient', async () => {
    await expect(transport.send({ to: 'alice@example.org, bob@example.org', subject: 's', text: 't' })).rejects.toMatchObject({
      name: 'DeliveryError',
      retryable: false,
    });
  });

  it('tells a permanent SMTP rejection from a temporary one', async () => {
    await expect(transport.send({ to: 'nobody@bounce.test', subject: 's', text: 't' })).rejects.toMatchObject({
      name: 'DeliveryError',
      message: expect.stringContaining('550'),
      retryable: false,
    });
    await expect(transport.send({ to: 'someone@later.test', subject: 's', text: 't' })).rejects.toMatchObject({
      name: 'DeliveryError',
      message: expect.stringContaining('451'),
      retryable: true,
    });
  });

  it('reports an unreachable server as retryable', async () => {
    const unreachable = createMailTransport({ smtpUrl: `smtp://127.0.0.1:${await closedPort()}`, from });
    try {
      await expect(unreachable.send({ to: 'alice@example.org', subject: 's', text: 't' })).rejects.toMatchObject({
        name: 'DeliveryError',
        retryable: true,
      });
    } finally {
      unreachable.close();
    }
  });

  it('signs with DKIM when configured, with a signature that verifies against the public key', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const signing = createMailTransport({
      smtpUrl: `smtp://127.0.0.1:${smtp.port}`,
      from,
      dkim: {
        domainName: 'mail.example.com',
        keySelector: 'relay2026',
        privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      },
    });
    try {
      await signing.send({
        to: 'alice@example.org',
        subject: 'Ihr Bestätigungscode',
        text: 'Ihr Code lautet 482913.  \r\n\r\n',
        html: '<p>Ihr Code lautet <b>482913</b>.</p>',
        replyTo: 'support@shop.example',
        headers: [{ name: 'X-Relay-Id', value: '43' }],
      });
    } finally {
      signing.close();
    }

    const { raw } = lastReceived();
    expect(raw.toString('latin1')).toMatch(/^DKIM-Signature: /im);
    const result = verifyDkim(raw, publicKey);
    expect(result).toEqual({ d: 'mail.example.com', s: 'relay2026', valid: true });

    // The verifier is not a rubber stamp: a changed signed header breaks the signature.
    const tampered = Buffer.from(raw.toString('latin1').replace(/^Reply-To: [^\r\n]*/im, 'Reply-To: attacker@evil.test'), 'latin1');
    expect(verifyDkim(tampered, publicKey).valid).toBe(false);
  });
});

interface ReceivedRequest {
  method: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP server on loopback that records each request and answers it with `respond`. */
async function startHttpServer() {
  const requests: ReceivedRequest[] = [];
  const stub: { respond: RequestListener } = { respond: (_req, res) => res.end() };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      requests.push({ method: req.method, headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      stub.respond(req, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const close = () => {
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  };
  return { url: `http://127.0.0.1:${port}/sms`, requests, stub, close };
}

const answer =
  (status: number, body = '', headers: Record<string, string> = {}): RequestListener =>
  (_req, res) =>
    res.writeHead(status, headers).end(body);

describe('SMS provider', () => {
  let http: Awaited<ReturnType<typeof startHttpServer>>;

  beforeAll(async () => {
    http = await startHttpServer();
  });

  afterAll(async () => {
    await http.close();
  });

  const provider = (timeoutMs?: number) => createSmsProvider({ url: http.url, token: 's3cret-token', sender: 'Relay', timeoutMs });
  const sms = { to: '+4915112345678', text: 'Your login code is 482913.', reference: '42' };

  it('posts the message as JSON with the bearer token and returns the provider id', async () => {
    http.stub.respond = answer(202, JSON.stringify({ id: 'msg-981', status: 'queued' }), { 'Content-Type': 'application/json' });

    await expect(provider().send(sms)).resolves.toEqual({ providerId: 'msg-981' });

    const request = http.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.headers.authorization).toBe('Bearer s3cret-token');
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({ to: sms.to, text: sms.text, sender: 'Relay', reference: '42' });
  });

  it('leaves out what is not set and takes a 2xx without an id as success', async () => {
    http.stub.respond = answer(200, 'OK');

    const bare = createSmsProvider({ url: http.url, token: 't' });
    await expect(bare.send({ to: sms.to, text: sms.text })).resolves.toEqual({ providerId: null });
    expect(JSON.parse(http.requests.at(-1)!.body)).toEqual({ to: sms.to, text: sms.text });
  });

  it('turns a 5xx into a retryable error naming the status and a truncated body', async () => {
    http.stub.respond = answer(500, `upstream   failure\n${'x'.repeat(1000)}`);

    const error = (await provider().send(sms).catch((err: unknown) => err)) as DeliveryError;
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error.retryable).toBe(true);
    expect(error.message).toMatch(/^SMS provider answered HTTP 500: upstream failure x+…$/);
    expect(error.message.length).toBeLessThan(300);
  });

  it('turns a 429 into a retryable error', async () => {
    http.stub.respond = answer(429, 'slow down');
    await expect(provider().send(sms)).rejects.toMatchObject({ retryable: true, message: 'SMS provider answered HTTP 429: slow down' });
  });

  it('turns a 400 into a non-retryable error', async () => {
    http.stub.respond = answer(400, JSON.stringify({ error: 'invalid number' }));
    await expect(provider().send(sms)).rejects.toMatchObject({
      retryable: false,
      message: 'SMS provider answered HTTP 400: {"error":"invalid number"}',
    });
  });

  it('does not follow a redirect', async () => {
    const before = http.requests.length;
    http.stub.respond = answer(302, '', { Location: `${http.url}/elsewhere` });
    await expect(provider().send(sms)).rejects.toMatchObject({ retryable: false, message: 'SMS provider answered HTTP 302' });
    expect(http.requests.length).toBe(before + 1);
  });

  it('gives up on a server that does not answer, with a retryable timeout error', async () => {
    http.stub.respond = () => undefined;
    const started = Date.now();
    await expect(provider(200).send(sms)).rejects.toMatchObject({
      retryable: true,
      message: 'SMS provider did not answer within 200 ms',
    });
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('reports a network error as retryable', async () => {
    const unreachable = createSmsProvider({ url: `http://127.0.0.1:${await closedPort()}/sms`, token: 't' });
    await expect(unreachable.send(sms)).rejects.toMatchObject({
      retryable: true,
      message: expect.stringMatching(/^SMS provider request failed: fetch failed \(.*ECONNREFUSED/),
    });
  });
});

/** The GSM 03.38 basic character set: text made only of these fits 160 characters per SMS. */
const GSM7 = new Set(
  '@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !"#¤%&\'()*+,-./0123456789:;<=>?¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà',
);

describe('SMS templates', () => {
  // The built-in rows as the migration seeds them, served by a stand-in for the table.
  const rows = BUILTIN_SMS_TEMPLATES.map(([code, lang, body]) => ({ code, lang, body, builtin: true }));
  const store = { list: async () => rows, set: async () => undefined, remove: async () => false };
  const templates = new SmsTemplates(store, new ManualClock());
  const render = (code: string, vars: SmsTemplateVars, site?: string) => templates.render(code, vars, site);
  const TEMPLATES = [...new Set(rows.map((r) => r.code))];
  const LANGUAGES = ['en', 'de', 'fr', 'es'] as const;
  const minute = { en: ['minute', 'minutes'], de: ['Minute', 'Minuten'], fr: ['minute', 'minutes'], es: ['minuto', 'minutos'] };

  it('has the four built-in templates in four languages', () => {
    expect(TEMPLATES.sort()).toEqual(['2fa_code', '2fa_login', 'login_code', 'password_reset_code']);
    for (const code of TEMPLATES) expect(rows.filter((r) => r.code === code).map((r) => r.lang).sort()).toEqual([...LANGUAGES].sort());
  });

  it('renders the code and the expiry in every template and language, singular and plural', async () => {
    for (const template of TEMPLATES) {
      for (const lang of LANGUAGES) {
        const [one, other] = minute[lang];
        const single = await render(template, { code: '123456', expiry_min: 1, lang });
        const several = await render(template, { code: '482913', expiry_min: 5, lang });

        expect(single).toContain('123456');
        expect(single).toMatch(new RegExp(`\\b1 ${one}\\b`));
        expect(several).toContain('482913');
        expect(several).toMatch(new RegExp(`\\b5 ${other}\\b`));
        // Nothing but the given variables: no other digits, no links.
        expect(several.replace('482913', '').replace('5', '')).not.toMatch(/\d|http|www/);
      }
    }
  });

  it('reads naturally in each language', async () => {
    const expected = {
      en: 'Your verification code is 482913. It expires in 10 minutes.',
      de: 'Ihr Bestätigungscode lautet 482913. Er ist 10 Minuten gültig.',
      fr: 'Votre code de vérification est 482913. Il expire dans 10 minutes.',
      es: 'Usa 482913 para verificar tu identidad. Caduca en 10 minutos.',
    };
    for (const lang of LANGUAGES) expect(await render('2fa_code', { code: '482913', expiry_min: 10, lang })).toBe(expected[lang]);
    expect(await render('login_code', { code: '7731', expiry_min: 1, lang: 'de' })).toBe('Ihr Anmeldecode lautet 7731. Er ist 1 Minute gültig.');
  });

  it('defaults to English, ignores a region, and falls back to English for a language it lacks', async () => {
    const english = await render('2fa_login', { code: '482913', expiry_min: 10, lang: 'en' });
    expect(await render('2fa_login', { code: '482913', expiry_min: 10 })).toBe(english);
    expect(await render('2fa_login', { code: '482913', expiry_min: 10, lang: 'it' })).toBe(english);
    expect(await render('2fa_login', { code: '482913', expiry_min: 10, lang: 'de_DE' })).toBe('Ihr Anmeldecode lautet 482913. Er ist 10 Minuten gültig.');
  });

  it('refuses a template it does not have, whatever the name', async () => {
    for (const code of ['nope', '__proto__', 'constructor', 'toString']) {
      await expect(render(code, { code: '482913', expiry_min: 5 })).rejects.toBeInstanceOf(UnknownTemplateError);
    }
  });

  it('prefixes the site name when given', async () => {
    expect(await render('login_code', { code: '482913', expiry_min: 5 }, 'shop.example.com')).toBe(
      'shop.example.com: Your login code is 482913. It expires in 5 minutes.',
    );
  });

  it('fits one GSM-7 segment even with a site name of 40 characters, the longest code and expiry', async () => {
    for (const template of TEMPLATES) {
      for (const lang of LANGUAGES) {
        const text = await render(template, { code: '1234567890', expiry_min: 60, lang }, 's'.repeat(28) + '.example.com');
        expect([...text].filter((char) => !GSM7.has(char))).toEqual([]);
        expect(text.length).toBeLessThanOrEqual(160);
      }
    }
  });
});
