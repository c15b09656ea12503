import { sendData } from '../http/envelope.js';
import type { DataOf, Handlers } from '../http/types.js';
import { dailyLimit, permissionsOf } from './roles.js';
import type { UsageReader } from './usage.js';

export function keyHandlers(usage: UsageReader): Handlers {
  return {
    async verifyKey(_req, res) {
      const caller = res.locals.caller!;
      const today = await usage.today(caller);
      const data: DataOf<'verifyKey'> = {
        valid: true,
        role: caller.role,
        permissions: permissionsOf(caller.role),
        rateLimits: {
          checksPerDay: dailyLimit(caller.role, caller.licences, 'check'),
          reportsPerDay: dailyLimit(caller.role, caller.licences, 'report'),
        },
        usage: { checksToday: today.check, reportsToday: today.report },
      };
      sendData(res, data);
    },
  };
}
