import { sendData } from '../http/envelope.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { Clock } from '../clock.js';
import { dailyLimit, hasFeature, permissionsOf } from '../roles.js';
import { shownKeyName } from './service.js';
import type { KeySites } from './sites.repository.js';
import { nextUtcMidnight } from '../clock.js';
import type { UsageReader } from './usage.repository.js';

/** What is left of a daily limit; -1 stays unlimited. */
const remaining = (limit: number, used: number) => (limit < 0 ? -1 : Math.max(0, limit - used));

export function keyHandlers(usage: UsageReader, sites: KeySites, clock: Clock): Handlers {
  return {
    async verifyKey(_req, res) {
      const caller = res.locals.caller!;
      const [today, domains] = await Promise.all([usage.today(caller), sites.today(caller)]);
      const checksPerDay = dailyLimit(caller.role, caller.licences, 'check');
      const reportsPerDay = dailyLimit(caller.role, caller.licences, 'report');
      const data: DataOf<'verifyKey'> = {
        valid: true,
        role: caller.role,
        permissions: permissionsOf(caller.role),
        rateLimits: { checksPerDay, reportsPerDay },
        usage: { checksToday: today.check, reportsToday: today.report },
        // The same facts in the form the ReportedIP clients read them.
        // A name given before `<`, `>` and unprintable characters were refused loses them here.
        keyName: shownKeyName(caller.keyName),
        userRole: `reportedip_${caller.role}`,
        isHoneypotKey: caller.role === 'honeypot',
        limits: {
          dailyApiLimit: checksPerDay,
          remainingApiCalls: remaining(checksPerDay, today.check),
          dailyReportLimit: reportsPerDay,
          remainingReports: remaining(reportsPerDay, today.report),
          dailyReportUsage: today.report,
          resetTime: nextUtcMidnight(clock.now()).toISOString(),
        },
        domains: {
          used: domains.used,
          limit: domains.limit,
          // Reaching the limit is fine; only a site refused for it puts the key over.
          status: domains.limit >= 0 && domains.used > domains.limit ? 'over_limit' : 'ok',
        },
        features: {
          canCheck: hasFeature(caller.role, 'check'),
          canReport: hasFeature(caller.role, 'report'),
          canBulkCheck: hasFeature(caller.role, 'bulk_check'),
          hasWhiteLabel: hasFeature(caller.role, 'white_label'),
        },
      };
      sendData(res, data);
    },
  };
}
