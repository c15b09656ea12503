import { describe, expect, it } from 'vitest';
import { checkSenderName, normaliseEmail } from '../../src/account/accounts.js';
import { csvField } from '../../src/audit/trail.js';
import { hashPassword, passwordProblem, verifyPassword } from '../../src/account/passwords.js';
import { sameText } from '../../src/account/secrets.js';
import { loadConfig } from '../../src/config.js';
import { brandMail, smsPrefix } from '../../src/relay/white-label.js';
import { localPath } from '../../src/web/context.js';

describe('passwords', () => {
  it('hash with scrypt and verify only the same password', async () => {
    const stored = await hashPassword('a long passphrase', 14);
    expect(stored).toMatch(/^scrypt\$14\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(await verifyPassword('a long passphrase', stored)).toBe(true);
    expect(await verifyPassword('a long passphrasE', stored)).toBe(false);
    expect(await hashPassword('a long passphrase', 14)).not.toBe(stored);
  });

  it('never match a malformed or absurdly expensive stored value', async () => {
    for (const stored of ['', 'plain', 'scrypt$14$8$1$$', 'scrypt$30$8$1$c2FsdA$aGFzaA', 'md5$x$y$z$a$b']) {
      expect(await verifyPassword('x', stored)).toBe(false);
    }
  });

  it('refuse short, over-long, repetitive passwords and the address itself', () => {
    expect(passwordProblem('short', 'a@example.org')).toMatch(/at least 10/);
    expect(passwordProblem('x'.repeat(257), 'a@example.org')).toMatch(/at most 256/);
    expect(passwordProblem('aaaaaaaaaaaa', 'a@example.org')).toMatch(/different/);
    expect(passwordProblem('A@example.org', 'a@example.org')).toBeDefined();
    expect(passwordProblem('correct horse battery', 'a@example.org')).toBeUndefined();
  });
});

describe('addresses and names', () => {
  it('take one plain address, lower-cased, and nothing that could reach a header', () => {
    expect(normaliseEmail(' Ada@Example.ORG ')).toBe('ada@example.org');
    for (const bad of ['a@example.org\r\nBcc: b@evil.test', 'Ada <a@example.org>', 'a@example.org,b@example.org', 'a@localhost', `${'a'.repeat(250)}@example.org`, 42, undefined]) {
      expect(normaliseEmail(bad)).toBeUndefined();
    }
  });

  it('take a sender name of one printable line', () => {
    expect(checkSenderName('  Brand Shop ')).toBe('Brand Shop');
    expect(checkSenderName('')).toBeNull();
    expect(() => checkSenderName('Shop\r\nBcc: x@evil.test')).toThrow();
    expect(() => checkSenderName('x'.repeat(65))).toThrow();
  });

  it('compare secrets whatever their lengths', () => {
    expect(sameText('abc', 'abc')).toBe(true);
    expect(sameText('abc', 'abd')).toBe(false);
    expect(sameText('abc', 'abcd')).toBe(false);
  });
});

describe('next after sign-in', () => {
  it('is a local /account path or the dashboard', () => {
    expect(localPath('/account/audit?kind=sign_in')).toBe('/account/audit?kind=sign_in');
    for (const bad of ['//evil.example', '/\\evil.example', 'https://evil.example/account', '/lookup', '/account\r\nSet-Cookie: x=1', 'javascript:alert(1)', undefined, ['/account']]) {
      expect(localPath(bad)).toBe('/account');
    }
  });
});

describe('CSV export', () => {
  it('quotes every field and defuses formulas', () => {
    expect(csvField('plain')).toBe('"plain"');
    expect(csvField('say "hi"')).toBe('"say ""hi"""');
    for (const formula of ['=1+1', '+1', '-1', '@SUM(A1)', '\tx']) expect(csvField(formula).startsWith(`"'`)).toBe(true);
    expect(csvField(new Date('2026-01-02T03:04:05Z'))).toBe('"2026-01-02T03:04:05.000Z"');
  });
});

describe('white-label', () => {
  const payload = { subject: 's', html: '<p>x</p>', text: 'x', senderName: 'Client', headers: [] };

  it('gives Business and Enterprise their own sender name and no footer', () => {
    expect(brandMail(payload, 'business', 'Brand', 'Sent by us')).toEqual({ ...payload, senderName: 'Brand' });
    expect(brandMail(payload, 'enterprise', null, 'Sent by us')).toEqual(payload);
    expect(smsPrefix('business', 'Brand', 'shop.example')).toBe('Brand');
    expect(smsPrefix('business', null, 'shop.example')).toBe('shop.example');
  });

  it('adds the service footer to Professional mail, escaped in HTML', () => {
    const branded = brandMail(payload, 'professional', 'Ignored', 'Sent by <Us>');
    expect(branded.senderName).toBe('Client');
    expect(branded.text).toBe('x\n\n-- \nSent by <Us>\n');
    expect(branded.html).toContain('Sent by &lt;Us&gt;');
    expect(brandMail(payload, 'professional', null, undefined)).toEqual(payload);
    expect(smsPrefix('professional', 'Brand', 'shop.example')).toBe('shop.example');
  });
});

describe('configuration of the web pages and Stripe', () => {
  it('has safe defaults: open sign-up, Secure cookies in production, no PUBLIC_URL guessed there', () => {
    const dev = loadConfig({});
    expect(dev.web).toMatchObject({ signup: 'open', cookieSecure: false, publicUrl: 'http://localhost:8080', scryptCost: 15 });
    expect(dev.stripe).toBeUndefined();
    const prod = loadConfig({ NODE_ENV: 'production' });
    expect(prod.web).toMatchObject({ cookieSecure: true, publicUrl: undefined });
    expect(loadConfig({ NODE_ENV: 'production', COOKIE_SECURE: 'false', PUBLIC_URL: 'https://trs.example.com' }).web).toMatchObject({
      cookieSecure: false,
      publicUrl: 'https://trs.example.com',
    });
  });

  it('refuses a bad sign-up mode and a PUBLIC_URL with a path or credentials', () => {
    expect(() => loadConfig({ SIGNUP: 'sometimes' })).toThrow(/SIGNUP/);
    expect(() => loadConfig({ PUBLIC_URL: 'https://trs.example.com/app' })).toThrow(/PUBLIC_URL/);
    expect(() => loadConfig({ PUBLIC_URL: 'https://user:pw@trs.example.com' })).toThrow(/PUBLIC_URL/);
  });

  it('reads a price per bundle and wants the key, the webhook secret and known bundles', () => {
    const stripe = loadConfig({
      STRIPE_SECRET_KEY: 'sk_test_abc',
      STRIPE_WEBHOOK_SECRET: 'whsec_abc',
      STRIPE_PRICE_SVC_MAIL_BUNDLE_1000: 'price_123',
    }).stripe;
    expect(stripe).toEqual({ secretKey: 'sk_test_abc', webhookSecret: 'whsec_abc', prices: { svc_mail_bundle_1000: 'price_123' }, apiBase: undefined });
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_PRICE_SVC_MAIL_BUNDLE_1000: 'price_1' })).toThrow(/STRIPE_WEBHOOK_SECRET/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc' })).toThrow(/STRIPE_PRICE_/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc', STRIPE_PRICE_GOLD: 'price_1' })).toThrow(/no bundle gold/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc', STRIPE_PRICE_SVC_SMS_BUNDLE_50: 'prod_1' })).toThrow(/price id/);
    expect(() => loadConfig({ STRIPE_SECRET_KEY: 'sk_test_abc', STRIPE_WEBHOOK_SECRET: 'whsec_abc', STRIPE_PRICE_SVC_SMS_BUNDLE_50: 'price_1', STRIPE_API_BASE: 'http://stripe.example' })).toThrow(/STRIPE_API_BASE/);
  });
});
