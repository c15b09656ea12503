import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountEntity, ApiKeyEntity } from '../../src/db/entities.js';
import { AuditEventEntity, InviteEntity, WebSessionEntity } from '../../src/db/entities/accounts.js';
import { BlacklistEntryEntity, BlacklistSnapshotEntity, BouncerEntity } from '../../src/db/entities/blacklist.js';
import { KeySiteEntity, UsageCounterEntity } from '../../src/db/entities/keys.js';
import { SiteNotificationConfigEntity } from '../../src/db/entities/notifications.js';
import { RelayMessageEntity, RelayUsageEntity } from '../../src/db/entities/relay.js';
import { IpStatsEntity, ReportEntity, WhitelistRangeEntity } from '../../src/db/entities/reputation.js';
import { CountryTotalEntity } from '../../src/db/entities/statistics.js';
import { migrate, openOrm, type Orm } from '../../src/db/orm.js';
import { ROLES } from '../../src/roles.js';
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The schema is made by the hand-written migrations only; the entities describe it, and
 * MikroORM's own schema diff holds them together: after every migration, the DDL that would
 * bring the database to the entities is empty. Tables, columns, types, nullability, defaults,
 * identity keys, primary, unique and foreign keys with their rules, check constraints (enum
 * checks as the properties' `items`) and indexes are all compared by MikroORM.
 *
 * What MikroORM does not compare, excluded from the diff and checked here instead:
 * - Indexes MikroORM cannot build from properties (expressions, partial indexes, INCLUDE, DESC,
 *   operator classes, GiST): declared with their whole `expression`, which the diff compares by
 *   name only; the test below compares each expression with PostgreSQL's own definition.
 * - Functions (`charge_counters()`, the quota charge's conditional upsert): MikroORM maps no
 *   functions; the test below names every function the migrations made, so a new one is seen.
 * - MikroORM's own table of applied migrations (`mikro_orm_migrations`) and pg-boss's schema
 *   (`pgboss`): not ours, and not in the entities; the generator leaves both out itself.
 */

let db: TestDatabase;
let orm: Orm;

beforeAll(async () => {
  db = await createTestDatabase();
  orm = await openOrm({ url: db.url, poolMax: 2 });
  // A server clone of the run's template is migrated already; an embedded database is not.
  if (db.embedded) await migrate(orm, db.url);
});
afterAll(async () => {
  await orm?.close();
  await db?.drop();
});

async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  return orm.em.getConnection().execute<T[]>(sql, params);
}

const updateSql = () => orm.schema.getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: true });

describe('the entities describe the migrated schema', () => {
  it('leaves MikroORM nothing to change: its schema diff after the migrations is empty', async () => {
    expect((await updateSql()).trim()).toBe('');
  });

  it('sees a difference when there is one (the diff is live on this database)', async () => {
    await query('alter table bouncers add column drifted integer');
    await query('alter table bouncers alter column name drop not null');
    try {
      const sql = await updateSql();
      expect(sql).toContain('alter table "bouncers" drop column "drifted"');
      expect(sql).toContain('alter table "bouncers" alter column "name" type text using ("name"::text);\nalter table "bouncers" alter column "name" set not null');
    } finally {
      await query('alter table bouncers drop column drifted');
      await query('alter table bouncers alter column name set not null');
    }
  });

  it('declares each index MikroORM compares by name only with PostgreSQL\'s own definition', async () => {
    const declared = orm.getMetadata().getAll();
    const expressions = Object.values(declared).flatMap((meta) =>
      meta.indexes.filter((index) => typeof index.expression === 'string').map((index) => [index.name!, index.expression as string]),
    );
    expect(expressions.length).toBeGreaterThan(10);
    const inDb = await query<{ indexname: string; indexdef: string }>(
      `select indexname, replace(replace(indexdef, ' ON public.', ' ON '), ' ON ONLY public.', ' ON ONLY ') as indexdef
         from pg_indexes where schemaname = 'public'`,
    );
    const definitions = Object.fromEntries(inDb.map((row) => [row.indexname, row.indexdef]));
    for (const [name, expression] of expressions) expect(definitions[name!], name).toBe(expression);
  });

  it("admits in accounts.role exactly the role table's roles", () => {
    expect(orm.getMetadata().get('Account').properties.role!.items).toEqual([...ROLES]);
  });

  it('knows every function the migrations made (MikroORM maps none)', async () => {
    const functions = await query<{ name: string }>(`select proname as name from pg_proc where pronamespace = 'public'::regnamespace order by 1`);
    expect(functions.map((f) => f.name)).toEqual(['blacklist_dirty_stats', 'blacklist_dirty_whitelist', 'blacklist_dirty_whitelist_update', 'charge_counters']);
  });
});

