import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { describe, expect, it } from 'vitest';
import { DeliveryError } from '../../src/relay/delivery/errors.js';
import { createMailOutbox } from '../../src/relay/delivery/mail.js';
import { createSmsProvider } from '../../src/relay/delivery/sms.js';

const scratch = () => mkdtempSync(path.join(tmpdir(), 'trs-outbox-'));
const NAME = /^\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3}Z_(.+)_[0-9a-f]{6}\.(json|eml)$/;

describe('SMS outbox', () => {
  it('writes each SMS as one JSON file named by time and reference, readable by the owner only', async () => {
    const dir = path.join(scratch(), 'outbox', 'sms');
    const outbox = createSmsProvider({ provider: 'outbox', dir });
    const before = Date.now();

    const { providerId } = await outbox.send({ to: '+4915112345678', text: 'Your code is 482913.', reference: '42' });
    await outbox.send({ to: '+4915112345679', text: 'Your code is 771204.', reference: '43' });

    const files = readdirSync(dir).sort();
    expect(files).toHaveLength(2);
    expect(files.every((file) => NAME.test(file))).toBe(true);
    expect(files.map((file) => NAME.exec(file)![1])).toEqual(['42', '43']);
    expect(`${providerId}.json`).toBe(files[0]);

    const first = JSON.parse(readFileSync(path.join(dir, files[0]!), 'utf8'));
    expect(first).toEqual({ to: '+4915112345678', text: 'Your code is 482913.', reference: '42', createdAt: expect.any(String) });
    expect(Date.parse(first.createdAt)).toBeGreaterThanOrEqual(before - 1);
    expect(statSync(path.join(dir, files[0]!)).mode & 0o777).toBe(0o600);
    expect(outbox.name).toBe('outbox');
  });

  it('keeps a hostile reference inside the folder and leaves no temporary file behind', async () => {
    const dir = scratch();
    await createSmsProvider({ provider: 'outbox', dir }).send({ to: '+4915112345678', text: 't', reference: '../../etc/passwd' });
    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(NAME.exec(files[0]!)![1]).toBe('etc-passwd');
  });

  it('fails retryably, without a stray temporary file, when the folder cannot be written', async () => {
    const parent = scratch();
    const blocked = path.join(parent, 'sms');
    writeFileSync(blocked, 'a file where the folder should be');
    const error = await createSmsProvider({ provider: 'outbox', dir: blocked })
      .send({ to: '+4915112345678', text: 't', reference: '1' })
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(DeliveryError);
    expect(error).toMatchObject({ retryable: true, message: expect.stringContaining('SMS outbox could not write') });
    expect(readdirSync(parent)).toEqual(['sms']);
  });
});

describe('mail outbox', () => {
  const from = 'Relay <relay@mail.example.com>';

  it('writes the rendered message as an .eml file', async () => {
    const dir = path.join(scratch(), 'outbox', 'mail');
    const outbox = createMailOutbox({ dir, from });
    await outbox.verify();

    const result = await outbox.send({
      to: 'alice@example.org',
      subject: 'Your code: 482913',
      text: 'Your code is 482913.',
      html: '<p>Your code is <b>482913</b>.</p>',
      headers: [{ name: 'X-Relay-Id', value: '42' }],
      messageId: '<queue-42@mail.example.com>',
    });

    const files = readdirSync(dir);
    expect(files).toHaveLength(1);
    expect(NAME.exec(files[0]!)?.slice(1)).toEqual(['queue-42-mail.example.com', 'eml']);
    expect(result).toEqual({ messageId: '<queue-42@mail.example.com>', response: `written to ${path.join(dir, files[0]!)}` });
    const raw = readFileSync(path.join(dir, files[0]!));
    expect(raw.toString('latin1')).toContain('\r\n');
    const mail = await simpleParser(raw);
    expect(mail.from?.value).toEqual([{ name: 'Relay', address: 'relay@mail.example.com' }]);
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.value : undefined).toEqual([{ name: '', address: 'alice@example.org' }]);
    expect(mail.subject).toBe('Your code: 482913');
    expect(mail.text?.trim()).toBe('Your code is 482913.');
    expect(mail.html).toBe('<p>Your code is <b>482913</b>.</p>');
    expect(mail.headers.get('x-relay-id')).toBe('42');
    outbox.close();
  });

  it('signs with DKIM when configured, as the SMTP transport does', async () => {
    const dir = scratch();
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const outbox = createMailOutbox({
      dir,
      from,
      dkim: { domainName: 'mail.example.com', keySelector: 'relay2026', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    });
    await outbox.send({ to: 'alice@example.org', subject: 's', text: 't' });
    const [file] = readdirSync(dir);
    expect(readFileSync(path.join(dir, file!), 'utf8')).toMatch(/^DKIM-Signature: v=1; a=rsa-sha256; c=relaxed\/relaxed; d=mail\.example\.com;/m);
  });

  it('refuses what the SMTP transport refuses: several recipients, header injection', async () => {
    const dir = scratch();
    const outbox = createMailOutbox({ dir, from });
    await expect(outbox.send({ to: 'alice@example.org, bob@example.org', subject: 's', text: 't' })).rejects.toMatchObject({
      name: 'DeliveryError',
      retryable: false,
    });
    await expect(
      outbox.send({ to: 'alice@example.org', subject: 's', text: 't', headers: [{ name: 'X-Note', value: 'ok\r\nBcc: victim@example.net' }] }),
    ).rejects.toMatchObject({ name: 'DeliveryError', retryable: false });
    expect(readdirSync(dir)).toEqual([]);
  });
});
