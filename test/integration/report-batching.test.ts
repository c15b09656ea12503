import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, rateLimitedBody } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * POST /report's group commit (src/reputation/report-batcher.ts): concurrent reports are written
 * in one transaction, and each request is still answered with the truth about its own report.
 * A long gathering time here puts every request of a test's burst in one batch.
 */
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ config: { reportBatching: { ms: 150, max: 1000 } } });
  s.clock.set('2026-06-15T12:00:00Z');
});
afterAll(async () => {
  await s?.close();
});

const report = (server: TestServer, key: string, json: unknown) => call(server.origin, '/api/v2/report', { key, json });
const addresses = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}.${Math.floor(i / 250)}.${(i % 250) + 1}`);

async function stored(accountId: number) {
  const { rows } = await s.pool.query<{ ip: string; id: number; categories: number[]; comment: string; aggregation_count: number }>(
    'select ip, id, categories, comment, aggregation_count from reports where account_id = $1 order by id',
    [accountId],
  );
  return rows;
}
async function counter(accountId: number): Promise<number> {
  const { rows } = await s.pool.query<{ used: number }>(`select used from usage_counters where subject = $1 and counter = 'report'`, [`a:${accountId}`]);
  return rows[0]?.used ?? 0;
}

describe('POST /report group commit', () => {
  it('answers 200 concurrent reports each with its own report, and stores each exactly once', async () => {
    const { key, accountId } = await s.createKey('professional');
    const ips = addresses('8.8', 200);
    const results = await Promise.all(ips.map((ip, i) => report(s, key, { ip, categories: [18, 22 + (i % 2)], comment: `attempt ${i}` })));
    expect(results.map((r) => r.status)).toEqual(ips.map(() => 200));
    results.forEach((r, i) => {
      expect(r.body.data).toEqual({
        reportId: expect.any(Number),
        ip: ips[i],
        categories: [18, 22 + (i % 2)],
        abuseConfidencePercentage: expect.any(Number),
        ignoredCategories: [],
        commentTruncated: false,
      });
      expect(r.headers.get('x-ratelimit-remaining')).not.toBeNull();
    });
    const rows = await stored(accountId);
    expect(rows).toHaveLength(200);
    const byIp = new Map(rows.map((row) => [row.ip, row]));
    results.forEach((r, i) => {
      expect(byIp.get(ips[i]!)).toMatchObject({ id: r.body.data.reportId, comment: `attempt ${i}`, aggregation_count: 0, categories: [18, 22 + (i % 2)] });
    });
    const { rows: stats } = await s.pool.query<{ n: number; total: number }>(
      'select count(*)::int as n, sum(total_reports)::int as total from ip_stats where ip = any($1::text[])',
      [ips],
    );
    expect(stats[0]).toEqual({ n: 200, total: 200 });
    expect(await counter(accountId)).toBe(200);
    // Every request's headers count it: the remaining allowances are 200 different numbers.
    expect(new Set(results.map((r) => r.headers.get('x-ratelimit-remaining'))).size).toBe(200);
  });

  it('admits exactly the limit of concurrent reports over two processes, refusing the rest with the usual 429', async () => {
    const sibling = await s.sibling({ reportBatching: { ms: 150, max: 1000 } });
    try {
      const free = await s.createKey('free'); // 50 reports a day
      const ips = addresses('8.9', 90);
      const results = await Promise.all(ips.map((ip, i) => report(i % 2 ? sibling : s, free.key, { ip, categories: [4] })));
      const ok = results.filter((r) => r.status === 200);
      const refused = results.filter((r) => r.status === 429);
      expect(ok).toHaveLength(50);
      expect(refused).toHaveLength(40);
      for (const r of refused) {
        expect(r.body).toEqual(rateLimitedBody(r));
        expect(r.body.data.retryAfter).toBe(12 * 3600); // 12:00 UTC -> next midnight
        expect(r.headers.get('x-ratelimit-limit')).toBe('50');
        expect(r.headers.get('x-ratelimit-remaining')).toBe('0');
      }
      expect(new Set(ok.map((r) => r.headers.get('x-ratelimit-remaining')))).toEqual(new Set(Array.from({ length: 50 }, (_, i) => String(i))));
      const rows = await stored(free.accountId);
      expect(rows.map((row) => row.id).sort()).toEqual(ok.map((r) => r.body.data.reportId).sort());
      expect(await counter(free.accountId)).toBe(50);
    } finally {
      await sibling.close();
    }
  });

  it('aggregates two reports of one reporter about one address in one batch as one after the other', async () => {
    const { key, accountId } = await s.createKey('contributor');
    const [a, b] = await Promise.all([
      report(s, key, { ip: '9.9.9.20', categories: [14], comment: '' }),
      report(s, key, { ip: '9.9.9.20', categories: [18], comment: 'second' }),
    ]);
    expect([a!.status, b!.status]).toEqual([200, 200]);
    expect(a!.body.data.reportId).toBe(b!.body.data.reportId);
    // Whichever came first was answered with its own categories, the other with both.
    const categories = [a!.body.data.categories, b!.body.data.categories].sort((x, y) => x.length - y.length);
    expect([[14], [18]]).toContainEqual(categories[0]);
    expect(categories[1]).toEqual([14, 18]);
    expect(await stored(accountId)).toEqual([{ ip: '9.9.9.20', id: a!.body.data.reportId, categories: [14, 18], comment: 'second', aggregation_count: 1 }]);
    // A third within 5 minutes, in a batch of its own, merges into the same report.
    s.clock.advance(60_000);
    const c = await report(s, key, { ip: '9.9.9.20', categories: [4] });
    expect(c.body.data).toMatchObject({ reportId: a!.body.data.reportId, categories: [4, 14, 18] });
    const check = await call(s.origin, '/api/v2/check?ip=9.9.9.20&verbose=true', { key });
    expect(check.body.data.totalReports).toBe(3);
    expect(check.body.data.debugInfo).toMatchObject({ reportCount: 3, uniqueReporters: 1 });
    expect(await counter(accountId)).toBe(3);
  });

  it('answers each member of a failed batch with the truth: written alone, or failed alone', async () => {
    const { key, accountId } = await s.createKey('professional');
    await s.pool.query(`create function refuse_marked_report() returns trigger language plpgsql as $$
      begin
        if new.comment = 'fail me' then raise exception 'injected failure'; end if;
        return new;
      end $$`);
    await s.pool.query('create trigger refuse_marked_report before insert on reports for each row execute function refuse_marked_report()');
    try {
      const ips = addresses('8.10', 10);
      const results = await Promise.all(ips.map((ip, i) => report(s, key, { ip, categories: [4], comment: i === 3 ? 'fail me' : 'fine' })));
      expect(results.map((r) => r.status)).toEqual(ips.map((_, i) => (i === 3 ? 500 : 200)));
      expect(results[3]!.body.meta).toMatchObject({ success: false, code: 500 });
      const rows = await stored(accountId);
      expect(rows.map((r) => r.ip).sort()).toEqual(ips.filter((_, i) => i !== 3).sort());
      expect(rows.map((r) => r.id).sort()).toEqual(results.filter((_, i) => i !== 3).map((r) => r.body.data.reportId).sort());
      expect(await counter(accountId)).toBe(9);
      const { rows: stats } = await s.pool.query<{ n: number }>('select count(*)::int as n from ip_stats where ip = $1', [ips[3]]);
      expect(stats[0]!.n).toBe(0);
    } finally {
      await s.pool.query('drop trigger refuse_marked_report on reports');
      await s.pool.query('drop function refuse_marked_report()');
    }
  });

  it('writes the reports gathered when the server stops', async () => {
    const sibling = await s.sibling({ reportBatching: { ms: 60_000, max: 1000 } });
    const { key, accountId } = await s.createKey('professional');
    const ips = addresses('8.11', 5);
    // Each request's outcome: an HTTP status, or the code of the error that ended it unanswered.
    const answers = ips.map((ip) =>
      report(sibling, key, { ip, categories: [4] }).then(
        (r) => r.status,
        (err: Error & { cause?: { code?: string } }) => err.cause?.code ?? err.message,
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 500)); // gathered, not written: the batch waits a minute
    expect(await stored(accountId)).toEqual([]);
    const started = Date.now();
    await sibling.close();
    expect(Date.now() - started).toBeLessThan(30_000);
    // The test server stops abruptly (its connections closed first, as a second signal or the
    // stop's deadline would), then writes what it had gathered: no request gets an answer, none a
    // wrong one (no 5xx for a report that is stored), and each report is stored once.
    expect(await Promise.all(answers)).toEqual(ips.map(() => 'UND_ERR_SOCKET'));
    expect((await stored(accountId)).map((r) => r.ip).sort()).toEqual([...ips].sort());
    expect(await counter(accountId)).toBe(5);
  });
});
