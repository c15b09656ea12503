import { createPublicKey, verify } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUE_TTL_MS, CategoryService } from '../../src/categories/service.js';
import { generateSigningKey } from '../../src/rules/rulesets.js';
import { hiveDomainNotice, hiveTierAtLeast, hiveTierFromRole, phpFormEncode, wpJsonEncode, wpSanitizeEmail } from '../support/clients.js';
import { rawCall, type CallResult } from '../support/http.js';
import { eventually, startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The ReportedIP Hive WordPress plugin (2.1.x) pointed at this server: only the host of its
 * API endpoint setting changed (`https://<host>/wp-json/reportedip/v2/`). Each test sends the
 * exact request the plugin sends (method, path, headers, body encoding) and reads the answer
 * the way the plugin reads it, asserting what the plugin would conclude.
 */
const SITE = 'https://shop.example.com';
const USER_AGENT = `ReportedIP-Hive/2.1.45 (WordPress/6.8.1; ${SITE})`;
const BASE = '/wp-json/reportedip/v2';

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
let rulesDir: string;
let rulesPublicKey: string;
let pro: string;

beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  rulesDir = await mkdtemp(path.join(os.tmpdir(), 'trs-rules-'));
  const signing = generateSigningKey();
  rulesPublicKey = signing.publicKey;
  await writeFile(path.join(rulesDir, 'signing.pem'), signing.privateKeyPem, { mode: 0o600 });
  await writeFile(path.join(rulesDir, 'scan_paths.json'), JSON.stringify({ version: 7, rules: ['/.env', '/.git/config', '/wp-config.php.bak'] }));
  s = await startTestServer({
    config: {
      relay: { mail: { smtpUrl: smtp.url, from: 'Relay <relay@example.net>' }, sms: { url: sms.url, token: sms.token } },
      rules: { dir: rulesDir, signingKeyFile: path.join(rulesDir, 'signing.pem') },
    },
  });
  pro = (await s.createKey('professional', { name: 'shop.example.com' })).key;
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
  await rm(rulesDir, { recursive: true, force: true });
});

/** The headers the plugin sends on every API call (make_request / relay_request). */
const hiveHeaders = (key: string, extra: Record<string, string> = {}) => ({
  'X-Key': key,
  'X-Rip-Site': SITE,
  'User-Agent': USER_AGENT,
  Accept: 'application/json',
  ...extra,
});
const hiveGet = (key: string, endpoint: string, extra?: Record<string, string>) => rawCall(s.origin, `${BASE}/${endpoint}`, { headers: hiveHeaders(key, extra) });
const hiveForm = (key: string, endpoint: string, body: Record<string, unknown>) =>
  rawCall(s.origin, `${BASE}/${endpoint}`, {
    method: 'POST',
    headers: hiveHeaders(key, { 'Content-Type': 'application/x-www-form-urlencoded' }),
    body: phpFormEncode(body),
  });
const hiveJson = (key: string, endpoint: string, body: unknown) =>
  rawCall(s.origin, `${BASE}/${endpoint}`, { method: 'POST', headers: hiveHeaders(key, { 'Content-Type': 'application/json' }), body: wpJsonEncode(body) });

/** What the plugin treats as a successful report: HTTP 200 exactly and a `data` key. */
const reportSucceeded = (res: CallResult) => res.status === 200 && typeof res.body === 'object' && 'data' in res.body;
/** The message the plugin stores for a failed report: top-level message, else code. */
const shownError = (res: CallResult) => res.body?.message ?? res.body?.code ?? 'Unknown error';

describe('Hive: verify-key (test connection, quota refresh)', () => {
  it('reads a Professional key as the professional tier, with report permission and the relay', async () => {
    const res = await hiveGet(pro, 'verify-key');
    expect(res.status).toBe(200);
    const data = res.body.data;
    expect(data.valid).toBe(true);
    const tier = hiveTierFromRole(data.userRole);
    expect(tier).toBe('professional');
    expect(hiveTierAtLeast(tier, 'professional')).toBe(true); // relay, frontend 2FA, hardening …
    expect(data.keyName).toBe('shop.example.com');
    expect(data.isHoneypotKey).toBe(false);
    // dailyReportLimit 0 would mean "no report permission" and stop the report queue.
    expect(data.limits).toMatchObject({ dailyApiLimit: 25_000, dailyReportLimit: 1_000, remainingReports: 1_000, dailyReportUsage: 0 });
    expect(Number.isNaN(Date.parse(data.limits.resetTime))).toBe(false);
    expect(data.domains).toMatchObject({ limit: 10, status: 'ok' });
  });

  it('reads unlimited quotas as -1 and a honeypot key as such', async () => {
    const honeypot = (await s.createKey('honeypot')).key;
    const data = (await hiveGet(honeypot, 'verify-key')).body.data;
    expect(hiveTierFromRole(data.userRole)).toBe('honeypot');
    expect(data.isHoneypotKey).toBe(true);
    expect(data.limits).toMatchObject({ dailyApiLimit: -1, remainingApiCalls: -1, dailyReportLimit: -1, remainingReports: -1 });
  });

  it('gets 401 for a key it does not know ("API key authentication failed")', async () => {
    expect((await hiveGet('trs_' + 'Q'.repeat(43), 'verify-key')).status).toBe(401);
  });
});

