import { describe, expect, it } from 'vitest';
import { parseAddress, parseNetwork } from '../../src/address.js';
import { normaliseEmail } from '../../src/account/accounts.js';
import { DomainError } from '../../src/errors.js';
import { hashToken, isProven, newToken, requesterNetwork, tokenMatches, validateDelistInput, validateNote } from '../../src/delisting/rules.js';

const net = (text: string) => parseNetwork(text)!;
const addr = (text: string) => parseAddress(text)!;

describe('the proof of a delisting request', () => {
  it.each([
    ['45.155.205.7', '45.155.205.7', true],
    ['45.155.205.7', '45.155.205.8', false],
    ['45.155.205.0/24', '45.155.205.200', true],
    ['45.155.205.0/24', '45.155.206.1', false],
    ['2a0d:5600:24::5', '2a0d:5600:24::ffff:1', true],
    ['2a0d:5600:24::5', '2a0d:5600:24:1::5', false],
    ['2a0d:5600:24::/48', '2a0d:5600:24:ff::1', true],
    ['2a0d:5600:24::/48', '2a0d:5600:25::1', false],
    ['45.155.205.7', '::ffff:45.155.205.7', true],
    ['45.155.205.7', '2a0d:5600:24::5', false],
  ])('%s asked from %s: proven %s', (asked, from, proven) => {
    expect(isProven(net(asked), addr(from))).toBe(proven);
  });

  it('counts IPv4 callers by address and IPv6 callers by /64', () => {
    expect(requesterNetwork(addr('198.51.100.7'))).toBe('198.51.100.7/32');
    expect(requesterNetwork(addr('2001:db8:1:2:3::9'))).toBe('2001:db8:1:2::/64');
  });
});

describe('the fields of a request', () => {
  const good = { ip: '45.155.205.7', email: 'Owner@Example.org', reason: 'Line one\r\nline two' };
  it('normalises what it takes', () => {
    const valid = validateDelistInput(good, normaliseEmail);
    expect(valid.network.text).toBe('45.155.205.7/32');
    expect(valid.email).toBe('owner@example.org');
    expect(valid.reason).toBe('Line one\nline two');
    expect(validateDelistInput({ ...good, ip: '45.155.205.77/24' }, normaliseEmail).network.text).toBe('45.155.205.0/24');
  });

  it.each([
    [{ ...good, ip: '45.155.0.0/23' }, 'invalid_input'],
    [{ ...good, ip: '2a0d:5600::/47' }, 'invalid_input'],
    [{ ...good, ip: '45.155.205.7\n' }, 'invalid_input'],
    [{ ...good, email: 'a@example.org\nBcc: b@example.org' }, 'invalid_input'],
    [{ ...good, reason: 'x'.repeat(1001) }, 'invalid_input'],
    [{ ...good, reason: 'bell\u0007' }, 'invalid_input'],
    [{ ...good, ip: '100.64.0.1' }, 'unprocessable'],
    [{ ...good, ip: '8.8.8.0/24' }, undefined],
  ])('%j: %s', (input, kind) => {
    const run = () => validateDelistInput(input, normaliseEmail);
    if (kind === undefined) return expect(run).not.toThrow();
    expect(run).toThrow(DomainError);
    try {
      run();
    } catch (err) {
      expect((err as DomainError).kind).toBe(kind);
    }
  });

  it('takes an operator note of one line, required for a rejection', () => {
    expect(validateNote(' fine ', true)).toBe('fine');
    expect(validateNote(undefined, false)).toBe('');
    expect(() => validateNote('', true)).toThrow(DomainError);
    expect(() => validateNote('a\nb', false)).toThrow(DomainError);
    expect(() => validateNote('x'.repeat(501), false)).toThrow(DomainError);
  });
});

describe('the confirmation token', () => {
  it('is 43 base64url characters, stored as its SHA-256, and compared whole', () => {
    const { token, hash } = newToken();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(hash.equals(hashToken(token))).toBe(true);
    expect(tokenMatches(token, hash)).toBe(true);
    expect(tokenMatches(token.slice(0, -1), hash)).toBe(false);
    expect(tokenMatches('', hash)).toBe(false);
    expect(tokenMatches('x'.repeat(200), hash)).toBe(false);
  });
});
