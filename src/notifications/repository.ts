import type { Queryable } from '../db/pool.js';

export interface StoredNotificationConfig {
  site_url: string;
  recipients: string[];
  from_name: string;
  from_email: string;
  updated_at: Date;
}

/** The notification settings per key and site (notification_configs). */
export class NotificationConfigRepository {
  constructor(private readonly db: Queryable) {}

  /** Replaces the key's settings of a site. */
  async save(keyId: string, site: string, config: Omit<StoredNotificationConfig, 'updated_at'>, at: Date): Promise<void> {
    await this.db.query(
      `insert into notification_configs (key_id, site, site_url, recipients, from_name, from_email, updated_at)
       values ($1, $2, $3, $4, $5, $6, $7)
       on conflict (key_id, site) do update set site_url = excluded.site_url, recipients = excluded.recipients,
         from_name = excluded.from_name, from_email = excluded.from_email, updated_at = excluded.updated_at`,
      [keyId, site, config.site_url, config.recipients, config.from_name, config.from_email, at],
    );
  }

  async get(keyId: string, site: string): Promise<StoredNotificationConfig | undefined> {
    const { rows } = await this.db.query<StoredNotificationConfig>(
      'select site_url, recipients, from_name, from_email, updated_at from notification_configs where key_id = $1 and site = $2',
      [keyId, site],
    );
    return rows[0];
  }
}
