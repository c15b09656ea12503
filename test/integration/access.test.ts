import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES, type Role } from '../../src/roles.js';
import { call } from '../support/http.js';
import { startSmsProvider, startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The role-by-operation table of the specification, through HTTP: every operation, called
 * without a key and with a key of each role, is refused with 401/403 or let through exactly
 * as the endpoint table says.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
const keys = {} as Record<Role, string>;
beforeAll(async () => {
  smtp = await startSmtp();
  sms = await startSmsProvider();
  s = await startTestServer({
    config: { relay: { mail: { smtpUrl: smtp.url, from: 'relay@example.net' }, sms: { url: sms.url, token: sms.token } } },
  });
  for (const role of ROLES) keys[role] = (await s.createKey(role, role === 'business' ? { licences: 2 } : {})).key;
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
  await sms?.close();
});

type Who = Role | 'public';
const ALL: Who[] = ['public', ...ROLES];
const KEYED: Role[] = [...ROLES];
const from = (...roles: Role[]) => roles;
const CONTRIBUTOR_UP = from('contributor', 'professional', 'business', 'enterprise', 'honeypot');
const PROFESSIONAL_UP = from('professional', 'business', 'enterprise', 'honeypot');
const RELAY = from('professional', 'business', 'enterprise');
const FEEDBACK = from('contributor', 'professional', 'business', 'enterprise');
const WEBHOOKS = from('business', 'enterprise');
const NO_WEBHOOK = '/webhooks/00000000-0000-4000-8000-000000000000';

/** Each operation with a valid request and who may call it. */
const OPERATIONS: { op: string; method: string; path: string; json?: unknown; allowed: Who[]; answers?: number[] }[] = [
  { op: 'checkIpPublic', method: 'GET', path: '/check-public?ip=8.8.8.8', allowed: ALL },
  // Delisting is open to everyone; the request here names an address that is not listed (422)
  // and a request that does not exist (404): what matters is that no role is refused.
  { op: 'createDelistRequest', method: 'POST', path: '/delist-requests', json: { ip: '8.8.8.8', email: 'owner@example.com', reason: 'our resolver' }, allowed: ALL, answers: [202, 422] },
  { op: 'getDelistRequest', method: 'GET', path: '/delist-requests/00000000-0000-4000-8000-000000000000?token=' + 'a'.repeat(43), allowed: ALL, answers: [404] },
  { op: 'getPublicStats', method: 'GET', path: '/stats-public', allowed: ALL },
  { op: 'searchIpsPublic', method: 'GET', path: '/search-public?q=8.8.', allowed: ALL },
  { op: 'listCategories', method: 'GET', path: '/categories', allowed: ALL },
  { op: 'getAttackMapData', method: 'GET', path: '/attack-map-data', allowed: ALL },
  { op: 'getStatistics', method: 'GET', path: '/statistics', allowed: ALL },
  { op: 'listBlacklistCategories', method: 'GET', path: '/blacklist-categories', allowed: ALL },
  { op: 'getBlacklistStats', method: 'GET', path: '/blacklist-stats', allowed: ALL },
  { op: 'checkIp', method: 'GET', path: '/check?ip=8.8.8.8', allowed: KEYED },
  { op: 'checkBlock', method: 'GET', path: '/check-block?network=8.8.8.0/24', allowed: KEYED },
  { op: 'checkAsn', method: 'GET', path: '/check-asn?asn=15169', allowed: KEYED },
  { op: 'reportIp', method: 'POST', path: '/report', json: { ip: '8.8.8.8', categories: [4] }, allowed: KEYED },
  { op: 'verifyKey', method: 'GET', path: '/verify-key', allowed: KEYED },
  { op: 'listReportEvidence', method: 'GET', path: '/reports/8.8.8.8/evidence', allowed: KEYED },
  { op: 'getBlacklist', method: 'GET', path: '/blacklist', allowed: CONTRIBUTOR_UP },
  { op: 'getStixFeed', method: 'GET', path: '/feeds/stix', allowed: CONTRIBUTOR_UP },
  { op: 'getMispManifest', method: 'GET', path: '/feeds/misp/manifest.json', allowed: CONTRIBUTOR_UP },
  // No address is listed here: every event uuid answers 404 (what matters is who is refused first).
  { op: 'getMispEvent', method: 'GET', path: '/feeds/misp/1f6b1c0e-5a43-5c3d-9b7e-3d1f0c8a2e41.json', allowed: CONTRIBUTOR_UP, answers: [404] },
  { op: 'listReports', method: 'GET', path: '/reports/8.8.8.8', allowed: PROFESSIONAL_UP },
  { op: 'getTrends', method: 'GET', path: '/trends', allowed: PROFESSIONAL_UP },
  { op: 'bulkCheckIps', method: 'POST', path: '/bulk-check', json: { ips: ['8.8.8.8'] }, allowed: PROFESSIONAL_UP },
  { op: 'bulkReportIps', method: 'POST', path: '/bulk-report', json: { csv: '8.8.8.8,4' }, allowed: from('enterprise', 'honeypot') },
  { op: 'getRelayQuota', method: 'GET', path: '/relay-quota', allowed: RELAY },
  {
    op: 'sendRelayMail',
    method: 'POST',
    path: '/relay-mail',
    json: { recipient: 'user@example.com', subject: 'Your code', body_text: 'Code 123456', site_url: 'https://a.example' },
    allowed: RELAY,
  },
  {
    op: 'sendRelaySms',
    method: 'POST',
    path: '/relay-sms',
    json: { recipient_phone: '+4915112345678', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 } },
    allowed: RELAY,
  },
  { op: 'getBlacklistDetailed', method: 'GET', path: '/blacklist-detailed', allowed: CONTRIBUTOR_UP },
  { op: 'getBlacklistCombined', method: 'GET', path: '/blacklist-combined', allowed: CONTRIBUTOR_UP },
  { op: 'exportBlacklistGit', method: 'GET', path: '/blacklist-export/git', allowed: CONTRIBUTOR_UP },
  { op: 'submitWhitelistFeedback', method: 'POST', path: '/whitelist', json: { ipAddress: '8.8.4.4', reason: 'our resolver' }, allowed: FEEDBACK },
  {
    op: 'saveNotificationConfig',
    method: 'POST',
    path: '/notification-config',
    json: { site_url: 'https://shop.example.com', recipients: ['a@example.com'], from_name: 'Shop', from_email: 'wp@shop.example.com' },
    allowed: KEYED,
  },
  // Saved above for each role, so it is there to read back.
  { op: 'getNotificationConfig', method: 'GET', path: '/notification-config?site_url=https://shop.example.com', allowed: KEYED },
  // Webhooks: a public address literal (no DNS in the test), and an id that does not exist.
  { op: 'createWebhook', method: 'POST', path: '/webhooks', json: { url: 'https://8.8.8.8/hook', events: ['address.listed'] }, allowed: WEBHOOKS, answers: [201] },
  { op: 'listWebhooks', method: 'GET', path: '/webhooks', allowed: WEBHOOKS },
  { op: 'deleteWebhook', method: 'DELETE', path: NO_WEBHOOK, allowed: WEBHOOKS, answers: [404] },
  { op: 'testWebhook', method: 'POST', path: `${NO_WEBHOOK}/test`, allowed: WEBHOOKS, answers: [404] },
];

