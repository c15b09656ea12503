import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSmtp } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { signedUp } from '../support/web.js';

/**
 * Finding L6 (review 2026-11-26): the dashboard counted an account's active keys, then inserted
 * one: 40 POST /account/keys at once from one session left 25 active keys (the limit is 20).
 * Now the count and the insert are one transaction under a lock of the account's keys.
 */
let s: TestServer;
let smtp: Awaited<ReturnType<typeof startSmtp>>;

beforeAll(async () => {
  smtp = await startSmtp();
  s = await startTestServer({ config: { trustProxy: ['loopback'], relay: { mail: { smtpUrl: smtp.url, from: 'accounts@example.net' } } } });
});
afterAll(async () => {
  await s?.close();
  await smtp?.close();
});

async function keysOf(email: string): Promise<{ active: number; created: number }> {
  const { rows } = await s.pool.query(
    `select (select count(*)::int from api_keys k where k.account_id = a.id and k.revoked_at is null) as active,
            (select count(*)::int from audit_events e where e.account_id = a.id and e.kind = 'key_created') as created
       from accounts a where a.email = $1`,
    [email],
  );
  return rows[0];
}

describe('POST /account/keys', () => {
  it('40 at once from one session leave exactly 20 active keys; the other 20 get 409 and make nothing', async () => {
    const email = 'racer@example.org';
    const web = await signedUp(s, smtp, email, 'correct horse battery', { 'X-Forwarded-For': '198.51.100.7' });
    const pages = await Promise.all(Array.from({ length: 40 }, (_, i) => web.post('/account/keys', { name: `racer ${i}` })));
    const statuses = pages.map((p) => p.status);
    expect(statuses.filter((st) => st === 303)).toHaveLength(20);
    expect(statuses.filter((st) => st === 409)).toHaveLength(20);
    for (const page of pages.filter((p) => p.status === 409)) expect(page.text).toContain('at most 20 active keys');
    expect(await keysOf(email)).toEqual({ active: 20, created: 20 });

    // Revoking one makes room for exactly one.
    const { rows } = await s.pool.query("select k.id from api_keys k join accounts a on a.id = k.account_id where a.email = $1 limit 1", [email]);
    expect((await web.post(`/account/keys/${rows[0].id}/revoke`, {})).status).toBe(303);
    const again = await Promise.all(Array.from({ length: 5 }, (_, i) => web.post('/account/keys', { name: `again ${i}` })));
    expect(again.map((p) => p.status).sort()).toEqual([303, 409, 409, 409, 409]);
    expect(await keysOf(email)).toEqual({ active: 20, created: 21 });
  });
});
