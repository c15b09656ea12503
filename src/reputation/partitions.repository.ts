import { transaction, type Pool, type Queryable } from '../db/pool.js';
import { recomputeAggregates, REPORT_LOCKS, type DecayWeights } from './repository.js';

/**
 * The monthly partitions of `reports` (migration ReportPartitions): created ahead of time, and
 * dropped once a whole month lies past the retention, with every address they held recomputed
 * without them. The first partition, `reports_before`, holds what the table held before it was
 * partitioned: its expired rows are deleted in batches until its bound passes the cutoff, then it
 * is dropped like a month. The default partition is never dropped; its expired rows are deleted
 * in batches.
 */

/** The partitions created ahead of the current month. */
const MONTHS_AHEAD = 3;
/** Addresses recomputed per transaction: each holds the report locks of its reporters. */
const BATCH = 500;
/** Any stable number: one process at a time changes the partitions. */
const PARTITIONS_LOCK = 7_260_112_027;
/** A partition past the retention is renamed so while its addresses are recomputed; a later run resumes it. */
const EXPIRING = 'reports_expiring_';

interface Partition {
  name: string;
  /** null: MINVALUE (reports_before), or the default partition (both null). */
  from: Date | null;
  to: Date | null;
}

export interface Expired {
  /** Monthly partitions dropped. */
  partitions: string[];
  /** Reports deleted from reports_before and the default partition, plus the rows of the dropped partitions. */
  reports: number;
  /** Addresses whose aggregate was recomputed. */
  addresses: number;
}

const monthStart = (at: Date, plus = 0) => new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + plus, 1));
const nameOf = (month: Date) => `reports_${month.getUTCFullYear()}_${String(month.getUTCMonth() + 1).padStart(2, '0')}`;

export class ReportPartitions {
  constructor(
    private readonly pool: Pool,
    private readonly decay: DecayWeights,
  ) {}

  /** The partitions of `reports`, oldest first, the default partition last. */
  async list(db: Queryable = this.pool): Promise<Partition[]> {
    const { rows } = await db.query<{ name: string; bound: string; from: Date | null; to: Date | null }>(
      `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
         from pg_inherits i join pg_class c on c.oid = i.inhrelid
        where i.inhparent = 'reports'::regclass`,
    );
    const at = (bound: string, side: 'FROM' | 'TO') => {
      const m = new RegExp(`${side} \\('([^']+)'\\)`).exec(bound);
      return m ? new Date(m[1]!) : null;
    };
    return rows
      .map((r) => ({ name: r.name, from: at(r.bound, 'FROM'), to: at(r.bound, 'TO') }))
      .sort((a, b) => (a.to?.getTime() ?? Infinity) - (b.to?.getTime() ?? Infinity));
  }

