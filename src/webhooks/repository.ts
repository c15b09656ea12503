import { randomUUID } from 'node:crypto';
import { transaction, type Connection, type Pool, type Queryable } from '../db/pool.js';

/** A subscription as the service reads it (the secret only where it signs). */
export interface EndpointRow {
  id: string;
  accountId: number;
  url: string;
  events: string[];
  confidence: number;
  categories: number[];
  createdAt: Date;
  disabledAt: Date | null;
  failingSince: Date | null;
  lastSnapshotId: number | null;
}
export interface SigningEndpoint extends EndpointRow {
  secret: string;
}

/** A delivery claimed for an attempt, with what signs and addresses it. */
export interface DueDelivery {
  id: string;
  eventType: string;
  body: string;
  attempts: number;
  endpoint: SigningEndpoint;
}

/** An address whose listing changed between two snapshots (the regeneration events). */
export interface AddressChange {
  ip: string;
  score: number | null;
  previousScore: number | null;
}

const ENDPOINT = `e.id, e.account_id as "accountId", e.url, e.events, e.confidence, e.categories::int[] as categories,
  e.created_at as "createdAt", e.disabled_at as "disabledAt", e.failing_since as "failingSince", e.last_snapshot_id::int as "lastSnapshotId"`;

/** The webhooks' tables (`webhook_endpoints`, `webhook_deliveries`), on hand SQL. */
/** One delivery as the dashboard's log shows it. */
export interface DeliveryLogRow {
  id: string;
  url: string;
  eventType: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
  nextAttemptAt: Date | null;
  createdAt: Date;
}

