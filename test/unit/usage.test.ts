import { describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/logging.js';
import { nextUtcMidnight } from '../../src/clock.js';
import { publicSubjectOf } from '../../src/keys/usage.repository.js';
import { dailyLimit } from '../../src/roles.js';

describe('publicSubjectOf', () => {
  it('counts an IPv4-mapped IPv6 address as its IPv4 address', () => {
    expect(publicSubjectOf('::ffff:203.0.113.9')).toBe(publicSubjectOf('203.0.113.9'));
  });
  it('counts IPv6 per /64', () => {
    expect(publicSubjectOf('2001:db8:1:2::1')).toBe(publicSubjectOf('2001:db8:1:2:ffff:eeee:dddd:cccc'));
    expect(publicSubjectOf('2001:db8:1:2::1')).not.toBe(publicSubjectOf('2001:db8:1:3::1'));
    expect(publicSubjectOf('2001:db8:1:2::1')).toBe('ip:2001:db8:1:2::/64');
  });
});

describe('nextUtcMidnight', () => {
  it('is the start of the next UTC day', () => {
    expect(nextUtcMidnight(new Date('2026-03-31T23:59:59.999Z')).toISOString()).toBe('2026-04-01T00:00:00.000Z');
    expect(nextUtcMidnight(new Date('2026-04-01T00:00:00.000Z')).toISOString()).toBe('2026-04-02T00:00:00.000Z');
  });
});

describe('dailyLimit', () => {
  it('multiplies business quotas by the licence count and reports unlimited as -1', () => {
    expect(dailyLimit('business', 5, 'check')).toBe(500_000);
    expect(dailyLimit('business', 5, 'report')).toBe(25_000);
    expect(dailyLimit('free', 1, 'check')).toBe(1_000);
    expect(dailyLimit('honeypot', 1, 'report')).toBe(-1);
  });
});

describe('redactUrl', () => {
  it('removes every key query parameter', () => {
    expect(redactUrl('/api/v2/check?ip=1.2.3.4&key=trs_secret&x=1')).toBe('/api/v2/check?ip=1.2.3.4&key=[redacted]&x=1');
    expect(redactUrl('/a?KEY=s1&key=s2')).toBe('/a?KEY=[redacted]&key=[redacted]');
    expect(redactUrl('/a')).toBe('/a');
  });
});
