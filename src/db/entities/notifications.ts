import { EntitySchema, PrimaryKeyProp } from '@mikro-orm/core';
import type { ApiKey } from '../entities.js';

/** Where the notifications of a key's site go (table `notification_configs`). */
export interface SiteNotificationConfig {
  [PrimaryKeyProp]?: ['key', 'site'];
  key: ApiKey;
  site: string;
  siteUrl: string;
  recipients: string[];
  fromName: string;
  fromEmail: string;
  updatedAt: Date;
}

export const SiteNotificationConfigEntity = new EntitySchema<SiteNotificationConfig>({
  name: 'SiteNotificationConfig',
  tableName: 'notification_configs',
  properties: {
    key: { kind: 'm:1', entity: 'ApiKey', fieldName: 'key_id', primary: true, deleteRule: 'cascade', updateRule: 'no action' },
    site: { type: 'text', primary: true },
    siteUrl: { type: 'text', fieldName: 'site_url' },
    recipients: { type: 'string[]', columnType: 'text[]' },
    fromName: { type: 'text', fieldName: 'from_name' },
    fromEmail: { type: 'text', fieldName: 'from_email' },
    updatedAt: { type: 'Date', fieldName: 'updated_at' },
  },
});

export const notificationsEntities = [SiteNotificationConfigEntity];
