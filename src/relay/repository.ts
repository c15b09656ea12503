import { createHash } from 'node:crypto';
import { transaction, type Pool, type Queryable } from '../db/pool.js';
import type { RelayMessage } from '../db/entities/relay.js';
import type { Channel } from './policy.js';
import { bundleBalance } from './ledger.repository.js';
import type { SmsReceipt } from './delivery/sms/receipts.js';

export type MessageStatus = 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed';
export type FundedBy = 'inclusive' | 'bundle';

/** A message as a worker takes it for one attempt: the entity's properties (its account by id). */
export type ClaimedMessage = Pick<RelayMessage, 'id' | 'channel' | 'periodStart' | 'fundedBy' | 'recipient' | 'createdAt'> & { accountId: number; payload: unknown };

/** One relay message as the operator sees it: its lifecycle, never its content. */
export interface RelayMessageView {
  id: number;
  account_id: number;
  channel: Channel;
  status: MessageStatus;
  recipient: string;
  site: string;
  funded_by: FundedBy;
  attempts: number;
  provider: string | null;
  provider_id: string | null;
  last_error: string | null;
  receipt_error: string | null;
  created_at: Date;
  sending_at: Date | null;
  sent_at: Date | null;
  receipt_at: Date | null;
  finished_at: Date | null;
}

export type RelayBacklog = Record<Channel, { depth: number; oldestSeconds: number }>;

/** A send to store: the message and what it is charged to. */
export interface AcceptedSend {
  accountId: number;
  keyId: string;
  channel: Channel;
  periodStart: Date;
  recipient: string;
  site: { url: string; host: string };
  payload: unknown;
  at: Date;
  /** The account's site counter of the day and its cap. */
  siteCounter: { subject: string; day: string; cap: number };
  /** The tier's inclusive messages per period, and whether bundles pay for more. */
  inclusiveLimit: number;
  bundleEligible: boolean;
}

/** The refusals the accepting transaction can meet, for the service to word. */
export type Refusal = 'site_cap' | 'monthly_cap' | 'bundle_empty';

const VIEW = `id, account_id, channel, status, recipient, site, funded_by, attempts, provider, provider_id,
              last_error, receipt_error, created_at, sending_at, sent_at, receipt_at, finished_at`;

/** A 64-bit advisory lock key for a text. */
const lockKey = (text: string) => createHash('sha256').update(text).digest().readBigInt64BE(0).toString();

/**
 * The relay's messages and their charges: every statement on relay_messages and relay_usage
 * (the bundle ledger is ledger.repository.ts's). The accepting transaction is one method, so that the
 * order of its locks and statements, which decides how many sends of one site go through at
 * once, is written in one place.
 */
export class RelayRepository {
  constructor(private readonly pool: Pool) {}

  /** The account's white-label sender name (set on the dashboard), if any. */
  async senderName(accountId: number): Promise<string | null> {
    const { rows } = await this.pool.query<{ sender_name: string | null }>({
      name: 'relay-sender-name',
      text: 'select sender_name from accounts where id = $1',
      values: [accountId],
    });
    return rows[0]?.sender_name ?? null;
  }

  /** An account's messages of a channel in a period, by state, and the inclusive slots used. */
  async periodCounts(accountId: number, channel: Channel, periodStart: Date, db: Queryable = this.pool) {
    const { rows } = await db.query<{ sent: number; queued: number; failed: number; used: number }>({
      name: 'relay-block',
      text: `select count(*) filter (where m.status in ('sent', 'delivered', 'undelivered'))::int as sent,
                    count(*) filter (where m.status in ('queued', 'sending'))::int as queued,
                    count(*) filter (where m.status = 'failed')::int as failed,
                    coalesce((select inclusive_used from relay_usage u
                               where u.account_id = $1 and u.channel = $2 and u.period_start = $3), 0) as used
               from relay_messages m
              where m.account_id = $1 and m.channel = $2 and m.period_start = $3`,
      values: [accountId, channel, periodStart],
    });
    return { ...rows[0]!, bundleBalance: await bundleBalance(db, accountId, channel) };
  }

