import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { purgeAccounts } from '../../src/account/job.js';
import { DAY_MS } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { NOTIFICATION_CONFIGS_MAX } from '../../src/notifications/service.js';
import { call, type CallResult } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * M1 (MEDIUM) of the 2026-11-26 review: a free key wrote unlimited, unmetered, never-purged rows,
 * one `key_sites` row per refused `X-Rip-Site` host (up to ~2,000 characters each) and one
 * `notification_configs` row per invented site. Now a refusal is recorded once per key and day,
 * a site is a host name of at most 253 characters, key_sites keeps the 30 days the dashboard
 * shows, a body `site_url` counts like `X-Rip-Site`, and a key holds at most 50 sites'
 * notification configurations.
 */
let s: TestServer;
const retention = loadConfig({}).web;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const label = (c: string) => c.repeat(60);
/** A host name of `length` characters (at least 30), unique by `i`. */
function host(i: number, length = 250): string {
  const tail = `.${label('x')}.${label('y')}.${label('z')}.example`;
  const head = `r${i}-`;
  return head + 'a'.repeat(length - head.length - tail.length) + tail;
}

const check = (key: string, site: string) => call(s.base, '/check?ip=8.8.8.8', { key, headers: { 'X-Rip-Site': site } });
const saveConfig = (key: string, siteUrl: string, recipients = ['security@example.com']) =>
  call(s.base, '/notification-config', { key, json: { site_url: siteUrl, recipients, from_name: 'Shop Security' } });

/** Runs `requests` calls `width` at a time; the answers in order. */
async function inBatches(requests: number, width: number, one: (i: number) => Promise<CallResult>): Promise<CallResult[]> {
  const out: CallResult[] = [];
  for (let start = 0; start < requests; start += width) {
    out.push(...(await Promise.all(Array.from({ length: Math.min(width, requests - start) }, (_, j) => one(start + j)))));
  }
  return out;
}

