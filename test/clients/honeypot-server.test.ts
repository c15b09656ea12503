import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOGUE_TTL_MS, CategoryService } from '../../src/categories/service.js';
import { phpFormEncode } from '../support/clients.js';
import { rawCall, type CallResult } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The ReportedIP honeypot-server (1.3.x) with its `api_url` set to this server's report URL
 * (only the host changed). It posts a form with cURL and reads nothing but the status: 2xx is
 * sent, 429 and 5xx are retried, and any other 4xx drops the report for good. So a report must
 * never get a 4xx for anything transient or cosmetic, and a permanent refusal must say why.
 */
const API_URL = '/wp-json/reportedip/v2/report';
let s: TestServer;
let key: string;

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.createKey('honeypot')).key;
});
afterAll(async () => {
  await s?.close();
});

const post = (body: { ip: string; categories: string; comment: string }, apiKey = key): Promise<CallResult> =>
  rawCall(s.origin, API_URL, {
    method: 'POST',
    headers: {
      'X-Key': apiKey,
      'Content-Type': 'application/x-www-form-urlencoded',
      'User-Agent': 'reportedip-honeypot-server/1.3.1',
      'X-Honeypot-Version': '1.3.1',
      Accept: '*/*',
    },
    body: phpFormEncode(body),
  });

/** What the honeypot does with an answer. */
const outcome = (status: number) => (status >= 200 && status < 300 ? 'sent' : status === 429 || status >= 500 || status < 200 ? 'retry' : 'dropped');

/** The category sets its analyzers emit (sorted, joined by commas, as the queue sends them). */
const ANALYZER_SETS = [
  '15,32', '15,21', '18,31', '15,58', '37,46', '15,18', '43', '10,12,40', '21', '44,45', '21,52', '7,21,50',
  '14,15', '35,57', '15,19', '15,41', '4,51', '53', '16,45', '21,36', '12,42', '19,49', '15,55', '56,57', '15,35', '4,54', '33',
];

describe('honeypot-server', () => {
  it('has every analyzer category set stored, the web catalogue on', async () => {
    await new CategoryService(s.orm.em, s.clock).setCatalogue('web', true);
    s.clock.advance(CATALOGUE_TTL_MS);
    for (const [i, categories] of ANALYZER_SETS.entries()) {
      const ip = `9.9.${i}.10`;
      const res = await post({ ip, categories, comment: `[Analyzer${i}] probe of /wp-login.php | [UserAgentAnalyzer] sqlmap/1.7` });
      expect(outcome(res.status), `${categories}: ${JSON.stringify(res.body)}`).toBe('sent');
      expect(res.body.data.categories).toEqual(categories.split(',').map(Number));
    }
  });

  it('never drops a report for a long comment: it is shortened instead', async () => {
    const comment = Array.from({ length: 40 }, (_, i) => `[Analyzer${i}] ${'finding '.repeat(10)}`).join(' | ');
    expect(comment.length).toBeGreaterThan(3000);
    const res = await post({ ip: '9.9.100.1', categories: '16,45', comment });
    expect(outcome(res.status)).toBe('sent');
    expect(res.body.data.commentTruncated).toBe(true);
  });

  it('keeps a report whose categories are partly unknown to this server', async () => {
    await new CategoryService(s.orm.em, s.clock).setCatalogue('web', false);
    s.clock.advance(CATALOGUE_TTL_MS);
    const res = await post({ ip: '9.9.100.2', categories: '10,12,40', comment: '[FormSpamAnalyzer] spam' });
    expect(outcome(res.status)).toBe('sent');
    expect(res.body.data).toMatchObject({ categories: [10, 12], ignoredCategories: [40] });
  });

  it('says why when it drops a report for good', async () => {
    const res = await post({ ip: '10.0.0.8', categories: '21', comment: '[HttpVerbAnalyzer] TRACE' });
    expect(outcome(res.status)).toBe('dropped');
    // The honeypot keeps the first 200 characters of the body as the reason.
    expect(JSON.stringify(res.body).slice(0, 200)).toMatch(/private \(RFC 1918\) address/);
    expect(res.body.code).toBe('address_not_reportable');
  });

  it('retries, not drops, when the daily quota is used up', async () => {
    const { key: free, accountId } = await s.createKey('free');
    await s.pool.query("insert into usage_counters (subject, counter, day, used) values ($1, 'report', $2::date, 50)", [
      `a:${accountId}`,
      s.clock.now().toISOString().slice(0, 10),
    ]);
    expect(outcome((await post({ ip: '9.9.100.3', categories: '21', comment: 'x' }, free)).status)).toBe('retry');
  });

  it('answers the HEAD of its `test-api` command without a server error', async () => {
    const res = await rawCall(s.origin, API_URL, { method: 'HEAD', headers: { 'X-Key': key, 'User-Agent': 'reportedip-honeypot-server/1.0.0' } });
    expect(res.status).toBeGreaterThanOrEqual(200);
    expect(res.status).toBeLessThan(500);
  });
});
