import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { DomainError } from '../../src/errors.js';
import type { Caller } from '../../src/keys/service.js';
import { KeySites } from '../../src/keys/sites.repository.js';
import { SmsTemplates } from '../../src/relay/delivery/templates.js';
import { SmsTemplateRepository } from '../../src/relay/delivery/templates.repository.js';
import { MESSAGE_LIMITS } from '../../src/relay/message-rules.js';
import type { RelayQueue } from '../../src/relay/queue.js';
import { RelayRepository } from '../../src/relay/repository.js';
import { relayTierOf } from '../../src/relay/policy.js';
import { relayLimits, RelayService } from '../../src/relay/service.js';
import { loadApiArtifacts } from '../../src/openapi.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** The caller's relay tier, as the API's guard or the dashboard resolves it before the service runs. */
const tier = () => relayTierOf(caller.role)!;

/**
 * Finding 1, defence in depth: the relay service checks its own invariants, whatever route or
 * validator ran before. These attacks are handed to the service directly, as a request that got
 * around the validator would be; each is refused with 422 and nothing is stored or queued.
 */
let s: TestServer;
let service: RelayService;
let caller: Caller;
const queued: number[] = [];

beforeAll(async () => {
  s = await startTestServer();
  const created = await s.createKey('enterprise');
  caller = { keyId: created.keyId, keyName: '', accountId: created.accountId, role: 'enterprise', licences: 1 };
  const queue = { enqueue: async (_channel: string, id: number) => void queued.push(id), wake: () => undefined } as unknown as RelayQueue;
  // Free text is allowed here (it is off by default) so that its own bounds are reached.
  const config = loadConfig({ RELAY_SMS_FREE_TEXT_ROLES: 'enterprise' });
  service = new RelayService(new RelayRepository(s.pool), queue, { ...relayLimits(config.relay), channels: { mail: true, sms: true } }, s.clock, new KeySites(s.pool, s.clock), new SmsTemplates(new SmsTemplateRepository(s.orm.em), s.clock));
});
afterAll(async () => {
  await s?.close();
});

async function refused(send: () => Promise<unknown>, code = 'invalid_request') {
  const before = await s.pool.query('select count(*)::int as n from relay_messages');
  const err = await send().then(() => undefined, (e: unknown) => e);
  // The domain refuses in its own terms; the HTTP edge makes it a 422 (test/security/path-variants.test.ts).
  expect(err).toBeInstanceOf(DomainError);
  expect((err as DomainError).kind).toBe('unprocessable');
  expect((err as DomainError).details.code).toBe(code);
  expect((await s.pool.query('select count(*)::int as n from relay_messages')).rows[0].n).toBe(before.rows[0].n);
  expect(queued).toEqual([]);
}

const mail = (fields: Record<string, unknown>) => () =>
  service.sendMail(caller, tier(), { recipient: 'user@example.com', subject: 'Your code', body_text: '123456', ...fields } as never);
const sms = (fields: Record<string, unknown>) => () =>
  service.sendSms(caller, tier(), { recipient_phone: '+4915112345678', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 }, ...fields } as never);

describe('mail', () => {
  it('refuses a recipient with a line break that would add a Bcc', () => refused(mail({ recipient: 'a4@example.com\r\nBcc: evil4@attacker.test' })));
  it('refuses a list, a group, and an address in angle brackets beside another', async () => {
    await refused(mail({ recipient: 'a@example.com, b@example.com' }));
    await refused(mail({ recipient: 'a@example.com; b@example.com' }));
    await refused(mail({ recipient: 'grp: a@example.com;' }));
    await refused(mail({ recipient: 'a@example.com <b@example.com>, c@example.com' }));
    await refused(mail({ recipient: 'not an address' }));
  });
  it('refuses envelope, identity and trace headers, a Content-Type it cannot build, and line breaks in any header', async () => {
    const names = ['Sender', 'Return-Path', 'Bcc', 'Cc', 'To', 'Content-Type', 'DKIM-Signature', 'Received', 'Message-ID', 'Resent-From', 'Delivered-To', 'ARC-Seal'];
    for (const name of [...names, 'X-Ok\r\nBcc', 'X-Ok:Bcc', 'X Ok']) {
      await refused(mail({ headers: [{ name, value: 'x@attacker.test' }] }));
      await refused(mail({ headers: { [name]: 'x@attacker.test' } }));
    }
    await refused(mail({ headers: { From: 'a@example.com, b@attacker.test' } }));
    await refused(mail({ headers: { 'Reply-To': 'a@example.com, b@attacker.test' } }));
    await refused(mail({ headers: { 'Content-Type': 'multipart/mixed; boundary=x' } }));
    await refused(mail({ headers: [{ name: 'X-Ok', value: 'a\r\nBcc: x@attacker.test' }] }));
    await refused(mail({ headers: [{ name: 'X-Ok', value: 'a\nb' }] }));
    await refused(mail({ headers: Array.from({ length: MESSAGE_LIMITS.headersMax + 1 }, (_, i) => ({ name: `X-H${i}`, value: 'v' })) }));
    await refused(mail({ headers: { 'List-Unsubscribe': '<mailto:a@example.com>\r\nBcc: x@attacker.test' } }));
  });
  it('leaves out harmless headers it does not copy, and says which', async () => {
    const result = await service.sendMail(caller, tier(), {
      recipient: 'left-out@example.com',
      subject: 's',
      body_text: 't',
      headers: { 'Auto-Submitted': 'auto-generated', Subject: 'Other', 'X-Site': 'shop' },
    });
    expect(result.ignored_headers).toEqual(['Auto-Submitted', 'Subject']);
    const { rows } = await s.pool.query('select payload from relay_messages where id = $1', [result.queue_id]);
    expect(rows[0].payload.headers).toEqual([{ name: 'X-Site', value: 'shop' }]);
    expect(rows[0].payload.subject).toBe('s');
    queued.length = 0;
  });
  it('refuses a subject or reply-to with a line break, and over-long fields', async () => {
    await refused(mail({ subject: 'hello\r\nBcc: x@attacker.test' }));
    await refused(mail({ reply_to: 'x@example.com\r\nBcc: y@attacker.test' }));
    await refused(mail({ reply_to: 'a@example.com, b@example.com' }));
    await refused(mail({ subject: 's'.repeat(MESSAGE_LIMITS.subjectMax + 1) }));
    await refused(mail({ body_text: 'b'.repeat(MESSAGE_LIMITS.bodyMax + 1) }));
    await refused(mail({ site_url: 'javascript:alert(1)' }));
  });
  it('throttles the address, not its spelling: a display name or comment is the same recipient', async () => {
    const seen: string[] = [];
    for (const recipient of ['victim@example.com', 'Bob <Victim@Example.com>', 'victim@example.com (one)']) {
      const result = await service.sendMail(caller, tier(), { recipient, subject: 's', body_text: 't' });
      const { rows } = await s.pool.query('select recipient from relay_messages where id = $1', [result.queue_id]);
      seen.push(rows[0].recipient);
    }
    expect(seen).toEqual(['victim@example.com', 'victim@example.com', 'victim@example.com']);
    const err = await service.sendMail(caller, tier(), { recipient: 'VICTIM@example.com', subject: 's', body_text: 't' }).catch((e: DomainError) => e);
    expect((err as DomainError).details.code).toBe('recipient_backoff');
    queued.length = 0;
  });
});