describe('Hive: check (login pre-check, IP lookup)', () => {
  it('reads the score, the whitelist veto and numeric rate-limit headers', async () => {
    const res = await hiveGet(pro, 'check?ip=8.8.8.8&verbose=false');
    expect(res.status).toBe(200);
    expect(typeof res.body.data.abuseConfidencePercentage).toBe('number');
    expect(res.body.data.isWhitelisted).toBe(false);
    expect(Number(res.headers.get('x-ratelimit-limit'))).toBe(25_000);
    expect(Number.isInteger(Number(res.headers.get('x-ratelimit-remaining')))).toBe(true);
  });

  it('accepts an IPv6 address as http_build_query encodes it, and verbose=true', async () => {
    const res = await hiveGet(pro, `check?${phpFormEncode({ ip: '2001:4860:4860::8888', verbose: 'true' })}`);
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ip: '2001:4860:4860::8888', countryCode: expect.any(String) });
    expect(res.body.data.confidenceBreakdown).toBeDefined();
  });
});

describe('Hive: report queue', () => {
  // The category sets of Hive's event map (failed login, comment spam, XML-RPC, admin scan,
  // reputation threat, user enumeration, REST abuse, app passwords / spray / 2FA, 404 scans,
  // WooCommerce login, geo anomaly / WAF / hidden login).
  const EVENT_CATEGORIES = ['18', '12', '21', '21,15', '15,4', '55', '34', '31,18', '57,56,58', '31', '15'];

  it('stores every category set Hive sends, form-encoded, once the web catalogue is on', async () => {
    await new CategoryService(s.orm.em, s.clock).setCatalogue('web', true);
    s.clock.advance(CATALOGUE_TTL_MS); // every process reads the catalogue again within this time
    const key = (await s.createKey('professional')).key;
    for (const [i, categories] of EVENT_CATEGORIES.entries()) {
      const ip = `8.8.${i}.77`;
      const res = await hiveForm(key, 'report', {
        ip,
        categories,
        comment: `WordPress login brute-force detected on Shop (${SITE}): 5 failed attempts in 10 minutes`,
      });
      expect(reportSucceeded(res), `${categories}: ${JSON.stringify(res.body)}`).toBe(true);
      expect(res.body.data).toMatchObject({ ip, ignoredCategories: [] });
      expect(res.body.data.categories).toEqual(categories.split(',').map(Number).sort((a, b) => a - b));
      // On /report the rate-limit headers are the report counter's: Hive copies them into its quota.
      expect(Number(res.headers.get('x-ratelimit-limit'))).toBe(1_000);
      expect(Number(res.headers.get('x-ratelimit-remaining'))).toBe(1_000 - i - 1);
    }
    const { rows } = await s.pool.query("select comment from reports where ip = '8.8.0.77'");
    expect(rows[0].comment).toBe(`WordPress login brute-force detected on Shop (${SITE}): 5 failed attempts in 10 minutes`);
    await new CategoryService(s.orm.em, s.clock).setCatalogue('web', false);
    s.clock.advance(CATALOGUE_TTL_MS);
  });

  it('without the web catalogue, still stores a report with its known ids and says which were ignored', async () => {
    const key = (await s.createKey('professional')).key;
    const mixed = await hiveForm(key, 'report', { ip: '8.8.9.1', categories: '31,18', comment: 'spray' });
    expect(reportSucceeded(mixed)).toBe(true);
    expect(mixed.body.data).toMatchObject({ categories: [18], ignoredCategories: [31] });
    // Only web ids: refused, and the plugin shows why instead of "Unknown error".
    const only = await hiveForm(key, 'report', { ip: '8.8.9.2', categories: '57,56,58', comment: 'scan' });
    expect(only.status).toBe(422);
    expect(only.body.code).toBe('unknown_category');
    expect(shownError(only)).toMatch(/no category id of the report is in the catalogue/);
  });

  it("shows the server's reason for a refused report", async () => {
    const res = await hiveForm(pro, 'report', { ip: '192.168.1.20', categories: '18', comment: 'x' });
    expect(res.status).toBe(422);
    expect(shownError(res)).toMatch(/private/);
    expect(res.body.code).toBe('address_not_reportable');
  });

  it('pauses on a used-up quota with Retry-After in seconds', async () => {
    const free = (await s.createKey('free')).key;
    await s.pool.query("insert into usage_counters (subject, counter, day, used) select 'a:' || account_id, 'report', $1::date, 50 from api_keys where prefix = $2", [
      s.clock.now().toISOString().slice(0, 10),
      free.slice(0, 12),
    ]);
    const res = await hiveForm(free, 'report', { ip: '8.8.9.3', categories: '18', comment: 'x' });
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

describe('Hive: licensed domains', () => {
  it('shows no domain warning for a key used on exactly its number of sites', async () => {
    const free = (await s.createKey('free')).key; // one site a day
    expect((await hiveGet(free, 'check?ip=8.8.8.8&verbose=false')).status).toBe(200);
    const domains = (await hiveGet(free, 'verify-key')).body.data.domains;
    expect(domains).toEqual({ used: 1, limit: 1, status: 'ok' });
    expect(hiveDomainNotice(domains)).toBeUndefined();
  });

  it('refuses a new site past the limit with domain_limit_exceeded, and then warns on the allowed site', async () => {
    const free = (await s.createKey('free')).key;
    const first = await hiveGet(free, 'check?ip=8.8.8.8&verbose=false');
    expect(first.status).toBe(200);
    const other = { 'X-Rip-Site': 'https://other.example.org' };
    const second = await hiveGet(free, 'check?ip=8.8.8.8&verbose=false', other);
    expect(second.status).toBe(403);
    expect(second.body.code).toBe('domain_limit_exceeded');
    // A second refusal of the same site counts it once.
    expect((await hiveGet(free, 'check?ip=8.8.8.8&verbose=false', other)).status).toBe(403);
    const domains = (await hiveGet(free, 'verify-key')).body.data.domains;
    expect(domains).toEqual({ used: 2, limit: 1, status: 'over_limit' });
    expect(hiveDomainNotice(domains)).toBe('Your Community Access Key is used on 2 domains, but your plan includes 1.');
    // The site it was already used from keeps working; the refused one stays refused.
    expect((await hiveGet(free, 'check?ip=8.8.8.8&verbose=false')).status).toBe(200);
    expect((await hiveGet(free, 'check?ip=8.8.8.8&verbose=false', other)).status).toBe(403);
  });

  it('counts a relay send refused for a further site as an attempt too', async () => {
    const key = await s.createKey('professional'); // ten sites a day
    for (let i = 0; i < 10; i++) {
      const res = await hiveGet(key.key, 'check?ip=8.8.8.8&verbose=false', { 'X-Rip-Site': `https://site${i}.example.com` });
      expect(res.status).toBe(200);
    }
    expect((await hiveGet(key.key, 'verify-key')).body.data.domains).toEqual({ used: 10, limit: 10, status: 'ok' });
    const refused = await hiveJson(key.key, 'relay-mail', { recipient: 'someone@example.org', subject: 'Code', body_text: 'Your code is 1', headers: [], site_url: 'https://eleventh.example.com' });
    expect(refused.status).toBe(429);
    expect(refused.body.code).toBe('site_daily_cap');
    expect((await hiveGet(key.key, 'verify-key')).body.data.domains).toEqual({ used: 11, limit: 10, status: 'over_limit' });
  });
});

describe('Hive: positive feedback and notification settings', () => {
  it('records an unblocked address as positive feedback, form-encoded', async () => {
    const key = (await s.createKey('contributor')).key;
    const res = await hiveForm(key, 'whitelist', { ipAddress: '8.8.4.4', reason: 'Unblocked by the site owner' });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ ip: '8.8.4.4', positiveFeedbackCount: 1, duplicate: false });
    // A Free key may not: 403, which this version of Hive drops as done.
    const free = (await s.createKey('free')).key;
    expect((await hiveForm(free, 'whitelist', { ipAddress: '8.8.4.4', reason: 'x' })).status).toBe(403);
  });

  it('sends positive feedback from its queue after its reports used up the day, and is done with it', async () => {
    const created = await s.createKey('contributor');
    await s.pool.query("insert into usage_counters (subject, counter, day, used) values ($1, 'report', $2::date, 200)", [
      `a:${created.accountId}`,
      s.clock.now().toISOString().slice(0, 10),
    ]);
    expect((await hiveForm(created.key, 'report', { ip: '8.8.9.9', categories: '18', comment: 'x' })).status).toBe(429);
    // report_positive_feedback: true only for HTTP 200; anything else but 403 marks the queue
    // row failed and burns one of its few retries.
    const res = await hiveForm(created.key, 'whitelist', { ipAddress: '8.8.9.9', reason: 'Unblocked by the site owner' });
    expect(res.status).toBe(200);
  });

  it('stores the notification configuration Hive syncs, and reads it back', async () => {
    // The recipients option as the site owner typed it; Hive splits it at commas and passes
    // each part through sanitize_email() (twice: reading the option, then building the body).
    const option = 'security@shop.example.com, admin@shop.example.com';
    const recipients = option.split(',').map((part) => wpSanitizeEmail(wpSanitizeEmail(part.trim()))).filter((address) => address !== '');
    expect(recipients).toEqual(['security@shop.example.com', 'admin@shop.example.com']);
    const body = { site_url: SITE, recipients, from_name: 'Shop Security', from_email: wpSanitizeEmail('wordpress@shop.example.com') };
    const res = await hiveJson(pro, 'notification-config', body);
    expect(res.status).toBe(200);
    const back = await hiveGet(pro, `notification-config?site_url=${encodeURIComponent(SITE)}`);
    expect(back.body.data).toMatchObject({ site: 'shop.example.com', recipients: ['security@shop.example.com', 'admin@shop.example.com'], from_name: 'Shop Security' });
  });
});

describe('Hive: rule sync', () => {
  it('verifies a signed rule set against the pinned public key, then gets 304 for its ETag', async () => {
    const res = await hiveGet(pro, 'rules/scan_paths');
    expect(res.status).toBe(200);
    const { payload, signature } = res.body as { payload: string; signature: string };
    expect(typeof payload).toBe('string');
    expect(Buffer.byteLength(payload)).toBeLessThanOrEqual(512 * 1024);
    const signatureBytes = Buffer.from(signature, 'base64');
    expect(signatureBytes.toString('base64')).toBe(signature); // strict base64
    expect(signatureBytes).toHaveLength(64);
    // sodium_crypto_sign_verify_detached over the exact payload bytes, with the 32-byte key.
    const key = createPublicKey({ key: Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(rulesPublicKey, 'base64')]), format: 'der', type: 'spki' });
    expect(verify(null, Buffer.from(payload, 'utf8'), key, signatureBytes)).toBe(true);
    expect(JSON.parse(payload)).toEqual({ key: 'scan_paths', version: 7, rules: ['/.env', '/.git/config', '/wp-config.php.bak'] });
    const etag = res.headers.get('etag')!;
    const again = await hiveGet(pro, 'rules/scan_paths', { 'If-None-Match': etag });
    expect(again.status).toBe(304);
  });

  it('gets a non-200 it ignores for a rule set the operator has not published', async () => {
    const res = await hiveGet(pro, 'rules/tor_exits');
    expect(res.status).toBe(404);
  });
});

