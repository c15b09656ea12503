import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
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
