import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { eventually } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/** The relay wired to both outboxes, as a developer runs it: the API in, files out. */
let s: TestServer;
const root = mkdtempSync(path.join(tmpdir(), 'trs-outbox-'));
const smsDir = path.join(root, 'outbox', 'sms');
const mailDir = path.join(root, 'outbox', 'mail');
const files = (dir: string) => {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
};

beforeAll(async () => {
  s = await startTestServer({
    config: {
      relay: {
        mail: { transport: 'outbox', dir: mailDir, from: 'Relay <relay@localhost>' },
        sms: { provider: 'outbox', dir: smsDir },
      },
    },
  });
});
afterAll(async () => {
  await s?.close();
});

it('delivers a relayed SMS and mail into the outbox files and marks them sent', async () => {
  const { key } = await s.createKey('professional');
  const sms = await call(s.origin, '/api/v2/relay-sms', {
    key,
    json: { recipient_phone: '+4915112345678', template_code: 'login_code', template_vars: { code: '482913', expiry_min: 5 } },
  });
  expect(sms.status).toBe(200);
  const mail = await call(s.origin, '/api/v2/relay-mail', {
    key,
    json: { recipient: 'alice@example.org', subject: 'Your code', body_text: 'Code 482913' },
  });
  expect(mail.status).toBe(200);

  await eventually(() => files(smsDir).length === 1 && files(mailDir).length === 1);
  const written = JSON.parse(readFileSync(path.join(smsDir, files(smsDir)[0]!), 'utf8'));
  expect(written).toMatchObject({ to: '+4915112345678', text: 'Your login code is 482913. It expires in 5 minutes.' });
  expect(readFileSync(path.join(mailDir, files(mailDir)[0]!), 'utf8')).toMatch(/^To: alice@example\.org\r$/m);
  await eventually(async () => {
    const quota = (await call(s.origin, '/api/v2/relay-quota', { key })).body;
    return quota.sms.sent === 1 && quota.mail.sent === 1;
  });
});
