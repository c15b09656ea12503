import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { CHROMIUM, launchChromium } from '../support/browser.js';
import { call } from '../support/http.js';
import { eventually, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { missingTools, requireTools } from '../support/tools.js';

/**
 * A person in a real browser (Debian's Chromium through playwright-core): the home page draws
 * the map and the charts; sign-up, the mail at a local SMTP server, the link, sign-in, a key
 * made on the dashboard that works on /verify-key, then revoked and refused. Screenshots go to
 * test-results/ (ignored by git); with UPDATE_SCREENSHOTS=1 the README's go to docs/screenshots/.
 */
const RESULTS = path.resolve('test-results');
const DOCS = path.resolve('docs', 'screenshots');
const PASSWORD = 'correct horse battery staple';

let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const foreign: string[] = [];

async function shot(p: Page, name: string, fullPage = true) {
  const png = await p.screenshot({ fullPage });
  replaceFile(path.join(RESULTS, `${name}.png`), png);
  if (process.env.UPDATE_SCREENSHOTS === '1') replaceFile(path.join(DOCS, `${name}.png`), png);
}

/** Writes a file whole or not at all (a new file renamed over the old): two runs at once never leave a torn one. */
function replaceFile(file: string, content: Buffer) {
  const temporary = `${file}.${process.pid}.${randomBytes(3).toString('hex')}.tmp`;
  writeFileSync(temporary, content);
  renameSync(temporary, file);
}

/** Chromium (CHROMIUM_PATH, or Debian's): skipped without it, naming it; CI=true fails instead. */
const missing = missingTools([CHROMIUM]);

describe('accounts in a real browser', () => {
  beforeEach((ctx) => requireTools(ctx, missing));
  beforeAll(async () => {
    if (missing) return;
    mkdirSync(RESULTS, { recursive: true });
    if (process.env.UPDATE_SCREENSHOTS === '1') mkdirSync(DOCS, { recursive: true });
    smtp = await startSmtp();
    s = await startTestServer({ config: { trustProxy: ['loopback'], relay: { mail: { smtpUrl: smtp.url, from: 'Accounts <accounts@example.net>' } } } });
    // Reports from three countries about addresses in others, so the map has shades and arcs.
    const reporter = (await s.createKey('enterprise')).key;
    const seed: [string, number[], string][] = [
      ['8.8.8.1', [14], '5.9.10.10'],
      ['8.8.8.2', [14, 18], '5.9.10.10'],
      ['77.88.8.8', [22], '81.2.69.142'],
      ['1.1.1.7', [18], '81.2.69.142'],
      ['5.9.10.20', [21], '4.2.2.2'],
      ['9.9.9.9', [4], '4.2.2.2'],
    ];
    for (const [ip, categories, from] of seed) {
      const res = await call(s.origin, '/api/v2/report', { key: reporter, json: { ip, categories }, headers: { 'X-Forwarded-For': from } });
      expect(res.status).toBe(200);
    }
    await blacklistSnapshots(s.pool, s.clock).regenerate();
    browser = await launchChromium();
    context = await newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
  });

  /** Every browser context of these tests (desktop, phone, no JavaScript): none may load anything from another origin. */
  async function newContext(options: Parameters<Browser['newContext']>[0]): Promise<BrowserContext> {
    const made = await browser.newContext(options);
    made.on('request', (request) => {
      if (new URL(request.url()).origin !== s.origin) foreign.push(request.url());
    });
    return made;
  }

  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await smtp?.close();
  });

  it('draws the map, the charts and the tables on the home page', async () => {
    await page.goto(`${s.origin}/`);
    // The map and the three charts are there, drawn and on screen (not merely a locator).
    const map = page.locator('svg.map');
    expect(await map.count()).toBe(1);
    expect(await map.isVisible()).toBe(true);
    expect(await page.locator('svg.map path.reported').count()).toBeGreaterThanOrEqual(3);
    expect(await page.locator('svg.map g:nth-of-type(2) path').count()).toBeGreaterThanOrEqual(2);
    const charts = page.locator('svg.chart');
    expect(await charts.count()).toBe(3);
    for (let i = 0; i < 3; i++) {
      expect(await charts.nth(i).isVisible()).toBe(true);
      const chartBox = await charts.nth(i).boundingBox();
      expect(chartBox!.width * chartBox!.height).toBeGreaterThan(0);
      // Each chart draws its series (a path with a shape), not an empty frame.
      expect(await charts.nth(i).locator('path[d^="M"]').count()).toBeGreaterThan(0);
    }
    const box = await map.boundingBox();
    expect(box!.width).toBeGreaterThan(600);
    expect(await page.locator('table.bars').first().textContent()).toContain('Brute-Force');
    await shot(page, 'home');
    // Readable on a phone: nothing wider than the screen.
    const phone = await newContext({ viewport: { width: 390, height: 844 }, isMobile: true });
    const small = await phone.newPage();
    await small.goto(`${s.origin}/`);
    expect(await small.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
    expect(await small.locator('svg.map').isVisible()).toBe(true);
    await shot(small, 'home-phone', false);
    await phone.close();
  });

  it('looks an address up from the home page', async () => {
    await page.goto(`${s.origin}/`);
    await page.getByLabel('IP address').fill('8.8.8.2');
    await page.getByLabel('IP address').press('Enter');
    await page.waitForURL(/\/lookup\?ip=8\.8\.8\.2/);
    expect(await page.locator('dl.facts').textContent()).toMatch(/Port Scan/);
  });

  it('signs up, confirms by mail, signs in, makes a key that works, revokes it', async () => {
    const email = 'ada@example.org';
    await page.goto(`${s.origin}/account/register`);
    await shot(page, 'register');
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign up' }).click();
    await expect(await page.locator('h1').textContent()).toBe('Check your mail');

    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes(email)));
    const mail = smtp.received.find((m) => m.envelopeTo.includes(email))!;
    const link = /https?:\/\/\S+\/account\/verify\?token=[A-Za-z0-9_-]{43}/.exec(mail.mail.text ?? '')![0];
    expect(link.startsWith(s.origin)).toBe(true);
    await page.goto(link);
    await page.getByRole('button', { name: 'Confirm my address' }).click();
    expect(await page.locator('h1').textContent()).toBe('Address confirmed');
    // The link works once.
    await page.goto(link);
    expect(await page.locator('h1').textContent()).toBe('This link does not work');

    await page.goto(`${s.origin}/account/sign-in`);
    await page.getByLabel('E-mail address').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    // Keyboard only: Enter sends the form.
    await page.getByLabel('Password').press('Enter');
    await page.waitForURL(`${s.origin}/account`);
    expect(await page.locator('dl.facts').textContent()).toContain('free');

    await page.getByLabel('Name of the new key (optional)').fill('laptop');
    await page.getByRole('button', { name: 'Generate a key' }).click();
    // POST-redirect-GET: the key is on a page of its own, fetched once.
    await page.waitForURL(`${s.origin}/account/keys/new`);
    const key = await page.locator('input#new-key').inputValue();
    expect(key).toMatch(/^trs_[A-Za-z0-9_-]{43}$/);
    await shot(page, 'key-created', false);
    // Stored as its SHA-256 only.
    const { rows } = await s.pool.query('select hash, prefix from api_keys where name = $1', ['laptop']);
    expect(rows[0].hash.equals(createHash('sha256').update(key).digest())).toBe(true);
    expect(key.startsWith(rows[0].prefix)).toBe(true);
    // Reloading makes no second key and shows this one no more: the browser lands on the dashboard.
    await page.reload();
    await page.waitForURL(`${s.origin}/account#keys`);
    expect(await page.content()).not.toContain(key);
    expect((await s.pool.query("select count(*)::int as n from api_keys where name = 'laptop'")).rows[0].n).toBe(1);

    const works = await call(s.origin, '/api/v2/verify-key', { key });
    expect(works.status).toBe(200);
    expect(works.body.data).toMatchObject({ valid: true, role: 'free', keyName: 'laptop' });

    // Shown once: the dashboard lists the prefix, never the key.
    await page.goto(`${s.origin}/account`);
    expect(await page.content()).not.toContain(key);
    expect(await page.locator('#keys table').textContent()).toContain(rows[0].prefix);
    await shot(page, 'dashboard');
    await page.getByRole('button', { name: 'Revoke key laptop' }).click();
    await page.waitForURL(/\/account\?revoked=1/);
    expect(await page.locator('#keys table').textContent()).toMatch(/revoked/);
    const refused = await call(s.origin, '/api/v2/verify-key', { key });
    expect(refused.status).toBe(401);
  });

  it('shows a Business account its relay quota and audit trail', async () => {
    const { rows } = await s.pool.query("update accounts set role = 'business', licences = 2 where email = 'ada@example.org' returning id");
    const key = (await s.createKey('business', { accountId: rows[0].id, name: 'shop' })).key;
    const sent = await call(s.origin, '/api/v2/relay-mail', { key, json: { recipient: 'customer@example.com', subject: 'Your code', body_text: 'Code 123456', site_url: 'https://shop.example.com/login' } });
    expect(sent.status).toBe(200);
    await eventually(() => smtp.received.some((m) => m.envelopeTo.includes('customer@example.com')));
    await page.goto(`${s.origin}/account`);
    expect(await page.locator('#relay table').textContent()).toContain('2,500');
    await page.getByRole('link', { name: 'All events, filters and CSV export' }).click();
    const text = await page.locator('main table').textContent();
    for (const event of ['sign in', 'key created', 'key revoked', 'email verified', 'relay mail']) expect(text).toContain(event);
    expect(text).toContain('shop.example.com');
    await shot(page, 'audit');
  });

  it('works without JavaScript and loaded nothing from another origin', async () => {
    const plain = await newContext({ javaScriptEnabled: false });
    const p = await plain.newPage();
    await p.goto(`${s.origin}/account/sign-in`);
    await p.getByLabel('E-mail address').fill('ada@example.org');
    await p.getByLabel('Password').fill(PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.waitForURL(`${s.origin}/account`);
    expect(await p.locator('h1').textContent()).toBe('Your account');
    await plain.close();
    expect(foreign).toEqual([]);
  });
});