describe('SMS', () => {
  it('refuses template variables out of their types and bounds', async () => {
    await refused(sms({ template_vars: { code: '0000. Your account is locked, call +44 909 8790000', expiry_min: 10 } }));
    await refused(sms({ template_vars: { code: '123456', expiry_min: -5 } }));
    await refused(sms({ template_vars: { code: '123456', expiry_min: 61 } }));
    await refused(sms({ template_vars: { code: '12ab', expiry_min: 5 } }));
    await refused(sms({ template_vars: { code: '123456', expiry_min: 5, lang: 'english' } }));
    await refused(sms({ template_code: '__proto__' }), 'unknown_template');
    await refused(sms({ template_code: 'constructor' }), 'unknown_template');
  });
  it('refuses a raw text over 480 characters and a site name over 40', async () => {
    await refused(sms({ template_code: undefined, message: 'x'.repeat(MESSAGE_LIMITS.smsTextMax + 1) }));
    await refused(sms({ site_url: `https://${'a'.repeat(41)}.example/` }));
  });
  it('refuses a phone number with a line break or not in E.164', async () => {
    await refused(sms({ recipient_phone: '+4915112345678\r\n' }));
    await refused(sms({ recipient_phone: '004915112345678' }));
  });
});

describe('the limits the service checks are the limits the document states', () => {
  const schemas = (loadApiArtifacts().document as any).components.schemas;
  it('mail', () => {
    const m = schemas.RelayMailRequest.properties;
    expect(m.subject.maxLength).toBe(MESSAGE_LIMITS.subjectMax);
    expect(m.body_html.maxLength).toBe(MESSAGE_LIMITS.bodyMax);
    expect(m.body_text.maxLength).toBe(MESSAGE_LIMITS.bodyMax);
    expect(m.reply_to.maxLength).toBe(MESSAGE_LIMITS.replyToMax);
    expect(m.headers.anyOf[0].maxItems).toBe(MESSAGE_LIMITS.headersMax);
    expect(m.headers.anyOf[1].maxProperties).toBe(MESSAGE_LIMITS.headersMax);
    expect(m.headers.anyOf[1].additionalProperties.maxLength).toBe(MESSAGE_LIMITS.headerValueMax);
    expect(m.site_url.maxLength).toBe(MESSAGE_LIMITS.siteUrlMax);
    expect(schemas.RelayMailHeader.properties.name.maxLength).toBe(MESSAGE_LIMITS.headerNameMax);
    expect(schemas.RelayMailHeader.properties.value.maxLength).toBe(MESSAGE_LIMITS.headerValueMax);
  });
  it('SMS', () => {
    expect(schemas.RelaySmsRequest.properties.message.maxLength).toBe(MESSAGE_LIMITS.smsTextMax);
    const vars = schemas.RelayTemplateVars.properties;
    expect(vars.code.pattern).toBe(MESSAGE_LIMITS.codePattern.source);
    expect([vars.expiry_min.minimum, vars.expiry_min.maximum]).toEqual([MESSAGE_LIMITS.expiryMin, MESSAGE_LIMITS.expiryMax]);
  });
});