  /**
   * Stores a send in one transaction and queues it (`enqueue`, inside the transaction), unless
   * a throttle (`throttle`, run under the recipient's lock with the recipient's last 24 hours),
   * the site's daily cap or an empty bundle balance refuses it; then nothing is changed.
   *
   * The order is what lets a login wave of one site through many sends at a time: first what
   * only this recipient waits for (its lock, its history), then the message's id and its job,
   * and last the one statement that takes the row locks every send of the account and site
   * waits for (the site's counter, the inclusive quota, the message), followed by the commit.
   */
  async accept(
    send: AcceptedSend,
    throttle: (history: RecipientHistory) => void,
    enqueue: (id: number, db: Queryable) => Promise<void>,
  ): Promise<{ id: number; fundedBy: FundedBy } | { refused: Refusal }> {
    const refused = Symbol('refused');
    let reason: Refusal | undefined;
    try {
      return await transaction(this.pool, async (client) => {
        await client.query('select pg_advisory_xact_lock($1::bigint)', [lockKey(`recipient:${send.recipient}`)]);
        throttle(await this.recipientHistory(client, send.recipient, send.accountId, send.at));
        const { rows: ids } = await client.query<{ id: number }>({
          name: 'relay-message-id',
          text: "select nextval(pg_get_serial_sequence('relay_messages', 'id'))::bigint as id",
        });
        const id = ids[0]!.id;
        await enqueue(id, client);
        const { rows } = await client.query<{ funded_by: FundedBy }>({
          name: 'relay-accept',
          text: `with site as (
                   select charge_counters(array[$11::text], 'relay_site', $12::date, 1, array[$13::int]) is not null as within
                 ),
                 slot as (
                   insert into relay_usage as u (account_id, channel, period_start, inclusive_used)
                   select $2, $4, $5, 1 where (select within from site)
                   on conflict (account_id, channel, period_start) do update set inclusive_used = u.inclusive_used + 1
                    where u.inclusive_used < $14
                   returning 1
                 )
                 insert into relay_messages (id, account_id, key_id, channel, period_start, funded_by, recipient, site_url, site, payload, created_at)
                 overriding system value
                 select $1, $2, $3, $4, $5, case when exists (select 1 from slot) then 'inclusive' else 'bundle' end, $6, $7, $8, $9, $10
                  where (select within from site)
                 returning funded_by`,
          values: [
            id,
            send.accountId,
            send.keyId,
            send.channel,
            send.periodStart,
            send.recipient,
            send.site.url,
            send.site.host,
            JSON.stringify(send.payload),
            send.at,
            send.siteCounter.subject,
            send.siteCounter.day,
            send.siteCounter.cap,
            send.inclusiveLimit,
          ],
        });
        if (!rows[0]) {
          reason = 'site_cap';
          throw refused;
        }
        const fundedBy = rows[0].funded_by;
        if (fundedBy === 'bundle') {
          if (!send.bundleEligible) {
            reason = 'monthly_cap';
            throw refused;
          }
          // The balance is a sum: one consumption at a time per account and channel.
          await client.query('select pg_advisory_xact_lock($1::bigint)', [lockKey(`charge:${send.accountId}:${send.channel}`)]);
          if ((await bundleBalance(client, send.accountId, send.channel)) <= 0) {
            reason = 'bundle_empty';
            throw refused;
          }
          await client.query(
            `insert into bundle_ledger (account_id, channel, kind, amount, message_id, created_at)
             values ($1, $2, 'consumption', -1, $3, $4)`,
            [send.accountId, send.channel, id, send.at],
          );
        }
        return { id, fundedBy };
      });
    } catch (err) {
      if (err === refused && reason) return { refused: reason };
      throw err;
    }
  }

  /** What the throttles count: the recipient's messages of the last 24 hours. */
  private async recipientHistory(db: Queryable, recipient: string, accountId: number, now: Date): Promise<RecipientHistory> {
    const { rows } = await db.query<RecipientHistory>({
      name: 'relay-recipient-history',
      text: `select count(*) filter (where account_id = $2)::int as mine,
                    max(created_at) filter (where account_id = $2) as last,
                    count(*)::int as all,
                    min(created_at) as oldest
               from relay_messages where recipient = $1 and created_at > $3`,
      values: [recipient, accountId, new Date(now.getTime() - 86_400_000)],
    });
    return rows[0]!;
  }

  /**
   * Takes a message for one attempt: `queued` (or `sending`, left so by a process that stopped
   * in the middle) becomes `sending`. Undefined when it is sent, failed or gone.
   */
  async claim(id: number, at: Date): Promise<ClaimedMessage | undefined> {
    const { rows } = await this.pool.query<ClaimedMessage>({
      name: 'relay-claim',
      text: `update relay_messages set status = 'sending', sending_at = coalesce(sending_at, $2), attempts = attempts + 1
              where id = $1 and status in ('queued', 'sending')
              returning id, account_id as "accountId", channel, period_start as "periodStart", funded_by as "fundedBy", recipient, payload,
                        created_at as "createdAt"`,
      values: [id, at],
    });
    return rows[0];
  }

  /** The transport took the message. */
  async markSent(id: number, at: Date, provider: string, providerId: string | null): Promise<void> {
    await this.pool.query({
      name: 'relay-sent',
      text: `update relay_messages
                set status = 'sent', sent_at = $2, finished_at = $2, provider = $3, provider_id = $4, last_error = null
              where id = $1 and status = 'sending'`,
      values: [id, at, provider, providerId],
    });
  }

