import { Webhook } from 'standardwebhooks';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';
import { SecretBox } from '../../src/webhooks/secrets.js';
import { allowRanges, newMessageId, newSecret, refusedAddress, retryDelay, RETRY_DELAYS_MS, sign } from '../../src/webhooks/rules.js';

describe('webhook signing (Standard Webhooks)', () => {
  it('signs as the reference implementation verifies', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const id = newMessageId();
    expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    const timestamp = Math.floor(Date.now() / 1000);
    const body = JSON.stringify({ type: 'webhook.test', data: { ü: '✓' } });
    const signature = sign(secret, id, timestamp, body);
    expect(signature).toBe(new Webhook(secret).sign(id, new Date(timestamp * 1000), body));
    expect(new Webhook(secret).verify(body, { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature })).toEqual(JSON.parse(body));
  });
});

describe('webhook retries', () => {
  it('waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, then gives up (over 24 hours in all)', () => {
    expect([1, 2, 3, 4, 5, 6, 7].map(retryDelay)).toEqual(RETRY_DELAYS_MS);
    expect(retryDelay(8)).toBeUndefined();
    expect(RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)).toBeGreaterThan(24 * 3_600_000);
  });
});

describe('webhook addresses', () => {
  it('refuses what is not public, unless the operator allows its range', () => {
    for (const a of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '100.64.0.1', '224.0.0.1', '0.0.0.0', '::1', 'fd00:ec2::254', 'fe80::1', '::ffff:10.0.0.1']) {
      expect(refusedAddress(a, []), a).toBeDefined();
    }
    expect(refusedAddress('8.8.8.8', [])).toBeUndefined();
    expect(refusedAddress('2001:4860:4860::8888', [])).toBeUndefined();
    const ranges = allowRanges(['127.0.0.0/8', 'fd00::/8']);
    expect(refusedAddress('127.0.0.1', ranges)).toBeUndefined();
    expect(refusedAddress('fd00:ec2::254', ranges)).toBeUndefined();
    expect(refusedAddress('10.0.0.1', ranges)).toBeDefined();
    expect(() => allowRanges(['not-a-range'])).toThrow(/WEBHOOK_ALLOW_RANGES/);
  });
});

describe('webhook secrets at rest (WEBHOOK_SECRETS_KEY)', () => {
  const [a, b] = [randomBytes(32), randomBytes(32)];

  it('seals with the first key so that the stored value holds no trace of the secret, and opens it again', () => {
    const box = new SecretBox([a]);
    const secret = newSecret();
    const stored = box.seal(secret);
    expect(stored).toMatch(/^sealed:v1:[0-9a-f]{8}:[A-Za-z0-9+/]+=*$/);
    expect(stored).not.toContain(secret.slice(6));
    expect(stored).not.toContain(Buffer.from(secret.slice(6), 'base64').toString('hex'));
    expect(box.seal(secret)).not.toBe(stored); // a fresh IV each time
    expect(box.open(stored)).toEqual({ secret, stale: false });
  });

  it('keeps secrets in clear without a key, and calls a clear one stale once a key is set', () => {
    const secret = newSecret();
    expect(new SecretBox([]).seal(secret)).toBe(secret);
    expect(new SecretBox([]).open(secret)).toEqual({ secret, stale: false });
    expect(new SecretBox([a]).open(secret)).toEqual({ secret, stale: true });
  });

  it('rotates: every key opens, only the first seals, and a secret sealed with a later one is stale', () => {
    const secret = newSecret();
    const old = new SecretBox([a]).seal(secret);
    const rotated = new SecretBox([b, a]);
    expect(rotated.open(old)).toEqual({ secret, stale: true });
    expect(rotated.open(rotated.seal(secret))).toEqual({ secret, stale: false });
  });

  it('refuses a value sealed with a key it does not hold, or altered', () => {
    const stored = new SecretBox([a]).seal(newSecret());
    expect(() => new SecretBox([b]).open(stored)).toThrow(/does not hold/);
    expect(() => new SecretBox([]).open(stored)).toThrow(/does not hold/);
    const data = Buffer.from(stored.split(':')[3]!, 'base64');
    data[20]! ^= 1;
    const altered = stored.split(':').slice(0, 3).concat(data.toString('base64')).join(':');
    expect(() => new SecretBox([a]).open(altered)).toThrow();
  });

  it('is read from the environment: base64 keys of 32 bytes, comma-separated; anything else is refused without showing it', () => {
    const keys = [a, b].map((k) => k.toString('base64'));
    expect(loadConfig({ WEBHOOK_SECRETS_KEY: keys.join(',') }).webhooks.secretKeys).toEqual([a, b]);
    expect(loadConfig({}).webhooks.secretKeys).toEqual([]);
    for (const bad of ['short', randomBytes(16).toString('base64'), `${keys[0]},`, `${keys[0]}\n`]) {
      expect(() => loadConfig({ WEBHOOK_SECRETS_KEY: bad })).toThrow(ConfigError);
      try {
        loadConfig({ WEBHOOK_SECRETS_KEY: bad });
      } catch (err) {
        expect((err as Error).message).toContain('WEBHOOK_SECRETS_KEY');
        expect((err as Error).message).not.toContain(bad);
      }
    }
    expect(() => new SecretBox([randomBytes(16)])).toThrow(/32 bytes/);
  });
});