export class WebhookRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Stores a subscription unless the account holds `max` already: the account's row is locked
   * first, so parallel requests cannot make an eleventh. Returns undefined at the limit.
   */
  async create(
    input: { accountId: number; url: string; events: string[]; confidence: number; categories: number[]; secret: string; at: Date; snapshotId: number | null },
    max: number,
  ): Promise<EndpointRow | undefined> {
    return transaction(this.pool, async (tx) => {
      await tx.query('select 1 from accounts where id = $1 for update', [input.accountId]);
      const { rows: counted } = await tx.query<{ n: number }>('select count(*)::int as n from webhook_endpoints where account_id = $1', [input.accountId]);
      if (counted[0]!.n >= max) return undefined;
      const { rows } = await tx.query<EndpointRow>(
        `insert into webhook_endpoints as e (id, account_id, url, events, confidence, categories, secret, created_at, last_snapshot_id)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9) returning ${ENDPOINT}`,
        [randomUUID(), input.accountId, input.url, input.events, input.confidence, input.categories, input.secret, input.at, input.snapshotId],
      );
      return rows[0];
    });
  }

  async list(accountId: number): Promise<EndpointRow[]> {
    const { rows } = await this.pool.query<EndpointRow>(`select ${ENDPOINT} from webhook_endpoints e where e.account_id = $1 order by e.created_at, e.id`, [accountId]);
    return rows;
  }

  /** The account's newest deliveries, newest first, with their endpoint's URL (the dashboard's delivery log). */
  async recentDeliveries(accountId: number, limit: number): Promise<DeliveryLogRow[]> {
    const { rows } = await this.pool.query<DeliveryLogRow>(
      `select d.id, e.url, d.event_type as "eventType", d.attempts, d.last_status as "lastStatus", d.last_error as "lastError",
              d.delivered_at as "deliveredAt", d.next_attempt_at as "nextAttemptAt", d.created_at as "createdAt"
         from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
        where e.account_id = $1 order by d.created_at desc, d.id limit $2`,
      [accountId, limit],
    );
    return rows;
  }

  async find(accountId: number, id: string): Promise<SigningEndpoint | undefined> {
    const { rows } = await this.pool.query<SigningEndpoint>(`select ${ENDPOINT}, e.secret from webhook_endpoints e where e.account_id = $1 and e.id = $2`, [accountId, id]);
    return rows[0];
  }

  /** Deletes a subscription (its deliveries with it); whether there was one. */
  async delete(accountId: number, id: string): Promise<boolean> {
    const { rowCount } = await this.pool.query('delete from webhook_endpoints where account_id = $1 and id = $2', [accountId, id]);
    return (rowCount ?? 0) > 0;
  }

  /** Stores a delivery to make (due at `due`; null: made by the caller at once, never retried). */
  async enqueue(delivery: { id: string; endpointId: string; eventType: string; payload: unknown; at: Date; due: Date | null }, db: Queryable = this.pool): Promise<void> {
    await db.query(
      `insert into webhook_deliveries (id, endpoint_id, event_type, payload, next_attempt_at, created_at) values ($1, $2, $3, $4, $5, $6)`,
      [delivery.id, delivery.endpointId, delivery.eventType, JSON.stringify(delivery.payload), delivery.due, delivery.at],
    );
  }

  /**
   * Claims up to `limit` due deliveries of enabled endpoints for an attempt: their next attempt
   * is moved `leaseMs` on (a process that dies mid-attempt leaves them to be tried again then),
   * rows locked by another process skipped.
   */
  async claimDue(now: Date, leaseMs: number, limit: number): Promise<DueDelivery[]> {
    const { rows } = await this.pool.query<DueDelivery & { endpointId: string }>(
      `with due as (
         select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
          where d.delivered_at is null and d.next_attempt_at <= $1 and e.disabled_at is null
          order by d.next_attempt_at limit $3 for update of d skip locked)
       update webhook_deliveries d set next_attempt_at = $1::timestamptz + make_interval(secs => $2::double precision / 1000)
         from due where d.id = due.id
       returning d.id, d.event_type as "eventType", d.payload::text as body, d.attempts, d.endpoint_id as "endpointId"`,
      [now, leaseMs, limit],
    );
    if (rows.length === 0) return [];
    const ids = [...new Set(rows.map((r) => r.endpointId))];
    const { rows: endpoints } = await this.pool.query<SigningEndpoint>(`select ${ENDPOINT}, e.secret from webhook_endpoints e where e.id = any($1::uuid[])`, [ids]);
    const byId = new Map(endpoints.map((e) => [e.id, e]));
    return rows.filter((r) => byId.has(r.endpointId)).map(({ endpointId, ...r }) => ({ ...r, endpoint: byId.get(endpointId)! }));
  }

  /** Records a successful attempt: the delivery done, the endpoint no longer failing (and enabled again). */
  async delivered(id: string, endpointId: string, status: number, at: Date): Promise<void> {
    // The endpoint's row first, then the delivery's, as every transaction here locks them
    // (disable() updates an endpoint and then its deliveries): another order deadlocks.
    await transaction(this.pool, async (tx) => {
      await tx.query('update webhook_endpoints set failing_since = null, disabled_at = null where id = $1', [endpointId]);
      await tx.query('update webhook_deliveries set attempts = attempts + 1, delivered_at = $2, next_attempt_at = null, last_status = $3, last_error = null where id = $1', [id, at, status]);
    });
  }

  /**
   * Records a failed attempt: the next one at `retryAt` (null: none left), the endpoint failing
   * since now unless it was already. Returns since when the endpoint has been failing.
   */
  async failed(id: string, endpointId: string, outcome: { status: number | null; error: string | null }, at: Date, retryAt: Date | null): Promise<Date> {
    // The endpoint's row first, then the delivery's (see delivered()).
    return transaction(this.pool, async (tx) => {
      const { rows } = await tx.query<{ since: Date }>(
        'update webhook_endpoints set failing_since = coalesce(failing_since, $2) where id = $1 returning failing_since as since',
        [endpointId, at],
      );
      await tx.query('update webhook_deliveries set attempts = attempts + 1, next_attempt_at = $2, last_status = $3, last_error = $4 where id = $1', [
        id,
        retryAt,
        outcome.status,
        outcome.error,
      ]);
      return rows[0]?.since ?? at;
    });
  }

  /** Disables an endpoint (once) and stops its pending deliveries; the owner's mail address if it was disabled now. */
  async disable(endpointId: string, at: Date): Promise<{ email: string | null; url: string } | undefined> {
    return transaction(this.pool, async (tx) => {
      const { rows } = await tx.query<{ email: string | null; url: string }>(
        `update webhook_endpoints e set disabled_at = $2 from accounts a
          where e.id = $1 and e.disabled_at is null and a.id = e.account_id returning a.email, e.url`,
        [endpointId, at],
      );
      if (rows.length === 0) return undefined;
      await tx.query('update webhook_deliveries set next_attempt_at = null where endpoint_id = $1 and delivered_at is null', [endpointId]);
      return rows[0];
    });
  }

  /** The enabled endpoints subscribed to address events whose regeneration events are behind `snapshotId`. */
  async behind(snapshotId: number, events: readonly string[]): Promise<EndpointRow[]> {
    const { rows } = await this.pool.query<EndpointRow>(
      `select ${ENDPOINT} from webhook_endpoints e
        where e.disabled_at is null and e.events && $2::text[] and (e.last_snapshot_id is null or e.last_snapshot_id < $1)`,
      [snapshotId, events],
    );
    return rows;
  }

  /**
   * Moves an endpoint's regeneration events from `from` to `to` in one transaction: `make`
   * stores the deliveries, and only the process that moves the cursor stores them (a
   * concurrent one finds it moved, or locked, and does nothing).
   */
  async advance(endpointId: string, from: number | null, to: number, make: (tx: Connection) => Promise<void>): Promise<boolean> {
    return transaction(this.pool, async (tx) => {
      const { rows } = await tx.query(
        'select 1 from webhook_endpoints where id = $1 and last_snapshot_id is not distinct from $2 for update skip locked',
        [endpointId, from],
      );
      if (rows.length === 0) return false;
      await make(tx);
      await tx.query('update webhook_endpoints set last_snapshot_id = $2 where id = $1', [endpointId, to]);
      return true;
    });
  }

  /**
   * The addresses whose listing changed from snapshot `from` to `to` under an endpoint's filter
   * (score at least `confidence`, any of `categories` when given): listed (score only in `to`),
   * delisted (score only in `from`) and rescored. Reads the blacklist's versioned entries.
   */
  async changes(db: Queryable, from: number, to: number, confidence: number, categories: number[], limit: number): Promise<AddressChange[]> {
    // The addresses whose version changed in between: closed (delisted, or replaced by a new
    // version) or opened (listed, or the new version). Work with the change, not the list.
    const alive = (n: string) =>
      `select e.ip, e.score from touched t join blacklist_entries e on e.ip = t.ip
        where e.from_snapshot <= ${n} and (e.until_snapshot is null or e.until_snapshot > ${n})
          and e.score >= $3 and (cardinality($4::smallint[]) = 0 or e.categories && $4::smallint[])`;
    // A few addresses against a table of millions: looked up by key, never hash-joined whole
    // (as in the incremental regeneration); `local` to the transaction that moves the cursor.
    await db.query('set local enable_hashjoin = off');
    await db.query('set local enable_mergejoin = off');
    const { rows } = await db.query<AddressChange>(
      `with touched as (
              select ip from blacklist_closures where until_snapshot > $1 and until_snapshot <= $2
        union select ip from blacklist_entries where from_snapshot > $1 and from_snapshot <= $2),
            a as (${alive('$1')}), b as (${alive('$2')})
       select coalesce(b.ip, a.ip) as ip, b.score::int as score, a.score::int as "previousScore"
         from a full join b on a.ip = b.ip
        where a.ip is null or b.ip is null or a.score <> b.score
        order by 1 limit $5`,
      [from, to, confidence, categories, limit],
    );
    return rows;
  }

  /**
   * Stores one delivery of `payload` for each enabled endpoint of the account subscribed to
   * `event`, each with its own id (`msg_` and a UUID without dashes, made by PostgreSQL), due
   * now. One statement, cheap when the account has none (the account index).
   */
  async enqueueForAccount(accountId: number, event: string, payload: unknown, at: Date): Promise<number> {
    const { rowCount } = await this.pool.query(
      `insert into webhook_deliveries (id, endpoint_id, event_type, payload, next_attempt_at, created_at)
       select 'msg_' || replace(gen_random_uuid()::text, '-', ''), e.id, $2, $3, $4, $4 from webhook_endpoints e
        where e.account_id = $1 and e.disabled_at is null and $2 = any(e.events)`,
      [accountId, event, JSON.stringify(payload), at],
    );
    return rowCount ?? 0;
  }

  /** Stores an endpoint's secret sealed anew, unless it changed since it was read (`from`). */
  async replaceSecret(id: string, from: string, to: string): Promise<void> {
    await this.pool.query('update webhook_endpoints set secret = $3 where id = $1 and secret = $2', [id, from, to]);
  }

  /** The accounts with an enabled endpoint subscribed to `event`. */
  async subscribedAccounts(event: string): Promise<Set<number>> {
    const { rows } = await this.pool.query<{ accountId: number }>(
      'select distinct account_id as "accountId" from webhook_endpoints where disabled_at is null and $1 = any(events)',
      [event],
    );
    return new Set(rows.map((r) => r.accountId));
  }

  /** Whether snapshot `id` is still kept (its entries can be compared). */
  async snapshotKept(db: Queryable, id: number): Promise<boolean> {
    const { rows } = await db.query('select 1 from blacklist_snapshots where id = $1', [id]);
    return rows.length > 0;
  }

  /** The newest snapshot's id. */
  async headSnapshot(): Promise<number | null> {
    const { rows } = await this.pool.query<{ id: number }>('select max(id)::int as id from blacklist_snapshots');
    return rows[0]?.id ?? null;
  }

  /** A delivery's outcome so far (tests, the test operation). */
  async delivery(id: string): Promise<{ attempts: number; lastStatus: number | null; lastError: string | null; deliveredAt: Date | null } | undefined> {
    const { rows } = await this.pool.query<{ attempts: number; lastStatus: number | null; lastError: string | null; deliveredAt: Date | null }>(
      'select attempts, last_status as "lastStatus", last_error as "lastError", delivered_at as "deliveredAt" from webhook_deliveries where id = $1',
      [id],
    );
    return rows[0];
  }

  /** Deletes deliveries created before `before` (the hourly purge). */
  async purge(db: Queryable, before: Date): Promise<number> {
    const { rowCount } = await db.query('delete from webhook_deliveries where created_at < $1', [before]);
    return rowCount ?? 0;
  }
}