  /** An attempt failed and will be retried. */
  async requeue(id: number, error: string): Promise<void> {
    await this.pool.query({
      name: 'relay-requeue',
      text: `update relay_messages set status = 'queued', last_error = $2 where id = $1 and status = 'sending'`,
      values: [id, error.slice(0, 500)],
    });
  }

  /** Marks the message failed and gives its charge back, once. */
  async fail(message: ClaimedMessage, reason: string, at: Date): Promise<void> {
    await transaction(this.pool, async (client) => {
      const { rowCount } = await client.query(
        `update relay_messages set status = 'failed', last_error = $2, finished_at = $3
          where id = $1 and status in ('queued', 'sending')`,
        [message.id, reason.slice(0, 500), at],
      );
      if (rowCount !== 1) return;
      if (message.fundedBy === 'inclusive') {
        await client.query(
          `update relay_usage set inclusive_used = greatest(0, inclusive_used - 1)
            where account_id = $1 and channel = $2 and period_start = $3`,
          [message.accountId, message.channel, message.periodStart],
        );
      } else {
        await client.query(
          `insert into bundle_ledger (account_id, channel, kind, amount, message_id, created_at)
           values ($1, $2, 'release', 1, $3, $4)`,
          [message.accountId, message.channel, message.id, at],
        );
      }
    });
  }

  /**
   * Records what a provider's delivery receipt says of an SMS it took: `delivered` or
   * `undelivered` (with its error code). Receipts come out of order and more than once; an
   * intermediate one changes nothing, and a final status only replaces `sent` (or an
   * `undelivered` that a later `delivered` corrects). The number of messages it matched.
   */
  async recordReceipt(provider: string, receipt: SmsReceipt, at: Date): Promise<number> {
    if (receipt.status === 'sent') return 0;
    const { rowCount } = await this.pool.query(
      `update relay_messages set status = $3, receipt_at = $4, receipt_error = $5
        where provider = $1 and provider_id = $2 and channel = 'sms'
          and (status = 'sent' or (status = 'undelivered' and $3 = 'delivered'))`,
      [provider, receipt.providerId, receipt.status, at, receipt.error?.slice(0, 100) ?? null],
    );
    return rowCount ?? 0;
  }

  /**
   * Deletes the content of the messages that reached a final state (sent, delivered,
   * undelivered, failed) before `before`, keeping everything else (status, recipient, times,
   * funding, provider ids): nothing reads it after the last attempt. The number purged.
   */
  async purgePayloads(before: Date, db: Queryable = this.pool): Promise<number> {
    const { rowCount } = await db.query(
      `update relay_messages set payload = null
        where payload is not null and status in ('sent', 'delivered', 'undelivered', 'failed') and finished_at < $1`,
      [before],
    );
    return rowCount ?? 0;
  }

  /**
   * Deletes the messages that reached a final state before `before` (RELAY_MESSAGE_RETENTION_DAYS):
   * past the month whose allowance they count against and the day of the recipient throttles,
   * nothing reads them but the delivery log, which shows the latest.
   */
  async purgeMessages(before: Date, db: Queryable = this.pool): Promise<number> {
    const { rowCount } = await db.query(
      `delete from relay_messages where status in ('sent', 'delivered', 'undelivered', 'failed') and finished_at < $1`,
      [before],
    );
    return rowCount ?? 0;
  }

  /** An account's messages, newest first. */
  async list(accountId: number, limit = 50): Promise<RelayMessageView[]> {
    const { rows } = await this.pool.query<RelayMessageView>(
      `select ${VIEW} from relay_messages where account_id = $1 order by created_at desc, id desc limit $2`,
      [accountId, limit],
    );
    return rows;
  }

  async get(id: number): Promise<RelayMessageView | undefined> {
    const { rows } = await this.pool.query<RelayMessageView>(`select ${VIEW} from relay_messages where id = $1`, [id]);
    return rows[0];
  }

  /** Messages waiting or being handed on, per channel, and the age of the oldest at `now`. */
  async backlog(now: Date): Promise<RelayBacklog> {
    const { rows } = await this.pool.query<{ channel: Channel; depth: number; oldest: Date }>(
      `select channel, count(*)::int as depth, min(created_at) as oldest
         from relay_messages where status in ('queued', 'sending') group by channel`,
    );
    const backlog: RelayBacklog = { mail: { depth: 0, oldestSeconds: 0 }, sms: { depth: 0, oldestSeconds: 0 } };
    for (const row of rows) {
      backlog[row.channel] = { depth: row.depth, oldestSeconds: Math.max(0, (now.getTime() - new Date(row.oldest).getTime()) / 1000) };
    }
    return backlog;
  }
}

/** A recipient's messages of the last 24 hours: from this account, and from all accounts. */
export interface RecipientHistory {
  mine: number;
  last: Date | null;
  all: number;
  oldest: Date | null;
}
