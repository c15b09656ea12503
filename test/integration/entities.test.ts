import { ReferenceKind, type EntityMetadata, type EntityProperty } from '@mikro-orm/core';
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
import { createTestDatabase, type TestDatabase } from '../support/database.js';

/**
 * The schema is made by the hand-written migrations only; the entities describe it. This holds
 * them together: every table of the migrated database has exactly one entity, and every column
 * one property with the column's type, nullability, default, key, foreign key and uniqueness.
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

/** The partitions of a partitioned table (`reports_2027_01`, ...): the entity describes their parent. */
const PARTITIONS = `(select relname from pg_class where relispartition)`;

/** Not ours: MikroORM's record of applied migrations (pg-boss keeps to its own schema, `pgboss`). */
const NOT_OURS = `('mikro_orm_migrations')`;

async function query<T>(sql: string, params: unknown[] = []): Promise<T[]> {
  return orm.em.getConnection().execute<T[]>(sql, params);
}

interface DbColumn {
  table_name: string;
  column_name: string;
  is_nullable: 'YES' | 'NO';
  column_default: string | null;
  is_identity: 'YES' | 'NO';
  type: string;
}

interface DbConstraintColumn {
  table_name: string;
  constraint_name: string;
  column_name: string;
}

interface DbForeignKey {
  table_name: string;
  column_name: string;
  foreign_table: string;
  foreign_column: string;
  delete_rule: string;
}

interface Schema {
  tables: string[];
  columns: DbColumn[];
  primaryKeys: DbConstraintColumn[];
  uniques: DbConstraintColumn[];
  foreignKeys: DbForeignKey[];
}

async function readSchema(): Promise<Schema> {
  const tables = await query<{ table_name: string }>(
    `select table_name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not in ${NOT_OURS}
        and table_name not in ${PARTITIONS}
      order by table_name`,
  );
  const columns = await query<DbColumn>(
    `select table_name, column_name, is_nullable, column_default, is_identity,
            (quote_ident(udt_schema) || '.' || quote_ident(udt_name))::regtype::text as type
       from information_schema.columns
      where table_schema = 'public' and table_name not in ${NOT_OURS} and table_name not in ${PARTITIONS}
      order by table_name, ordinal_position`,
  );
  const keyColumns = (type: string) =>
    query<DbConstraintColumn>(
      `select tc.table_name, tc.constraint_name, kcu.column_name
         from information_schema.table_constraints tc
         join information_schema.key_column_usage kcu
           on kcu.constraint_schema = tc.constraint_schema and kcu.constraint_name = tc.constraint_name
          and kcu.table_name = tc.table_name
        where tc.table_schema = 'public' and tc.constraint_type = ? and tc.table_name not in ${NOT_OURS}
          and tc.table_name not in ${PARTITIONS}
        order by tc.table_name, tc.constraint_name, kcu.ordinal_position`,
      [type],
    );
  const foreignKeys = await query<DbForeignKey>(
    `select kcu.table_name, kcu.column_name, ccu.table_name as foreign_table, ccu.column_name as foreign_column, rc.delete_rule
       from information_schema.referential_constraints rc
       join information_schema.key_column_usage kcu
         on kcu.constraint_schema = rc.constraint_schema and kcu.constraint_name = rc.constraint_name
       join information_schema.constraint_column_usage ccu
         on ccu.constraint_schema = rc.unique_constraint_schema and ccu.constraint_name = rc.unique_constraint_name
      where rc.constraint_schema = 'public' and kcu.table_name not in ${PARTITIONS}
      order by kcu.table_name, kcu.column_name`,
  );
  return {
    tables: tables.map((t) => t.table_name),
    columns,
    primaryKeys: await keyColumns('PRIMARY KEY'),
    uniques: await keyColumns('UNIQUE'),
    foreignKeys,
  };
}

const allMetadata = (): EntityMetadata[] => Object.values(orm.getMetadata().getAll()).filter((meta) => !meta.embeddable && !meta.virtual);

