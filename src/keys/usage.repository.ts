import { networkOf, parseAddress } from '../address.js';
import { DAY_MS, nextUtcMidnight, utcDay, type Clock } from '../clock.js';
import { readTogether, transaction, type NamedQuery, type Pool, type Queryable } from '../db/pool.js';
import { join, param, raw, sql, statement, type Param, type Sql } from '../db/sql.js';
import type { Caller } from './service.js';
import { type Outcome, type Payer, type Quota, type Receipt, type Subject } from './quota.js';
import { dailyLimit, DEFAULT_PUBLIC_LIMITS, type Counter, type PublicLimits } from '../roles.js';

export type { Subject } from './quota.js';

export interface CounterState {
  counter: Counter;
  /** -1 when unlimited. */
  limit: number;
  used: number;
  /** Start of the next UTC day. */
  resetAt: Date;
}

export interface ChargeResult extends CounterState {
  allowed: boolean;
  /** The counter rows charged, for a refund. */
  subject: string[];
  day: string;
}

const UNLIMITED = 2_147_483_647;

/** The most charges of one counter put in one group (one transaction, one commit). */
const GROUP_MAX = 100;

/** A charge waiting for the one in flight on its counter (Meter.chargeWith). */
interface Queued {
  payer: Payer;
  units: number;
  read: NamedQuery;
  resolve(answer: { outcome: Outcome; rows: object[] }): void;
  reject(err: unknown): void;
}

const isPool = (db: Queryable): db is Pool => !('release' in db);


/**
 * The public allowance belongs to a source address: IPv4-mapped IPv6 counts as its IPv4
 * address, and IPv6 counts per /64 (one customer allocation), so rotating addresses inside it
 * gains nothing.
 */
export function publicSubjectOf(sourceIp: string): string {
  const addr = parseAddress(sourceIp);
  if (!addr) return `ip:${sourceIp}`;
  return addr.version === 4 ? `ip:${addr.text}` : `ip:${networkOf(addr, 64)}`;
}

/**
 * The wider IPv6 network a source is also counted in, `net:<network>/<prefix>` (one site's
 * allocation: a /48 holds 65,536 /64s); undefined for IPv4, or when the prefix is /64 or longer.
 * The public allowance's aggregate (PUBLIC_V6_AGGREGATE_PREFIX), and the sign-in throttle's.
 */
export function publicNetworkOf(sourceIp: string, prefix: number): string | undefined {
  const addr = parseAddress(sourceIp);
  if (addr?.version !== 6 || prefix >= 64) return undefined;
  return `net:${networkOf(addr, prefix)}`;
}

export { DEFAULT_PUBLIC_LIMITS, type PublicLimits } from '../roles.js';

export interface UsageReader {
  /** Today's usage of an account's check and report counters. */
  today(caller: Caller): Promise<{ check: number; report: number }>;
}

const CHARGED = 'charge:used';
const BEFORE = 'charge:before';
const READ_ROW = 'charge:row';
type ChargedRow = { [CHARGED]: number | null; [BEFORE]: number | null; [READ_ROW]: true | null };

/**
 * How a statement meters: charging one counter, charging several (a public IPv6 source and its
 * wider prefix) all or none, or only reading the first (`peek`, for the headers of an uncharged
 * operation).
 */
type Metering = 'one' | 'several' | 'peek';

/**
 * Makes the statement's own transaction commit without waiting for the WAL flush (set_config
 * with is_local: until its commit). A counter row takes every charge of its account, and each
 * charge waited for the disk before the next could take the row: 1,388 commits/s at most here
 * (pgbench), against 14,179/s asynchronously. What PostgreSQL loses in a crash is the last
 * fraction of a second of charges (at most 3 × wal_writer_delay, 600 ms by default), never a
 * charge counted twice and never a report or a relay message: those commit as before.
 */
const ASYNC_COMMIT = "(select set_config('synchronous_commit', 'off', true)) one";

/** The charge's own values, each one parameter of the statement however often it appears. */
interface ChargeParams {
  names: Param;
  counter: Param;
  day: Param;
  units: Param;
  limits: Param;
}

/**
 * The charge. One counter: a conditional upsert that adds the units only when the total stays
 * within the limit; several: all or none, in `charge_counters` (the SecurityScopes migration).
 */
