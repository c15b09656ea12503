import type { Clock } from '../clock.js';
import type { Orm } from '../db/orm.js';
import type { KeySites } from '../keys/sites.repository.js';
import { notificationHandlers } from './handlers.js';
import { NotificationConfigRepository } from './repository.js';
import { NotificationConfigs } from './service.js';

/** The notification settings the Hive plugins keep on the server, per site. */
export function notificationsModule(deps: { orm: Orm; clock: Clock; sites: KeySites }) {
  const service = new NotificationConfigs(new NotificationConfigRepository(deps.orm.em), deps.sites, deps.clock);
  return { service, handlers: () => notificationHandlers(service) };
}
