import { sendData } from '../http/envelope.js';
import { ApiError } from '../http/errors.js';
import { siteHost } from '../keys/sites.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { NotificationConfigs } from './service.js';

export function notificationHandlers(configs: NotificationConfigs): Handlers {
  return {
    async saveNotificationConfig(req, res) {
      const data: DataOf<'saveNotificationConfig'> = await configs.save(res.locals.caller!, req.body);
      sendData(res, data, 'The notification configuration was stored.');
    },
    async getNotificationConfig(req, res) {
      const found = await configs.get(res.locals.caller!, req.query.site_url);
      if (!found) throw new ApiError(404, `No notification configuration is stored for ${siteHost(req.query.site_url)} with this key.`);
      const data: DataOf<'getNotificationConfig'> = found;
      sendData(res, data);
    },
  };
}
