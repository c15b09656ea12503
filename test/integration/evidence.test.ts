import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 28, item 5: a report may carry private evidence (log lines, up to 16 KiB). The secrets
 * in it are removed before it is stored and the answer says what went; the reporter reads it
 * back, the operator with `trs reports evidence`, nobody through `/reports/{ip}`.
 */
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const SECRET_LOG = [
  '2026-11-28T10:00:01Z sshd[812]: Failed password for root from 45.155.205.7 port 51234 ssh2',
  'GET /login?user=admin&password=hunter2 HTTP/1.1 from 45.155.205.7',
  'Cookie: session=abc123def456; theme=dark',
  'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.c2VjcmV0.abcdef',
  'contact: victim@example.org fetched https://admin:s3cret@shop.example.com/wp-admin',
].join('\n');

describe('evidence on reports', () => {
  it('is stored redacted, says what was removed, and is read back only by its reporter', async () => {
    const reporter = await s.createKey('professional');
    const sameAccount = await s.createKey('professional', { accountId: reporter.accountId });
    const stranger = await s.createKey('enterprise');
    const ip = '45.155.205.7';

    const res = await call(s.base, '/report', { key: reporter.key, json: { ip, categories: [18, 22], comment: 'ssh brute force', evidence: SECRET_LOG } });
    expect(res.status).toBe(200);
    expect(res.body.data.evidenceStored).toBe(true);
    const removed = res.body.data.evidenceRedactions as Record<string, number>;
    expect(Object.keys(removed).sort()).toEqual(expect.arrayContaining(['cookie', 'email']));
    expect(Object.values(removed).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(4);

    // Nothing of the secrets reached the database.
    const { rows } = await s.pool.query<{ evidence: string }>('select evidence from reports where ip = $1 and evidence is not null', [ip]);
    expect(rows).toHaveLength(1);
    for (const secret of ['hunter2', 'abc123def456', 'eyJhbGciOiJIUzI1NiJ9', 'victim@example.org', 's3cret']) expect(rows[0]!.evidence).not.toContain(secret);
    expect(rows[0]!.evidence).toContain('Failed password for root from 45.155.205.7');

    // The reporter's account reads it back, with any of its keys.
    for (const key of [reporter.key, sameAccount.key]) {
      const own = await call(s.base, `/reports/${ip}/evidence`, { key });
      expect(own.status).toBe(200);
      expect(own.body.data.total).toBe(1);
      expect(own.body.data.reports[0].evidence).toBe(rows[0]!.evidence);
    }
    // Another account sees none of it, here or in the public history.
    const other = await call(s.base, `/reports/${ip}/evidence`, { key: stranger.key });
    expect(other.status).toBe(200);
    expect(other.body.data).toMatchObject({ total: 0, reports: [] });
    const history = await call(s.base, `/reports/${ip}`, { key: stranger.key });
    expect(history.status).toBe(200);
    expect(JSON.stringify(history.body)).not.toContain('Failed password');
    expect(JSON.stringify(history.body)).not.toMatch(/evidence/i);

    // The operator reads every reporter's.
    const cli = await runCli({ ...process.env, DATABASE_URL: s.db.url }, 'reports', 'evidence', ip, '--json');
    expect(cli.err).toBe('');
    expect(cli.code).toBe(0);
    expect(JSON.parse(cli.out)).toMatchObject({ ip, total: 1, reports: [{ accountId: reporter.accountId, evidence: rows[0]!.evidence }] });
  });

  it('refuses more than 16 KiB of UTF-8 with 413 (and more than 16,384 characters with 400), storing nothing', async () => {
    const { key } = await s.createKey('professional');
    const before = (await s.pool.query<{ n: number }>('select count(*)::int as n from reports')).rows[0]!.n;
    const res = await call(s.base, '/report', { key, json: { ip: '45.155.205.8', categories: [18], evidence: 'é'.repeat(9000) } });
    expect(res.status).toBe(413);
    expect(res.body.meta.success).toBe(false);
    expect((await call(s.base, '/report', { key, json: { ip: '45.155.205.8', categories: [18], evidence: 'x'.repeat(16 * 1024 + 1) } })).status).toBe(400);
    expect((await s.pool.query<{ n: number }>('select count(*)::int as n from reports')).rows[0]!.n).toBe(before);
  });

  it('refuses bad input on the reporter\'s read: a bad address or page is 400, no key is 401', async () => {
    const { key } = await s.createKey('professional');
    expect((await call(s.base, '/reports/not-an-ip/evidence', { key })).status).toBe(400);
    expect((await call(s.base, '/reports/45.155.205.7/evidence?per_page=51', { key })).status).toBe(400);
    expect((await call(s.base, '/reports/45.155.205.7/evidence')).status).toBe(401);
  });
});