/** The properties that are columns of the entity's own table (not the inverse side of a relation). */
function columnProps(meta: EntityMetadata): EntityProperty[] {
  return meta.props.filter(
    (prop) =>
      prop.persist !== false &&
      (prop.kind === ReferenceKind.SCALAR || prop.kind === ReferenceKind.MANY_TO_ONE || (prop.kind === ReferenceKind.ONE_TO_ONE && prop.owner)),
  );
}

/** One entry per column of the entities: `table.column` -> what `describe` says of its property. */
function entityColumns<T>(describe: (prop: EntityProperty, index: number, meta: EntityMetadata) => T): Record<string, T> {
  const out: Record<string, T> = {};
  for (const meta of allMetadata()) {
    for (const prop of columnProps(meta)) {
      prop.fieldNames.forEach((field, i) => (out[`${meta.tableName}.${field}`] = describe(prop, i, meta)));
    }
  }
  return out;
}

function dbColumns<T>(schema: Schema, describe: (column: DbColumn) => T): Record<string, T> {
  return Object.fromEntries(schema.columns.map((c) => [`${c.table_name}.${c.column_name}`, describe(c)]));
}

function groupBy<T>(rows: T[], key: (row: T) => string, value: (row: T) => string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const row of rows) (out[key(row)] ??= []).push(value(row));
  return out;
}

/** MikroORM declares identity keys as serial types, which are no types of their own in PostgreSQL. */
const SERIAL: Record<string, string> = { smallserial: 'smallint', serial: 'integer', bigserial: 'bigint' };

/** A column default as both sides spell it: `''::text` and `''` are the same default. */
const normaliseDefault = (value: string | null | undefined) => (value == null ? null : value.replace(/::[a-z ]+(\[\])?$/i, ''));

