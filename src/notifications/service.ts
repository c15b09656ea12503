import type { components } from '../../generated/api.js';
import type { Clock } from '../clock.js';
import type { Queryable } from '../db/pool.js';
import { unprocessable } from '../errors.js';
import type { Caller } from '../keys/keys.js';
import { siteHost } from '../keys/sites.js';
import { MessageRuleError, parseMailbox, singleLine } from '../relay/message-rules.js';

/** The request and the stored configuration, as the contract has them. */
export type NotificationConfigInput = components['schemas']['NotificationConfigRequest'];
export type NotificationConfig = components['schemas']['NotificationConfig'];

const RECIPIENTS_MAX = 20;

function invalid(err: unknown): never {
  if (err instanceof MessageRuleError) {
    throw unprocessable(`Invalid request: ${err.message.replace(/\.$/, '')}.`, [{ location: 'body', name: err.field, message: err.message }]);
  }
  throw err;
}

function siteOf(url: string, location: 'body' | 'query'): string {
  const site = siteHost(url);
  if (site === undefined) {
    const message = 'site_url must be an absolute http or https URL';
    throw unprocessable(`Invalid request: ${message}.`, [{ location, name: 'site_url', message }]);
  }
  return site;
}

/**
 * Where notifications about a site should go, as the ReportedIP Hive plugin syncs it: kept per
 * key and site (host name), replaced on each save, read back by the operator or the client.
 */
export class NotificationConfigs {
  constructor(
    private readonly db: Queryable,
    private readonly clock: Clock,
  ) {}

  async save(caller: Caller, input: NotificationConfigInput): Promise<NotificationConfig> {
    const site = siteOf(input.site_url, 'body');
    let recipients: string[];
    let fromName: string;
    let fromEmail: string;
    try {
      singleLine('site_url', input.site_url, 2048);
      const list = input.recipients ?? [];
      if (list.length > RECIPIENTS_MAX) throw new MessageRuleError('recipients', `at most ${RECIPIENTS_MAX} recipients are taken`);
      recipients = [...new Set(list.map((r, i) => parseMailbox(`recipients[${i}]`, r, 320).address))];
      fromName = singleLine('from_name', (input.from_name ?? '').trim(), 100);
      fromEmail = input.from_email ? parseMailbox('from_email', input.from_email, 320).address : '';
    } catch (err) {
      invalid(err);
    }
    const now = this.clock.now();
    await this.db.query(
      `insert into notification_configs (key_id, site, site_url, recipients, from_name, from_email, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (key_id, site) do update set site_url = excluded.site_url, recipients = excluded.recipients,
         from_name = excluded.from_name, from_email = excluded.from_email, updated_at = excluded.updated_at`,
      [caller.keyId, site, input.site_url, recipients, fromName, fromEmail, now],
    );
    return { site_url: input.site_url, site, recipients, from_name: fromName, from_email: fromEmail, updatedAt: now.toISOString() };
  }

  /** The configuration of a site of the key, or undefined. */
  async get(caller: Caller, siteUrl: string): Promise<NotificationConfig | undefined> {
    const site = siteOf(siteUrl, 'query');
    const { rows } = await this.db.query<{ site_url: string; recipients: string[]; from_name: string; from_email: string; updated_at: Date }>(
      'select site_url, recipients, from_name, from_email, updated_at from notification_configs where key_id = $1 and site = $2',
      [caller.keyId, site],
    );
    const row = rows[0];
    if (!row) return undefined;
    return { site_url: row.site_url, site, recipients: row.recipients, from_name: row.from_name, from_email: row.from_email, updatedAt: row.updated_at.toISOString() };
  }
}