const CHARGES: Record<Exclude<Metering, 'peek'>, (p: ChargeParams) => Sql> = {
  one: (p) => sql`insert into usage_counters (subject, counter, day, used)
             select (${p.names}::text[])[1], ${p.counter}, ${p.day}::date, ${p.units}::int where ${p.units}::int <= (${p.limits}::int[])[1]
             on conflict (subject, counter, day)
             do update set used = usage_counters.used + excluded.used
              where usage_counters.used + excluded.used <= (${p.limits}::int[])[1]
             returning used`,
  several: (p) => sql`select (charge_counters(${p.names}::text[], ${p.counter}, ${p.day}::date, ${p.units}::int, ${p.limits}::int[]))[1] as used`,
};

/**
 * The metering as one statement: the charge, if any; the first counter as it was before (for a
 * refusal's headers, or a peek's); and `read` beside them. The builder numbers the read's
 * parameters after the charge's (db/sql.ts).
 */
function meteredStatement(metering: Metering, p: ChargeParams, read: NamedQuery | undefined, asyncCommit = false): Sql {
  const charge = metering === 'peek' ? undefined : CHARGES[metering](p);
  const ctes = [charge && sql`charged as (${charge})`, read && sql`answer as (select true as "${raw(READ_ROW)}", a.* from (${read.query}) a)`].filter(
    (cte): cte is Sql => cte !== undefined,
  );
  return sql`${ctes.length ? sql`with ${join(ctes)}` : raw('')}
    select ${charge ? raw('(select used from charged)') : raw('null::int')} as "${raw(CHARGED)}",
           (select used from usage_counters where subject = (${p.names}::text[])[1] and counter = ${p.counter} and day = ${p.day}::date) as "${raw(BEFORE)}"
           ${read ? raw(', answer.*') : raw('')}
      from ${asyncCommit ? raw(ASYNC_COMMIT) : raw('(select 1) one')}${read ? raw(' left join answer on true') : raw('')}`;
}

/**
 * The daily counters, in PostgreSQL so that every server process sees the same totals.
 * A charge is one conditional upsert: it adds N only when the total stays within the limit
 * and returns the new total, so concurrent requests on any number of processes never admit
 * more than the limit and never refuse one that fits.
 */
