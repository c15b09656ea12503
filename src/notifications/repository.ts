import type { EntityManager } from '@mikro-orm/postgresql';
import { SiteNotificationConfigEntity, type SiteNotificationConfig } from '../db/entities/notifications.js';

/** What is stored of a site's notification settings. */
export type StoredNotificationConfig = Pick<SiteNotificationConfig, 'siteUrl' | 'recipients' | 'fromName' | 'fromEmail' | 'updatedAt'>;

/** The notification settings per key and site (notification_configs), over their entity. */
export class NotificationConfigRepository {
  constructor(private readonly em: EntityManager) {}

  /**
   * Replaces the key's settings of a site. A site the key has no settings for yet is stored only
   * while the key holds fewer than `max` sites: false when it was refused for that. Exact across
   * processes (an advisory lock per key, held for the unit of work's transaction).
   */
  async save(keyId: string, site: string, config: StoredNotificationConfig, max: number): Promise<boolean> {
    return this.em.fork().transactional(async (tx) => {
      await tx.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`notification-configs:${keyId}`]);
      const stored = await tx.count(SiteNotificationConfigEntity, { key: keyId, site });
      if (!stored && (await tx.count(SiteNotificationConfigEntity, { key: keyId })) >= max) return false;
      await tx.upsert(SiteNotificationConfigEntity, { key: keyId, site, ...config });
      return true;
    });
  }

  async get(keyId: string, site: string): Promise<StoredNotificationConfig | null> {
    return this.em.fork().findOne(SiteNotificationConfigEntity, { key: keyId, site }, { fields: ['siteUrl', 'recipients', 'fromName', 'fromEmail', 'updatedAt'] });
  }
}