describe('feature access by role', () => {
  it('covers all operations of the document (but getRuleset: a published rule set is needed, see clients tests)', async () => {
    const doc = (await call(s.origin, '/api/v2/openapi.json')).body;
    const documented = Object.values(doc.paths as Record<string, Record<string, { operationId: string }>>).flatMap((item) =>
      Object.values(item).map((o) => o.operationId),
    );
    expect(OPERATIONS.map((o) => o.op).sort()).toEqual(documented.filter((id) => id !== 'getRuleset').sort());
  });

  for (const { op, method, path, json, allowed, answers } of OPERATIONS) {
    it(`${op}: ${allowed.length === ALL.length ? 'everyone' : allowed.join(', ')}`, async () => {
      for (const who of ALL) {
        const res = await call(s.origin, `/api/v2${path}`, { method, json, key: who === 'public' ? undefined : keys[who] });
        const relay = op.startsWith('sendRelay') || op === 'getRelayQuota';
        let expected: number;
        if (allowed.includes(who)) expected = answers?.includes(res.status) ? res.status : 200;
        else expected = who === 'public' ? 401 : 403;
        expect({ who, status: res.status }).toEqual({ who, status: expected });
        if (expected === 401 || expected === 403) {
          if (relay) {
            expect(res.body).toMatchObject({ ok: false, code: expected === 401 ? 'missing_api_key' : 'tier_forbidden' });
          } else {
            const message = expected === 401 ? 'Invalid or missing API key.' : 'Your role does not have access to this endpoint.';
            expect(res.body).toEqual({
              meta: { success: false, code: expected, message },
              data: null,
              code: expected === 401 ? 'missing_api_key' : 'tier_forbidden',
              message: expected === 401 ? 'Invalid or missing API key: send it in the X-Key header.' : message,
            });
          }
        }
      }
    });
  }

  it('answers relay key problems with the relay codes', async () => {
    const malformed = await call(s.origin, '/api/v2/relay-quota', { key: 'nope' });
    expect(malformed.status).toBe(401);
    expect(malformed.body).toMatchObject({ ok: false, code: 'missing_api_key' });
    const unknown = await call(s.origin, '/api/v2/relay-quota', { key: 'trs_' + 'Z'.repeat(43) });
    expect(unknown.status).toBe(401);
    expect(unknown.body).toMatchObject({ ok: false, code: 'invalid_api_key' });
  });
});
