import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startSmsProvider } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * M3 (review of 2026-11-26, F4 residual): every message to a recipient from any account counted
 * toward one ceiling of 20 a day that refused every account, so seven accounts sending three SMS
 * each locked every other tenant's 2FA to that number out for 24 hours. Now the ceiling
 * (RELAY_RECIPIENT_GLOBAL_DAILY, 200) holds only the accounts past their own free messages to
 * the recipient (RELAY_RECIPIENT_FREE, 3): a tenant's first 3 messages to a number in 24 hours
 * are never refused for what others sent. Pumping one number through many accounts stays
 * bounded: at most ceiling + 3 x (accounts that sent to it) in any 24 hours.
 */
let sms: Awaited<ReturnType<typeof startSmsProvider>>;
beforeAll(async () => {
  sms = await startSmsProvider();
});
afterAll(async () => {
  await sms?.close();
});

const twoFactor = (s: TestServer, key: string, recipient_phone: string, site = 'https://victim-shop.example') =>
  call(s.base, '/relay-sms', {
    key,
    json: { recipient_phone, template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 5 }, site_url: site },
  });

/** The messages stored for a number, and the inclusive quota charged to the accounts. */
async function stored(s: TestServer, phone: string) {
  const { rows } = await s.pool.query<{ n: number; accounts: number }>(
    'select count(*)::int as n, count(distinct account_id)::int as accounts from relay_messages where recipient = $1',
    [phone],
  );
  return rows[0]!;
}
async function charged(s: TestServer, accountIds: number[]) {
  const { rows } = await s.pool.query<{ used: number }>(
    "select coalesce(sum(inclusive_used), 0)::int as used from relay_usage where channel = 'sms' and account_id = any($1)",
    [accountIds],
  );
  return rows[0]!.used;
}

describe('M3: one tenant (or seven) cannot lock another tenant out of a recipient', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { relay: { sms: { url: sms.url, token: sms.token } } } });
  });
  afterAll(async () => s?.close());

  it("the review's reproduction: 7 accounts x 3 SMS, then an 8th tenant's templated 2FA is sent (default settings)", async () => {
    const phone = '+4915112399999';
    for (let i = 0; i < 7; i++) {
      const key = (await s.createKey('professional')).key;
      for (let j = 0; j < 3; j++) expect((await twoFactor(s, key, phone, `https://pumper${i}.example`)).status).toBe(200);
    }
    const victim = await s.createKey('professional');
    const res = await twoFactor(s, victim.key, phone);
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    expect(await stored(s, phone)).toEqual({ n: 22, accounts: 8 });
  });

  it('with the ceiling already reached (the old value, 20), a new tenant still gets its 3 messages; the pumpers are held', async () => {
    const low = await s.sibling({ relay: { sms: { url: sms.url, token: sms.token }, recipientGlobalDaily: 20 } });
    try {
      const phone = '+4915112399998';
      const pumpers: string[] = [];
      for (let i = 0; i < 7; i++) {
        const key = (await low.createKey('professional')).key;
        pumpers.push(key);
        for (let j = 0; j < 3; j++) expect((await twoFactor(low, key, phone, `https://pumper${i}.example`)).status).toBe(200);
      }
      // One send an hour by a pumper, as the review describes, no longer keeps the number locked:
      // past its backoff it is refused by the ceiling it filled.
      low.clock.advance(3_600_000);
      const held = await twoFactor(low, pumpers[0]!, phone);
      expect(held.status).toBe(429);
      expect(held.body).toMatchObject({ ok: false, code: 'recipient_backoff' });
      expect(held.body.message).toMatch(/too many messages today/);
      expect(Number(held.headers.get('retry-after'))).toBeGreaterThan(22 * 3600);
      const victim = await low.createKey('professional');
      for (let j = 0; j < 3; j++) expect((await twoFactor(low, victim.key, phone)).status).toBe(200);
      expect(await stored(low, phone)).toEqual({ n: 24, accounts: 8 });
      expect(await charged(low, [victim.accountId])).toBe(3);
    } finally {
      await low.close();
    }
  });
});

describe('the ceiling still bounds pumping one number through many accounts', () => {
  const CEILING = 6;
  const FREE = 3;
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ config: { relay: { sms: { url: sms.url, token: sms.token }, recipientGlobalDaily: CEILING, recipientFree: FREE } } });
  });
  afterAll(async () => s?.close());

  it('past the ceiling each account gets only its free messages: at most ceiling + 3 x accounts a day, nothing stored or charged beyond', async () => {
    const phone = '+4915112377777';
    const accounts = await Promise.all(Array.from({ length: 5 }, () => s.createKey('professional')));
    const statuses: number[][] = [];
    for (const account of accounts) {
      const mine: number[] = [];
      for (let j = 0; j < FREE; j++) mine.push((await twoFactor(s, account.key, phone)).status);
      // Past its backoff (60 s, doubling): only the ceiling can refuse the account now.
      s.clock.advance(10 * 60_000);
      mine.push((await twoFactor(s, account.key, phone)).status);
      statuses.push(mine);
    }
    // The first two accounts fill the ceiling with their free messages; the first of them had
    // its 4th before the ceiling was reached. Every account past its 3 is held from then on.
    expect(statuses).toEqual([
      [200, 200, 200, 200],
      [200, 200, 200, 429],
      [200, 200, 200, 429],
      [200, 200, 200, 429],
      [200, 200, 200, 429],
    ]);
    const count = await stored(s, phone);
    expect(count).toEqual({ n: 4 + 3 * 4, accounts: 5 });
    expect(count.n).toBeLessThanOrEqual(CEILING + FREE * accounts.length);
    expect(await charged(s, accounts.map((a) => a.accountId))).toBe(count.n);
  });

  it('failed messages count: a number whose sends all failed holds its senders just the same, until the day has passed', async () => {
    const phone = '+4915112377778';
    const a = await s.createKey('professional');
    const b = await s.createKey('professional');
    for (const account of [a, b]) for (let j = 0; j < FREE; j++) expect((await twoFactor(s, account.key, phone)).status).toBe(200);
    await s.pool.query("update relay_messages set status = 'failed' where recipient = $1", [phone]);
    s.clock.advance(10 * 60_000);
    expect((await twoFactor(s, a.key, phone)).status).toBe(429);
    expect((await stored(s, phone)).n).toBe(2 * FREE);
    // A day after those messages the account sends again.
    s.clock.advance(86_400_000);
    expect((await twoFactor(s, a.key, phone)).status).toBe(200);
  });

  it('holds under parallel sends: 8 accounts x 6 at once store at most 3 each', async () => {
    const phone = '+4915112377779';
    const accounts = await Promise.all(Array.from({ length: 8 }, () => s.createKey('professional')));
    const results = await Promise.all(accounts.flatMap((account) => Array.from({ length: 6 }, () => twoFactor(s, account.key, phone))));
    const ok = results.filter((r) => r.status === 200).length;
    expect(results.every((r) => r.status === 200 || (r.status === 429 && r.body.code === 'recipient_backoff'))).toBe(true);
    const { rows } = await s.pool.query<{ n: number }>('select count(*)::int as n from relay_messages where recipient = $1 group by account_id', [phone]);
    expect(rows.map((r) => r.n)).toEqual(Array(8).fill(FREE));
    expect(ok).toBe(8 * FREE);
    expect(ok).toBeLessThanOrEqual(CEILING + FREE * accounts.length);
    expect(await charged(s, accounts.map((a) => a.accountId))).toBe(ok);
  });
});