describe('the entities read back what they write', () => {
  it('keeps each kind of column: bigint ids and sums, bytea keys, cidr, dates, arrays, json, composite keys with relations', async () => {
    const now = new Date('2026-11-27T10:00:00.000Z');
    const em = orm.em.fork();
    const account = em.create(AccountEntity, { role: 'business', licences: 2, email: 'ops@example.com', createdAt: now, senderName: 'Example' });
    const key = em.create(ApiKeyEntity, { id: '0b8f3f0e-5d5a-4d8e-9a39-1f4c2f1f7a10', account, prefix: 'trs_abcd', name: 'shop', hash: Buffer.from('a1b2', 'hex'), createdAt: now, revokedAt: null });
    const report = em.create(ReportEntity, { ip: '203.0.113.9', account, reporterRole: 'business', categories: [18, 22], reportedAt: now });
    em.create(IpStatsEntity, {
      ip: '203.0.113.9', totalReports: 1, reportRows: 1, uniqueReporters: 1, honeypotReports: 0, firstReportedAt: now, lastReportedAt: now,
      categories: [18, 22], maxSeverity: 6, decaySum: 0.75, countryCode: 'DE', asn: 64500, isp: null,
    });
    em.create(WhitelistRangeEntity, { range: '2001:db8::/48', note: 'lab' });
    em.create(UsageCounterEntity, { subject: 'a:1', counter: 'check', day: '2026-11-27', used: 3 });
    em.create(KeySiteEntity, { key, day: '2026-11-27', site: 'shop.example.com', firstSeen: now });
    em.create(WebSessionEntity, { idHash: Buffer.alloc(32, 7), account, createdAt: now, lastSeenAt: now, expiresAt: now, flash: null });
    const audit = em.create(AuditEventEntity, { account, at: now, kind: 'key_created' });
    const snapshot = em.create(BlacklistSnapshotEntity, { generatedAt: now, checkedAt: now, contentHash: 'h', entryCount: 1, scorePositions: [1, 1, 0], stats: { total: 1 } });
    em.create(BlacklistEntryEntity, { fromSnapshot: 1, untilSnapshot: null, ip: '203.0.113.9', score: 90, lastReportedAt: now, totalReports: 1, categories: [18], countryCode: null, refreshPhase: 3600 });
    em.create(SiteNotificationConfigEntity, { key, site: 'shop.example.com', siteUrl: 'https://shop.example.com', recipients: ['a@example.com', 'b, c@example.com'], fromName: 'Shop', fromEmail: 'shop@example.com', updatedAt: now });
    const message = em.create(RelayMessageEntity, { account, channel: 'sms', periodStart: now, fundedBy: 'inclusive', recipient: '+4915112345678', payload: { code: '123456' }, createdAt: now, lastError: null, finishedAt: null, keyId: key.id, provider: null, providerId: null, sendingAt: null, sentAt: null, receiptAt: null, receiptError: null });
    em.create(RelayUsageEntity, { account, channel: 'sms', periodStart: now, inclusiveUsed: 1 });
    em.create(BouncerEntity, { name: 'fw', keyHash: Buffer.alloc(32, 9), keyPrefix: 'trsb_abc', confidenceMinimum: 90, categories: [18, 22], entryLimit: null, createdAt: now, lastPullAt: null, lastSnapshotId: null, lastChoice: null, lastSeenAt: null, lastIp: null, userAgent: null });
    em.create(InviteEntity, { codeHash: Buffer.from('c0de', 'hex'), createdAt: now, expiresAt: now, usedAt: null, usedBy: null });
    em.create(CountryTotalEntity, { countryCode: 'DE', ips: 1, reports: 2 ** 40 });
    await em.flush();
    expect(typeof report.id).toBe('number');
    expect(typeof snapshot.id).toBe('number');
    expect(typeof message.id).toBe('number');
    expect(audit.detail).toEqual({}); // the column's default, read back on insert

    const read = orm.em.fork();
    expect(await read.findOneOrFail(AccountEntity, account.id, { populate: ['passwordHash'] })).toMatchObject({ senderName: 'Example', passwordHash: null, emailVerifiedAt: null });
    expect(await read.findOneOrFail(ReportEntity, { id: report.id, reportedAt: now })).toMatchObject({ id: report.id, categories: [18, 22], comment: '', aggregationCount: 0, reporterCountry: null, reportedAt: now });
    expect((await read.findOneOrFail(IpStatsEntity, '203.0.113.9')).decaySum).toBe(0.75);
    expect(await read.findOneOrFail(WhitelistRangeEntity, '2001:db8::/48')).toMatchObject({ note: 'lab', createdAt: expect.any(Date) });
    expect(await read.findOneOrFail(UsageCounterEntity, { subject: 'a:1', counter: 'check', day: '2026-11-27' })).toMatchObject({ used: 3 });
    const site = await read.findOneOrFail(KeySiteEntity, { key: key.id, day: '2026-11-27', site: 'shop.example.com' }, { populate: ['key'] });
    expect(site).toMatchObject({ refused: false, firstSeen: now });
    expect(site.key.name).toBe('shop');
    expect((await read.findOneOrFail(WebSessionEntity, Buffer.alloc(32, 7))).account.id).toBe(account.id);
    expect(await read.findOneOrFail(AuditEventEntity, audit.id)).toMatchObject({ actor: '', ip: '', detail: {} });
    expect(await read.findOneOrFail(BlacklistSnapshotEntity, snapshot.id)).toMatchObject({ scorePositions: [1, 1, 0], stats: { total: 1 } });
    expect(await read.findOneOrFail(BlacklistEntryEntity, { ip: '203.0.113.9', fromSnapshot: 1 })).toMatchObject({ categories: [18], score: 90 });
    expect((await read.findOneOrFail(SiteNotificationConfigEntity, { key: key.id, site: 'shop.example.com' })).recipients).toEqual(['a@example.com', 'b, c@example.com']);
    expect(await read.findOneOrFail(RelayMessageEntity, message.id)).toMatchObject({ status: 'queued', attempts: 0, site: '', siteUrl: '', payload: { code: '123456' }, keyId: key.id });
    expect(await read.findOneOrFail(RelayUsageEntity, { account: account.id, channel: 'sms', periodStart: now })).toMatchObject({ inclusiveUsed: 1 });
    expect(await read.findOneOrFail(InviteEntity, Buffer.from('c0de', 'hex'))).toMatchObject({ note: '', usedBy: null });
    expect((await read.findOneOrFail(CountryTotalEntity, 'DE')).reports).toBe(2 ** 40);
  });
});