  /**
   * Creates the partitions of the current month and the MONTHS_AHEAD after it that do not
   * exist yet. Reports already in the default partition for such a month (a clock that ran
   * ahead of the partitions) are moved into it.
   */
  async ensure(now: Date): Promise<string[]> {
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [PARTITIONS_LOCK]);
      if (!rows[0]!.locked) return [];
      const partitions = await this.list(client);
      const covered = (month: Date) => partitions.some((p) => p.to !== null && p.to > month && (p.from === null || p.from <= month));
      const created: string[] = [];
      for (let i = 0; i <= MONTHS_AHEAD; i++) {
        const month = monthStart(now, i);
        if (covered(month)) continue;
        const [name, from, to] = [nameOf(month), month, monthStart(month, 1)];
        await client.query(`create table ${name} (like reports including defaults including constraints)`);
        await client.query(
          `with moved as (delete from reports_default where reported_at >= $1 and reported_at < $2 returning *)
           insert into ${name} select * from moved`,
          [from, to],
        );
        await client.query(`alter table reports attach partition ${name} for values from ('${from.toISOString()}') to ('${to.toISOString()}')`);
        created.push(name);
      }
      return created;
    });
  }

  /**
   * Takes out every report made before `cutoff`: whole months by dropping their partition,
   * and the older rows of reports_before and the default partition by deleting them. Each
   * address they concerned is recomputed from the reports left, as if they had never been made.
   */
  async expire(cutoff: Date): Promise<Expired> {
    const expired: Expired = { partitions: [], reports: 0, addresses: 0 };
    // A partition renamed by a run that did not finish goes first.
    for (const name of await this.detached()) await this.finish(name, expired);
    // Whole partitions past the cutoff: every month, and reports_before once its bound has passed
    // too (from then on nothing is ever written there again).
    const partitions = await this.list();
    for (const partition of partitions) {
      if (partition.to === null || partition.to > cutoff) continue;
      const name = await this.detach(partition.name);
      if (name) await this.finish(name, expired);
    }
    // Rows past the cutoff in the partitions that stay: reports_before while its bound is still
    // ahead of the cutoff (found by reported_at, which has no index of its own there: one scan an
    // hour until the bound passes), and the default partition (empty unless a clock ran ahead).
    const before = partitions.find((p) => p.name === 'reports_before');
    const straddling = [...(before?.to && before.to > cutoff ? ['reports_before'] : []), 'reports_default'];
    for (const partition of straddling) {
      for (;;) {
        const batch = await this.deleteBatch(partition, cutoff);
        if (!batch) break;
        expired.reports += batch.reports;
        expired.addresses += batch.addresses;
      }
    }
    return expired;
  }

  private async detached(): Promise<string[]> {
    const { rows } = await this.pool.query<{ name: string }>(
      `select relname as name from pg_class where relkind = 'r' and relname like $1 and not relispartition order by relname`,
      [`${EXPIRING}%`],
    );
    return rows.map((r) => r.name);
  }

  /** Detaches a partition and renames it `reports_expiring_…`; undefined when another process has it. */
  private async detach(name: string): Promise<string | undefined> {
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_xact_lock($1) as locked', [PARTITIONS_LOCK]);
      if (!rows[0]!.locked) return undefined;
      const still = await client.query('select 1 from pg_class where relname = $1 and relispartition', [name]);
      if (!still.rowCount) return undefined;
      const renamed = EXPIRING + name.slice('reports_'.length);
      await client.query(`alter table reports detach partition ${name}`);
      await client.query(`alter table ${name} rename to ${renamed}`);
      return renamed;
    });
  }

  /** Recomputes the addresses of a detached partition, in batches of BATCH, then drops it. */
  private async finish(table: string, expired: Expired): Promise<void> {
    let after = '';
    for (;;) {
      const { rows } = await this.pool.query<{ ip: string; accounts: number[] }>(
        `select ip, array_agg(distinct account_id) as accounts from ${table} where ip > $1 group by ip order by ip limit ${BATCH}`,
        [after],
      );
      if (!rows.length) break;
      const pairs = rows.flatMap((r) => r.accounts.map((account) => ({ ip: r.ip, account })));
      await transaction(this.pool, async (client) => {
        await this.lockReporters(client, pairs);
        await recomputeAggregates(client, pairs.map((p) => p.ip), pairs.map((p) => p.account), this.decay);
      });
      expired.addresses += rows.length;
      after = rows.at(-1)!.ip;
    }
    const { rows } = await this.pool.query<{ n: number }>(`select count(*)::int as n from ${table}`);
    await this.pool.query(`drop table ${table}`);
    expired.reports += rows[0]!.n;
    expired.partitions.push(table.replace(EXPIRING, 'reports_'));
  }

  /** Deletes the expired reports of up to BATCH addresses of a partition that stays, and recomputes those addresses. */
  private async deleteBatch(partition: string, cutoff: Date): Promise<{ reports: number; addresses: number } | undefined> {
    return transaction(this.pool, async (client) => {
      const { rows } = await client.query<{ ip: string; account_id: number }>(
        `select distinct ip, account_id from ${partition}
          where ip in (select distinct ip from ${partition} where reported_at < $1 limit ${BATCH}) and reported_at < $1`,
        [cutoff],
      );
      if (!rows.length) return undefined;
      const pairs = rows.map((r) => ({ ip: r.ip, account: r.account_id }));
      await this.lockReporters(client, pairs);
      const ips = [...new Set(pairs.map((p) => p.ip))];
      const deleted = await client.query(`delete from ${partition} where ip = any($1::text[]) and reported_at < $2`, [ips, cutoff]);
      await recomputeAggregates(client, pairs.map((p) => p.ip), pairs.map((p) => p.account), this.decay);
      return { reports: deleted.rowCount ?? 0, addresses: ips.length };
    });
  }

  /** The report locks of these reporters' pairs, in one order (as POST /report takes them). */
  private async lockReporters(client: Queryable, pairs: { ip: string; account: number }[]): Promise<void> {
    await client.query(
      `select pg_advisory_xact_lock(${REPORT_LOCKS.space}, k) from (
         select distinct ${REPORT_LOCKS.bucket('a', 'ip')} as k from unnest($1::int[], $2::text[]) as v(a, ip)
       ) keys order by k`,
      [pairs.map((p) => p.account), pairs.map((p) => p.ip)],
    );
  }
}