describe('Hive: 2FA relay', () => {
  it('reads relay-quota.tier as its lowercase tier id', async () => {
    const res = await hiveGet(pro, 'relay-quota');
    expect(res.status).toBe(200);
    expect(res.body.tier).toBe('professional');
    expect(hiveTierAtLeast(res.body.tier, 'professional')).toBe(true);
    expect(res.body.mail).toMatchObject({ limit: 500, queued_total: expect.any(Number), bundle_balance: 0 });
    expect(res.body.period_start ?? res.body.mail.period_start).toBeDefined();
  });

  it('relays a 2FA mail with the headers as an object, From and Content-Type taken safely', async () => {
    const res = await hiveJson(pro, 'relay-mail', {
      recipient: 'customer@example.org',
      subject: 'Your login code',
      body_text: 'Your code is 482913',
      body_html: '<p>Your code is <b>482913</b></p>',
      headers: { 'Content-Type': 'text/html; charset=UTF-8', From: 'My Shop <wordpress@shop.example.com>' },
      site_url: SITE,
      reply_to: 'admin@shop.example.com',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ ok: true, queue_id: expect.any(Number), remaining_quota: { limit: 500 } });
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes('customer@example.org')));
    const mail = smtp.received.find((m) => m.envelopeTo.includes('customer@example.org'))!;
    // The site's name, the relay's address: no sender can be forged.
    expect(mail.mail.from?.value).toEqual([{ name: 'My Shop', address: 'relay@example.net' }]);
    expect(mail.mail.replyTo?.value[0]?.address).toBe('admin@shop.example.com');
    expect(mail.mail.html).toContain('<b>482913</b>');
    expect(mail.envelopeTo).toEqual(['customer@example.org']);
  });

  it('relays a 2FA mail whose headers a site filter extended, leaving out the ones it does not copy', async () => {
    // What a filter on Hive's mail arguments may add (wp_mail style "Name: value" lines), as
    // headers_array_to_map turns them into the body's map.
    const res = await hiveJson(pro, 'relay-mail', {
      recipient: 'filtered@example.org',
      subject: 'Your login code',
      body_text: 'Your code is 271828',
      body_html: '<p>Your code is <b>271828</b></p>',
      headers: {
        'Content-Type': 'text/html; charset=UTF-8',
        From: 'My Shop <wordpress@shop.example.com>',
        'MIME-Version': '1.0',
        'Auto-Submitted': 'auto-generated',
        Precedence: 'bulk',
        'List-Unsubscribe': '<mailto:unsubscribe@shop.example.com>',
        'X-Shop-Mail': 'login-code',
      },
      site_url: SITE,
    });
    // Hive counts any answer with ok true as sent; a 422 would have lost the mail (no fallback).
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ ok: true, ignored_headers: ['MIME-Version', 'Auto-Submitted', 'Precedence', 'List-Unsubscribe'] });
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes('filtered@example.org')));
    const mail = smtp.received.find((m) => m.envelopeTo.includes('filtered@example.org'))!;
    expect(mail.mail.headers.get('x-shop-mail')).toBe('login-code');
    expect(mail.mail.headers.has('list-unsubscribe')).toBe(false);
    expect(mail.mail.headers.has('precedence')).toBe(false);
    expect(mail.mail.from?.value).toEqual([{ name: 'My Shop', address: 'relay@example.net' }]);
    expect(mail.mail.html).toContain('<b>271828</b>');
  });

  it('refuses a mail with a header that would change its recipients or sender identity', async () => {
    for (const headers of [{ Bcc: 'someone@attacker.test' }, { Sender: 'ceo@example.com' }, { 'Message-ID': '<forged@example.com>' }]) {
      const res = await hiveJson(pro, 'relay-mail', { recipient: 'guarded@example.org', subject: 'Code', body_text: 'Your code is 1', headers, site_url: SITE });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ ok: false, code: 'invalid_request' });
    }
  });

  it('relays a mail with no headers (sent as [])', async () => {
    const res = await hiveJson(pro, 'relay-mail', { recipient: 'other@example.org', subject: 'Test', body_text: 'Test mail', body_html: '<p>Test</p>', headers: [], site_url: SITE });
    expect(res.status).toBe(200);
  });

  it('relays the 2fa_login SMS template in the site language, or English for one it lacks', async () => {
    for (const [lang, expected] of [['de', /Ihr Anmeldecode lautet 654321\. Er ist 10 Minuten gültig\./], ['it', /Your login code is 654321\. It expires in 10 minutes\./]] as const) {
      const phone = lang === 'de' ? '+4915112300001' : '+4915112300002';
      const res = await hiveJson(pro, 'relay-sms', {
        recipient_phone: phone,
        template_code: '2fa_login',
        template_vars: { code: '654321', expiry_min: 10, lang },
        site_url: SITE,
      });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      await eventually(() => sms.requests.some((r) => r.body.to === phone));
      const sent = sms.requests.find((r) => r.body.to === phone)!;
      expect(sent.body.text).toMatch(/^shop\.example\.com: /);
      expect(sent.body.text).toMatch(expected);
    }
  });

  it('gets 422 country_not_supported, which it shows as "SMS not available for this number"', async () => {
    const res = await hiveJson(pro, 'relay-sms', { recipient_phone: '+8613800138000', template_code: '2fa_login', template_vars: { code: '654321', expiry_min: 10, lang: 'en' }, site_url: SITE });
    expect(res.status).toBe(422);
    expect(res.body.code).toBe('country_not_supported');
  });
});