export class Meter implements UsageReader, Quota {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
    private readonly publicLimits: PublicLimits = DEFAULT_PUBLIC_LIMITS,
    /** QUOTA_SYNCHRONOUS_COMMIT: every standalone charge waits for the disk (see ASYNC_COMMIT). */
    private readonly synchronousCommit = false,
  ) {}

  /**
   * The counters one charge goes to, the one its headers describe first: an account's, or a
   * public source address's and, for IPv6, the aggregate of its wider prefix.
   */
  private countersOf(subject: Subject, counter: Counter): { name: string; limit: number }[] {
    if ('caller' in subject) {
      if (counter === 'public') throw new Error('a key is never charged the public allowance');
      const { role, licences, accountId } = subject.caller;
      return [{ name: `a:${accountId}`, limit: dailyLimit(role, licences, counter) }];
    }
    const main = { name: publicSubjectOf(subject.sourceIp), limit: this.publicLimits.perAddress };
    const net = publicNetworkOf(subject.sourceIp, this.publicLimits.v6AggregatePrefix);
    return net ? [main, { name: net, limit: this.publicLimits.v6AggregateLimit }] : [main];
  }

  /** `db`: a transaction to charge in, so that the charge rolls back with the work it pays for. */
  async chargeSubject(subject: Subject, counter: Counter, units: number, db: Queryable = this.db): Promise<ChargeResult> {
    return (await this.chargeSubjectWith(subject, counter, units, undefined, db)).result;
  }

  // The Quota port (keys/quota.ts): what the use cases call.

  async charge(payer: Payer, units: number, tx?: Queryable): Promise<Outcome> {
    const { result } = await this.chargeSubjectWith(payer.subject, payer.counter, units, undefined, tx ?? this.db);
    return this.outcome(payer, result, units, tx === undefined);
  }

  /**
   * A request alone on its counter charges and reads in one statement, one round trip. Requests
   * that arrive while a charge of the same counter is in flight (they would queue on its row
   * lock, one commit each) wait for it and are then charged together: one transaction whose
   * chargeClaims admits each in order, exactly as one after the other would, with one commit for
   * all; each one's read follows it. The charges of one busy account thus cost one commit per
   * group instead of one per request.
   */
  async chargeWith<R extends object>(payer: Payer, units: number, read: NamedQuery): Promise<{ outcome: Outcome; rows: R[] }> {
    if (payer.peek) {
      const { state, rows } = await this.peekWith<R>(payer.subject, payer.counter, read);
      return { outcome: state, rows };
    }
    if (!isPool(this.db)) return this.chargeAlone<R>(payer, units, read);
    const key = `${payer.counter}\u0000${this.countersOf(payer.subject, payer.counter).map((c) => c.name).join('\u0000')}`;
    const queue = this.waiting.get(key);
    if (queue) return new Promise((resolve, reject) => queue.push({ payer, units, read, resolve: resolve as Queued['resolve'], reject }));
    this.waiting.set(key, []);
    try {
      return await this.chargeAlone<R>(payer, units, read);
    } finally {
      this.drain(key);
    }
  }

  /** The charge and the read in one statement. */
  private async chargeAlone<R extends object>(payer: Payer, units: number, read: NamedQuery): Promise<{ outcome: Outcome; rows: R[] }> {
    const { result, rows } = await this.chargeSubjectWith<R>(payer.subject, payer.counter, units, read);
    return { outcome: this.outcome(payer, result, units, true), rows: result.allowed ? rows : [] };
  }

  /** Charges waiting on `key`: the next group of them, once the charge in flight is done. */
  private readonly waiting = new Map<string, Queued[]>();

  private drain(key: string): void {
    const queue = this.waiting.get(key)!;
    if (!queue.length) {
      this.waiting.delete(key);
      return;
    }
    const group = queue.splice(0, GROUP_MAX);
    void this.chargeGroup(group).finally(() => this.drain(key));
  }

  /**
   * A group's charges in one transaction (chargeClaims: each admitted in order), then the reads
   * of those admitted in the same transaction, the reads of one kind as one statement
   * (readTogether): a group of N costs five statements and one commit, not N of each.
   */
  private async chargeGroup(group: Queued[]): Promise<void> {
    if (group.length === 1) {
      const [member] = group as [Queued];
      return this.chargeAlone(member.payer, member.units, member.read).then(member.resolve, member.reject);
    }
    let results: ChargeResult[];
    let reads: object[][];
    try {
      [results, reads] = await transaction(this.db as Pool, async (client) => {
        if (!this.synchronousCommit) await client.query("select set_config('synchronous_commit', 'off', true)");
        const charged = await this.chargeClaims(group.map(({ payer, units }) => ({ subject: payer.subject, counter: payer.counter, units })), client);
        const admitted = group.filter((_, i) => charged[i]!.allowed);
        const rows = await readTogether(client, admitted.map((member) => member.read));
        return [charged, rows] as const;
      });
    } catch (err) {
      for (const member of group) member.reject(err);
      return;
    }
    let next = 0;
    group.forEach((member, i) => {
      const result = results[i]!;
      member.resolve({ outcome: this.outcome(member.payer, result, member.units, true), rows: result.allowed ? reads[next++]! : [] });
    });
  }

  async chargeMany(claims: { payer: Payer; units: number }[], tx: Queryable): Promise<Outcome[]> {
    const results = await this.chargeClaims(claims.map(({ payer, units }) => ({ subject: payer.subject, counter: payer.counter, units })), tx);
    return results.map((result, i) => this.outcome(claims[i]!.payer, result, claims[i]!.units, false));
  }

  /** A charge's result as the port's value; a standalone one goes on the payer's tab, for a refund. */
  private outcome(payer: Payer, result: ChargeResult, units: number, standalone: boolean): Outcome {
    const usage = { counter: result.counter, limit: result.limit, used: result.used, resetAt: result.resetAt };
    if (!result.allowed) return { refused: true, usage };
    const receipt: Receipt = { subject: result.subject, counter: result.counter, day: result.day, units };
    if (standalone && units > 0) payer.tab?.push(receipt);
    return { ...usage, receipt };
  }

  /**
   * Charges and runs `read` in one statement, one round trip: the read's rows come back with the
   * charge's outcome, and are the caller's to drop when the charge was refused. `read` is a
   * statement written with its own parameters from $1; it must hold no other `$`, and its rows
   * come back in no particular order (a read of several rows sorts them itself).
   */
  async chargeSubjectWith<R extends object>(
    subject: Subject,
    counter: Counter,
    units: number,
    read: NamedQuery | undefined,
    db: Queryable = this.db,
  ): Promise<{ result: ChargeResult; rows: R[] }> {
    const counters = this.countersOf(subject, counter);
    return this.metered<R>(counters.length > 1 ? 'several' : 'one', counters, counter, units, read, db);
  }

  /**
   * Charges many requests in a transaction (`db`), in their order, each all or nothing: a request
   * is admitted when every counter it goes to stays within its limit, else refused and charged
   * nothing. Two statements whatever their number: the first locks every counter row charged (in
   * one order, creating those not there yet) and reads it as committed, the second writes the
   * new totals. The rows stay locked until `db` ends, so concurrent charges on any number of
   * processes never admit more than the limit. Returns each request's outcome, as chargeWith.
   */
  async chargeClaims(claims: { subject: Subject; counter: Counter; units: number }[], db: Queryable): Promise<ChargeResult[]> {
    const now = this.clock.now();
    const day = utcDay(now);
    const plans = claims.map((claim) => ({ ...claim, counters: this.countersOf(claim.subject, claim.counter) }));
    const keyOf = (name: string, counter: Counter) => `${counter}\u0000${name}`;
    const keys = [...new Set(plans.flatMap((p) => p.counters.map((c) => keyOf(c.name, p.counter))))].sort();
    const split = keys.map((k) => k.split('\u0000') as [Counter, string]);
    const { rows } = await db.query<{ subject: string; counter: Counter; used: number }>({
      name: 'charge-many:lock',
      text: `insert into usage_counters (subject, counter, day, used)
             select v.subject, v.counter, $3::date, 0 from unnest($1::text[], $2::text[]) with ordinality as v(subject, counter, n) order by v.n
             on conflict (subject, counter, day) do update set used = usage_counters.used
             returning subject, counter, used`,
      values: [split.map(([, name]) => name), split.map(([counter]) => counter), day],
    });
    const used = new Map(rows.map((r) => [keyOf(r.subject, r.counter), r.used]));
    const results = plans.map(({ counter, units, counters }): ChargeResult => {
      const key = (name: string) => keyOf(name, counter);
      const allowed = counters.every((c) => c.limit < 0 || used.get(key(c.name))! + units <= c.limit);
      if (allowed) for (const c of counters) used.set(key(c.name), used.get(key(c.name))! + units);
      const first = counters[0]!;
      return { allowed, counter, limit: first.limit, used: used.get(key(first.name))!, resetAt: nextUtcMidnight(now), subject: counters.map((c) => c.name), day };
    });
    const changed = rows.filter((r) => used.get(keyOf(r.subject, r.counter)) !== r.used);
    if (changed.length) {
      await db.query({
        name: 'charge-many:add',
        text: `update usage_counters u set used = v.used
                 from unnest($1::text[], $2::text[], $3::int[]) as v(subject, counter, used)
                where u.subject = v.subject and u.counter = v.counter and u.day = $4::date`,
        values: [changed.map((r) => r.subject), changed.map((r) => r.counter), changed.map((r) => used.get(keyOf(r.subject, r.counter))), day],
      });
    }
    return results;
  }

  /** Reads the counter's state (for an uncharged operation's headers) and runs `read`, in one statement. */
  async peekWith<R extends object>(subject: Subject, counter: Counter, read: NamedQuery): Promise<{ state: CounterState; rows: R[] }> {
    const { result, rows } = await this.metered<R>('peek', this.countersOf(subject, counter).slice(0, 1), counter, 0, read, this.db);
    return { state: result, rows };
  }

  private async metered<R extends object>(
    metering: Metering,
    counters: { name: string; limit: number }[],
    counter: Counter,
    units: number,
    read: NamedQuery | undefined,
    db: Queryable,
  ): Promise<{ result: ChargeResult; rows: R[] }> {
    const now = this.clock.now();
    const day = utcDay(now);
    const names = counters.map((c) => c.name);
    // A charge standing alone (in no caller's transaction) commits asynchronously; one inside a
    // transaction (a report's) commits with the work it pays for.
    const asyncCommit = metering !== 'peek' && db === this.db && !this.synchronousCommit;
    const p: ChargeParams = {
      names: param(names),
      counter: param(counter),
      day: param(day),
      units: param(units),
      limits: param(counters.map((c) => (c.limit < 0 ? UNLIMITED : c.limit))),
    };
    const { rows } = await db.query<ChargedRow & R>(
      statement(
        `${metering === 'one' ? 'charge' : metering === 'several' ? 'charges' : 'peek'}${read ? `+${read.name}` : ''}${asyncCommit ? ':async' : ''}`,
        meteredStatement(metering, p, read, asyncCommit),
      ),
    );
    const first = rows[0]!;
    const allowed = metering === 'peek' || first[CHARGED] !== null;
    const used = first[CHARGED] ?? first[BEFORE] ?? 0;
    return {
      result: { allowed, counter, limit: counters[0]!.limit, used, resetAt: nextUtcMidnight(now), subject: names, day },
      rows: read ? rows.filter((row) => row[READ_ROW]) : [],
    };
  }

  /** Gives back a charge whose request then failed on the server's side (5xx). */
  async refund(receipt: Receipt): Promise<void> {
    await this.db.query({
      name: 'refund-counter',
      text: `update usage_counters set used = greatest(0, used - $4)
              where subject = any($1::text[]) and counter = $2 and day = $3::date`,
      values: [receipt.subject, receipt.counter, receipt.day, receipt.units],
    });
  }

  /**
   * Counts a server error met by a caller (its account, and its source address), and returns
   * the highest of their counts today: callers past their budget get no refunds and no more
   * service today (see http/fault-budget.ts).
   */
  async recordFault(subjects: string[]): Promise<number> {
    const { rows } = await this.db.query<{ used: number }>({
      name: 'record-fault',
      text: `insert into usage_counters (subject, counter, day, used)
             select unnest($1::text[]), 'faults', $2::date, 1
             on conflict (subject, counter, day) do update set used = usage_counters.used + 1
             returning used`,
      values: [subjects, utcDay(this.clock.now())],
    });
    return Math.max(0, ...rows.map((r) => r.used));
  }

  /** The state of a counter without charging it (for the headers of uncharged operations). */
  async peek(subject: Subject, counter: Counter): Promise<CounterState> {
    const now = this.clock.now();
    const { name, limit } = this.countersOf(subject, counter)[0]!;
    return { counter, limit, used: await this.read(name, counter, utcDay(now)), resetAt: nextUtcMidnight(now) };
  }

  async today(caller: Caller): Promise<{ check: number; report: number }> {
    const { rows } = await this.db.query<{ counter: Counter; used: number }>({
      name: 'usage-today',
      text: 'select counter, used from usage_counters where subject = $1 and day = $2::date',
      values: [`a:${caller.accountId}`, utcDay(this.clock.now())],
    });
    const used = (counter: Counter) => rows.find((r) => r.counter === counter)?.used ?? 0;
    return { check: used('check'), report: used('report') };
  }

  /**
   * Deletes the counters of days before yesterday (UTC): a counter is read only on its own day
   * (the charge, the headers, the dashboard's today), and yesterday's is kept for a request that
   * began just before midnight. Without this, every public source address that ever called
   * would leave a row a day forever.
   */
  async purge(db: Queryable = this.db): Promise<number> {
    const { rowCount } = await db.query('delete from usage_counters where day < $1::date', [utcDay(new Date(this.clock.now().getTime() - DAY_MS))]);
    return rowCount ?? 0;
  }

  /** `db`: the caller's transaction, if any: never wait on a second connection inside one. */
  private async read(name: string, counter: Counter, day: string, db: Queryable = this.db): Promise<number> {
    const { rows } = await db.query<{ used: number }>({
      name: 'read-counter',
      text: 'select used from usage_counters where subject = $1 and counter = $2 and day = $3::date',
      values: [name, counter, day],
    });
    return rows[0]?.used ?? 0;
  }
}