describe('the entities describe the migrated schema', () => {
  let schema: Schema;
  beforeAll(async () => {
    schema = await readSchema();
  });

  it('maps every table to exactly one entity, and no entity to a table that is not there', () => {
    expect(schema.tables.length).toBeGreaterThanOrEqual(28); // a migrated database, not an empty one
    const mapped = allMetadata().map((meta) => meta.tableName);
    expect(mapped.filter((table, i) => mapped.indexOf(table) !== i)).toEqual([]);
    expect([...mapped].sort()).toEqual(schema.tables);
  });

  it('has a property for every column and a column for every property', () => {
    expect(Object.keys(entityColumns(() => true)).sort()).toEqual(Object.keys(dbColumns(schema, () => true)).sort());
  });

  it('gives each property its column’s nullability', () => {
    expect(entityColumns((prop) => (prop.nullable ? 'null' : 'not null'))).toEqual(dbColumns(schema, (c) => (c.is_nullable === 'YES' ? 'null' : 'not null')));
  });

  it('gives each property its column’s type', async () => {
    const declared = entityColumns((prop, i) => {
      const type = prop.columnTypes[i]!.toLowerCase();
      return SERIAL[type] ?? type;
    });
    // PostgreSQL names the declared types itself, so `int`, `int4` and `integer` are one type.
    const canonical: Record<string, string> = {};
    for (const type of new Set(Object.values(declared))) {
      const [row] = await query<{ type: string | null }>('select to_regtype(?)::text as type', [type]);
      canonical[type] = row?.type ?? `unknown type ${type}`;
    }
    expect(Object.fromEntries(Object.entries(declared).map(([column, type]) => [column, canonical[type]]))).toEqual(dbColumns(schema, (c) => c.type));
  });

  it('gives each property its column’s default, and marks the identity columns autoincrement', () => {
    // A partitioned table's ids come from a sequence it owns (identity columns on partitioned
    // tables need PostgreSQL 17): to the entities that is an autoincrement column too.
    const sequence = (c: DbColumn) => c.column_default?.startsWith('nextval(') ?? false;
    expect(entityColumns((prop) => normaliseDefault(prop.defaultRaw))).toEqual(dbColumns(schema, (c) => (sequence(c) ? null : normaliseDefault(c.column_default))));
    expect(entityColumns((prop) => !!prop.autoincrement)).toEqual(dbColumns(schema, (c) => c.is_identity === 'YES' || sequence(c)));
  });

  it('has the primary key of every table, composite keys in their order', () => {
    const entityKeys = Object.fromEntries(
      allMetadata().map((meta) => [meta.tableName, meta.getPrimaryProps().flatMap((prop) => prop.fieldNames)]),
    );
    expect(entityKeys).toEqual(groupBy(schema.primaryKeys, (k) => k.table_name, (k) => k.column_name));
  });

  // Every foreign key of the schema has one column; a composite one would need its columns paired.
  it('maps every foreign key as a many-to-one relation with its delete rule, and only those', () => {
    const relations = entityColumns((prop, i) =>
      prop.kind === ReferenceKind.SCALAR
        ? null
        : `${prop.targetMeta!.tableName}.${prop.referencedColumnNames[i]} on delete ${(prop.deleteRule ?? 'no action').toLowerCase()}`,
    );
    const foreignKeys = dbColumns(schema, () => null as string | null);
    for (const fk of schema.foreignKeys) {
      foreignKeys[`${fk.table_name}.${fk.column_name}`] = `${fk.foreign_table}.${fk.foreign_column} on delete ${fk.delete_rule.toLowerCase()}`;
    }
    expect(relations).toEqual(foreignKeys);
  });

  it('declares every unique constraint, and only those', () => {
    const declared: string[] = [];
    for (const meta of allMetadata()) {
      for (const prop of columnProps(meta)) if (prop.unique) declared.push(`${meta.tableName} (${prop.fieldNames.join(', ')})`);
      for (const unique of meta.uniques) {
        const names = [unique.properties ?? []].flat() as string[];
        declared.push(`${meta.tableName} (${names.flatMap((name) => meta.properties[name]!.fieldNames).join(', ')})`);
      }
    }
    const constraints = groupBy(schema.uniques, (u) => u.table_name + ' ' + u.constraint_name, (u) => u.column_name);
    const inDb = Object.entries(constraints).map(([key, columns]) => `${key.split(' ')[0]} (${columns.join(', ')})`);
    expect(declared.sort()).toEqual(inDb.sort());
  });

  it('reads every table through its entity', async () => {
    const metas = allMetadata();
    expect(metas.length).toBe(schema.tables.length);
    for (const meta of metas) {
      // Every column named: without `fields` MikroORM selects `*`, which reads a misnamed column too.
      const fields = columnProps(meta).map((prop) => prop.name) as never[];
      const rows = await orm.em.fork().find(meta.className, {}, { fields, limit: 1 });
      expect(Array.isArray(rows), meta.className).toBe(true);
    }
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
    em.create(BlacklistEntryEntity, { snapshot, position: 0, ip: '203.0.113.9', score: 90, lastReportedAt: now, totalReports: 1, categories: [18], countryCode: null, refreshPhase: 3600 });
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
    expect(await read.findOneOrFail(BlacklistEntryEntity, { snapshot: snapshot.id, position: 0 })).toMatchObject({ categories: [18], score: 90 });
    expect((await read.findOneOrFail(SiteNotificationConfigEntity, { key: key.id, site: 'shop.example.com' })).recipients).toEqual(['a@example.com', 'b, c@example.com']);
    expect(await read.findOneOrFail(RelayMessageEntity, message.id)).toMatchObject({ status: 'queued', attempts: 0, site: '', siteUrl: '', payload: { code: '123456' }, keyId: key.id });
    expect(await read.findOneOrFail(RelayUsageEntity, { account: account.id, channel: 'sms', periodStart: now })).toMatchObject({ inclusiveUsed: 1 });
    expect(await read.findOneOrFail(InviteEntity, Buffer.from('c0de', 'hex'))).toMatchObject({ note: '', usedBy: null });
    expect((await read.findOneOrFail(CountryTotalEntity, 'DE')).reports).toBe(2 ** 40);
  });
});
