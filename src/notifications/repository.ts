import { transaction, type Pool } from '../db/pool.js';

export interface StoredNotificationConfig {
  site_url: string;
  recipients: string[];
  from_name: string;
  from_email: string;
  updated_at: Date;
}

/** The notification settings per key and site (notification_configs). */
export class NotificationConfigRepository {
  constructor(private readonly pool: Pool) {}

  /**
   * Replaces the key's settings of a site. A site the key has no settings for yet is stored only
   * while the key holds fewer than `max` sites: false when it was refused for that. Exact across
   * processes (an advisory lock per key, held for the statement's transaction).
   */
  async save(keyId: string, site: string, config: Omit<StoredNotificationConfig, 'updated_at'>, at: Date, max: number): Promise<boolean> {
    return transaction(this.pool, async (client) => {
      await client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [`notification-configs:${keyId}`]);
      const { rowCount } = await client.query(
        `insert into notification_configs (key_id, site, site_url, recipients, from_name, from_email, updated_at)
         select $1, $2, $3, $4, $5, $6, $7
          where exists (select 1 from notification_configs where key_id = $1 and site = $2)
             or (select count(*) from notification_configs where key_id = $1) < $8
         on conflict (key_id, site) do update set site_url = excluded.site_url, recipients = excluded.recipients,
           from_name = excluded.from_name, from_email = excluded.from_email, updated_at = excluded.updated_at`,
        [keyId, site, config.site_url, config.recipients, config.from_name, config.from_email, at, max],
      );
      return rowCount === 1;
    });
  }

  async get(keyId: string, site: string): Promise<StoredNotificationConfig | undefined> {
    const { rows } = await this.pool.query<StoredNotificationConfig>(
      'select site_url, recipients, from_name, from_email, updated_at from notification_configs where key_id = $1 and site = $2',
      [keyId, site],
    );
    return rows[0];
  }
}
