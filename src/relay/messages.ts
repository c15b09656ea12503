import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import type { Channel } from './policy.js';

/** One relay message as the operator sees it: its lifecycle, never its content. */
export interface RelayMessageView {
  id: number;
  account_id: number;
  channel: Channel;
  status: 'queued' | 'sending' | 'sent' | 'delivered' | 'undelivered' | 'failed';
  recipient: string;
  site: string;
  funded_by: 'inclusive' | 'bundle';
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

const VIEW = `id, account_id, channel, status, recipient, site, funded_by, attempts, provider, provider_id,
              last_error, receipt_error, created_at, sending_at, sent_at, receipt_at, finished_at`;

/** Reads of the relay's messages: the operator's views and the queue's backlog for /metrics. */
export class RelayMessages {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
  ) {}

  /** An account's messages, newest first. */
  async list(accountId: number, limit = 50): Promise<RelayMessageView[]> {
    const { rows } = await this.db.query<RelayMessageView>(
      `select ${VIEW} from relay_messages where account_id = $1 order by created_at desc, id desc limit $2`,
      [accountId, limit],
    );
    return rows;
  }

  async get(id: number): Promise<RelayMessageView | undefined> {
    const { rows } = await this.db.query<RelayMessageView>(`select ${VIEW} from relay_messages where id = $1`, [id]);
    return rows[0];
  }

  /** Messages waiting or being handed on, per channel, and the age of the oldest. */
  async backlog(): Promise<RelayBacklog> {
    const { rows } = await this.db.query<{ channel: Channel; depth: number; oldest: Date }>(
      `select channel, count(*)::int as depth, min(created_at) as oldest
         from relay_messages where status in ('queued', 'sending') group by channel`,
    );
    const now = this.clock.now().getTime();
    const backlog: RelayBacklog = { mail: { depth: 0, oldestSeconds: 0 }, sms: { depth: 0, oldestSeconds: 0 } };
    for (const row of rows) {
      backlog[row.channel] = { depth: row.depth, oldestSeconds: Math.max(0, (now - new Date(row.oldest).getTime()) / 1000) };
    }
    return backlog;
  }
}
