import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call } from '../support/http.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 27: moving an installation with data to partitioned reports, online. The operator
 * builds the unique index and validates the bound constraint first, without blocking writes
 * (docs/scaling.md); the migration then attaches the table as it is as the first partition:
 * no row is copied, no index rebuilt, and reports keep being accepted while it runs.
 */
let s: TestServer;
const SEEDED = 60_000;

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await s?.close();
});

const oid = async (name: string) => (await s.pool.query<{ oid: number }>('select oid::int as oid from pg_class where relname = $1', [name])).rows[0]?.oid;

describe('the migration to partitioned reports', () => {
  it('attaches a seeded table as it is, with its indexes, while reports keep coming', async (t) => {
    if (s.db.embedded) return t.skip(); // one session: no concurrent index build, no second writer
    const migrator = s.orm.getMigrator();
    await migrator.down({ to: 'Migration20261129010000ReportPartitions' });
    expect(await oid('reports_default')).toBeUndefined();

    const { accountId, key } = await s.createKey('enterprise');
    await s.pool.query(
      `insert into reports (ip, account_id, reporter_role, categories, comment, reported_at)
       select '45.' || (g % 200) || '.' || (g % 251) || '.' || (g % 97), $1, 'enterprise', '{18,22}', 'seed',
              now() - (g % 700) * interval '1 day' - (g % 1440) * interval '1 minute'
         from generate_series(1, ${SEEDED}) g`,
      [accountId],
    );
    const before = (await s.pool.query('select count(*)::int as n, sum(id)::text as ids, max(id)::text as last from reports')).rows[0];
    expect(before.n).toBe(SEEDED);

    // The operator's steps (docs/scaling.md): no lock that blocks writes.
    const bound = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth() + 2, 1)).toISOString();
    await s.pool.query('create unique index concurrently reports_id_reported_at_idx on reports (id, reported_at)');
    await s.pool.query(`alter table reports add constraint reports_partition_bound check (reported_at < '${bound}') not valid`);
    await s.pool.query('alter table reports validate constraint reports_partition_bound');
    const indexes = { history: await oid('reports_ip_reported_at_idx'), key: await oid('reports_id_reported_at_idx') };

    // Reports written while the migration runs. Not through the API: the server is today's
    // code, whose reports carry columns later migrations add (evidence), and the table is
    // migrated back to before them here; a writer of that time inserts what it knew.
    let writing = true;
    const statuses: (number | string)[] = [];
    const writer = (async () => {
      for (let i = 0; writing; i++) {
        statuses.push(
          await s.pool
            .query(
              `insert into reports (ip, account_id, reporter_role, categories, comment, reported_at)
               values ($1, $2, 'enterprise', '{18}', 'during', now())`,
              [`46.1.${i % 250}.${Math.floor(i / 250) % 250}`, accountId],
            )
            .then(() => 200, (err: Error) => err.message),
        );
      }
    })();
    // Reports answered before the migration starts and after it ends, whatever the machine's load.
    const answered = async (n: number) => {
      while (statuses.length < n) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    await answered(3);
    const started = performance.now();
    await migrator.up();
    const took = performance.now() - started;
    await answered(statuses.length + 3);
    writing = false;
    await writer;
    console.log(`migration to partitioned reports over ${SEEDED} rows: ${took.toFixed(0)} ms; ${statuses.length} reports during it`);

    expect(statuses.length).toBeGreaterThanOrEqual(6);
    expect(statuses.filter((status) => status !== 200)).toEqual([]);
    // Attached as it was: the same relation's indexes, not rebuilt.
    expect(await oid('reports_before_ip_reported_at_idx')).toBe(indexes.history);
    expect(await oid('reports_before_id_reported_at_key')).toBe(indexes.key);
    const { rows: parts } = await s.pool.query<{ name: string; bound: string }>(
      `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'reports'::regclass order by 1`,
    );
    expect(parts.find((p) => p.name === 'reports_before')!.bound).toContain('MINVALUE');
    expect(parts.map((p) => p.name)).toContain('reports_default');
    expect(parts.length).toBe(5);
    const seeded = (await s.pool.query("select count(*)::int as n, sum(id)::text as ids from reports where comment = 'seed'")).rows[0];
    expect(seeded).toEqual({ n: before.n, ids: before.ids });
    // New reports go on with the ids after the last one.
    const fresh = await call(s.base, '/report', { key, json: { ip: '46.2.3.4', categories: [18] } });
    expect(fresh.status).toBe(200);
    expect(BigInt(fresh.body.data.reportId)).toBeGreaterThan(BigInt(before.last));
  });
});