const statuses = (answers: CallResult[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) {
    const name = `${a.status} ${a.body?.code ?? ''}`.trim();
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
};

async function keySites(keyId: string) {
  const { rows } = await s.pool.query<{ site: string; refused: boolean; refusals: number }>(
    'select site, refused, refusals from key_sites where key_id = $1 order by refused, site',
    [keyId],
  );
  return rows;
}
const counters = async (accountId: number) =>
  (await s.pool.query<{ counter: string; used: number }>('select counter, used from usage_counters where subject = $1 order by counter', [`a:${accountId}`])).rows;
const configs = async (keyId: string) => (await s.pool.query<{ n: number }>('select count(*)::int as n from notification_configs where key_id = $1', [keyId])).rows[0]!.n;
const domains = async (key: string) => (await call(s.base, '/verify-key', { key })).body.data.domains;

describe('refused sites', () => {
  it('records a refusal once per key and day, however many hosts are tried, and /verify-key still says over_limit', async () => {
    const { key, keyId, accountId } = await s.createKey('free'); // one site a day
    expect((await check(key, 'https://shop.example.com/')).status).toBe(200);
    for (let i = 0; i < 5; i++) {
      const res = await check(key, `https://other${i}.example.org/`);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('domain_limit_exceeded');
    }
    // The same refused host again counts as one more refusal, not one more site.
    expect((await check(key, 'https://other0.example.org/')).status).toBe(403);
    expect(await keySites(keyId)).toEqual([
      { site: 'shop.example.com', refused: false, refusals: 0 },
      { site: 'other0.example.org', refused: true, refusals: 6 },
    ]);
    expect(await domains(key)).toEqual({ used: 2, limit: 1, status: 'over_limit' });
    // Only the allowed request was charged.
    expect(await counters(accountId)).toEqual([{ counter: 'check', used: 1 }]);
    expect((await check(key, 'https://www.shop.example.com/')).status).toBe(200);
  });

  it('takes a refused site once the key may use more sites (its role was raised), and keeps recording later refusals', async () => {
    const { key, keyId, accountId } = await s.createKey('free');
    expect((await check(key, 'https://one.example.com/')).status).toBe(200);
    expect((await check(key, 'https://two.example.com/')).status).toBe(403);
    await s.pool.query("update accounts set role = 'contributor' where id = $1", [accountId]); // three sites a day
    expect((await check(key, 'https://two.example.com/')).status).toBe(200);
    expect((await check(key, 'https://three.example.com/')).status).toBe(200);
    expect(await domains(key)).toEqual({ used: 3, limit: 3, status: 'ok' });
    expect((await check(key, 'https://four.example.com/')).status).toBe(403);
    expect(await domains(key)).toEqual({ used: 4, limit: 3, status: 'over_limit' });
    expect((await keySites(keyId)).filter((r) => r.refused)).toEqual([{ site: 'four.example.com', refused: true, refusals: 1 }]);
  });
});

describe('host names of at most 253 characters', () => {
  it('takes an X-Rip-Site whose host is longer as naming no site, and a 253-character one as a site', async () => {
    const { key, keyId } = await s.createKey('free');
    const long = `https://${host(1, 254)}/`;
    expect(host(1, 254)).toHaveLength(254);
    const res = await check(key, long);
    expect(res.status).toBe(200);
    expect(await keySites(keyId)).toEqual([]);
    expect(await domains(key)).toEqual({ used: 0, limit: 1, status: 'ok' });
    expect((await check(key, `https://${host(2, 253)}/`)).status).toBe(200);
    expect((await check(key, `https://${host(3, 253)}/`)).status).toBe(403);
    expect((await keySites(keyId)).map((r) => [r.site.length, r.refused])).toEqual([
      [253, false],
      [253, true],
    ]);
  });

  it('refuses a site_url whose host is longer with 422 in notification configurations and relay sends, storing nothing', async () => {
    const { key, keyId } = await s.createKey('professional');
    const long = `https://${host(4, 254)}/`;
    const saved = await saveConfig(key, long);
    expect(saved.status).toBe(422);
    expect(saved.body.meta.errors).toEqual([expect.objectContaining({ location: 'body', name: 'site_url' })]);
    const mail = await call(s.base, '/relay-mail', { key, json: { recipient: 'a@example.org', subject: 'Code', body_text: 'Code 123456', site_url: long } });
    expect(mail.status).toBe(422);
    expect(mail.body).toMatchObject({ ok: false, errors: [expect.objectContaining({ name: 'site_url' })] });
    const sms = await call(s.base, '/relay-sms', {
      key,
      json: { recipient_phone: '+4915112340009', template_code: '2fa_code', template_vars: { code: '123456', expiry_min: 10 }, site_url: long },
    });
    expect(sms.status).toBe(422);
    expect(await configs(keyId)).toBe(0);
    expect(await keySites(keyId)).toEqual([]);
    expect((await s.pool.query('select count(*)::int as n from relay_messages where key_id = $1', [keyId])).rows[0].n).toBe(0);
    expect((await saveConfig(key, `https://${host(5, 253)}/`)).status).toBe(200);
  });
});

describe('notification configurations', () => {
  it("count their site_url among the key's sites of the day, as X-Rip-Site does", async () => {
    const { key, keyId } = await s.createKey('free');
    expect((await saveConfig(key, 'https://shop.example.com/')).status).toBe(200);
    const refused = await saveConfig(key, 'https://another.example.com/');
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('domain_limit_exceeded');
    expect(await configs(keyId)).toBe(1);
    expect(await domains(key)).toEqual({ used: 2, limit: 1, status: 'over_limit' });
    // The site it has is still updated, from any spelling.
    expect((await saveConfig(key, 'https://WWW.shop.example.com/contact', ['a@example.com', 'b@example.com'])).status).toBe(200);
    const back = await call(s.base, '/notification-config?site_url=https://shop.example.com', { key });
    expect(back.body.data.recipients).toEqual(['a@example.com', 'b@example.com']);
  });
});

describe('growth', () => {
  it('stays well under 2 MB for 1,500 refused 250-character hosts and 600 notification configurations, with no counter moved', { timeout: 240_000 }, async () => {
    const free = await s.createKey('free');
    const ent = await s.createKey('enterprise'); // no limit on sites a day
    expect((await check(free.key, 'https://shop.example.com/')).status).toBe(200);
    await s.pool.query('vacuum analyze');
    const tables = ['key_sites', 'notification_configs', 'usage_counters'];
    const sizes = async () => {
      const { rows } = await s.pool.query<{ database: string; tables: Record<string, number> }>(
        `select pg_database_size(current_database())::text as database,
                (select jsonb_object_agg(t, pg_total_relation_size(t::regclass)) from unnest($1::text[]) t) as tables`,
        [tables],
      );
      const each = rows[0]!.tables;
      return { database: Number(rows[0]!.database), tables: Object.values(each).reduce((a, b) => a + b, 0), each };
    };
    const before = await sizes();
    const started = Date.now();

    const refused = await inBatches(1_500, 50, (i) => check(free.key, `https://${host(i)}/${'p'.repeat(1_500)}`));
    expect(statuses(refused)).toEqual({ '403 domain_limit_exceeded': 1_500 });
    // 300 configurations of invented sites, each near the largest body the contract takes.
    const recipients = Array.from({ length: 20 }, (_, j) => `recipient-${j}-${'m'.repeat(40)}@example.com`);
    const body = (i: number) => `https://${host(10_000 + i)}/${'q'.repeat(1_700)}`;
    const freeConfigs = await inBatches(300, 50, (i) => saveConfig(free.key, body(i), recipients));
    expect(statuses(freeConfigs)).toEqual({ '403 domain_limit_exceeded': 300 });
    await s.pool.query('vacuum analyze');
    const afterFree = await sizes();
    // A key with unlimited sites: 300 in parallel batches, and the bound holds exactly.
    const entConfigs = await inBatches(300, 50, (i) => saveConfig(ent.key, body(i), recipients));
    expect(statuses(entConfigs)).toEqual({ '200': NOTIFICATION_CONFIGS_MAX, '403 notification_config_limit_exceeded': 300 - NOTIFICATION_CONFIGS_MAX });
    const seconds = (Date.now() - started) / 1000;

    await s.pool.query('vacuum analyze');
    const after = await sizes();
    const grown = { database: after.database - before.database, tables: after.tables - before.tables };
    const byTable = (from: typeof before, to: typeof before) => tables.map((t) => `${t} +${to.each[t]! - from.each[t]!}`).join(', ');
    console.log(
      `M1 growth: 2,100 requests in ${seconds.toFixed(1)} s; the free key's 1,800: database +${afterFree.database - before.database} bytes (${byTable(before, afterFree)}); ` +
        `all: database +${grown.database} bytes (${byTable(before, after)})`,
    );
    // The free key's 1,800 refused requests store two rows: a few pages at most.
    expect(afterFree.database - before.database).toBeLessThan(256 * 1024);
    expect(grown.database).toBeLessThan(2 * 1024 * 1024);
    expect(grown.tables).toBeLessThan(1024 * 1024);

    // Rows: the free key's one site and its one refused row (1,800 refusals), no configuration;
    // the enterprise key's 50 configurations and their 50 sites.
    expect(await keySites(free.keyId)).toEqual([
      { site: 'shop.example.com', refused: false, refusals: 0 },
      { site: expect.stringMatching(/^r\d+-a+\.x+\.y+\.z+\.example$/), refused: true, refusals: 1_800 },
    ]);
    expect(await configs(free.keyId)).toBe(0);
    expect(await configs(ent.keyId)).toBe(NOTIFICATION_CONFIGS_MAX);
    expect((await keySites(ent.keyId)).length).toBe(300); // unlimited sites: each was taken
    expect(await domains(free.key)).toEqual({ used: 2, limit: 1, status: 'over_limit' });
    // Nothing was charged: the check counter holds the one allowed request; configurations are free.
    expect(await counters(free.accountId)).toEqual([{ counter: 'check', used: 1 }]);
    expect(await counters(ent.accountId)).toEqual([]);

    // A stored site is still updated; a new one is still refused.
    const stored = entConfigs.findIndex((a) => a.status === 200);
    expect((await saveConfig(ent.key, body(stored), ['new@example.com'])).status).toBe(200);
    expect((await saveConfig(ent.key, 'https://one-more.example.com/')).body.code).toBe('notification_config_limit_exceeded');
    expect(await configs(ent.keyId)).toBe(NOTIFICATION_CONFIGS_MAX);
  });
});

describe('the purge', () => {
  it('deletes the sites of days the dashboard no longer shows (30), and keeps the others', async () => {
    const { key, keyId } = await s.createKey('free');
    expect((await check(key, 'https://old.example.com/')).status).toBe(200);
    expect((await check(key, 'https://refused.example.com/')).status).toBe(403);
    try {
      s.clock.advance(30 * DAY_MS);
      expect((await check(key, 'https://new.example.com/')).status).toBe(200);
      await purgeAccounts(s.pool, s.clock, retention);
      expect((await keySites(keyId)).map((r) => r.site)).toEqual(['new.example.com', 'old.example.com', 'refused.example.com']);
      s.clock.advance(DAY_MS);
      const purged = await purgeAccounts(s.pool, s.clock, retention);
      expect(purged!.keySites).toBeGreaterThanOrEqual(2);
      expect((await keySites(keyId)).map((r) => r.site)).toEqual(['new.example.com']);
    } finally {
      s.clock.advance(-31 * DAY_MS);
    }
  });
});
