import type { BlacklistService } from '../blacklist/service.js';
import { sendList } from '../http/lists.js';
import { sourceIp } from '../http/metering.js';
import type { Handlers, ResponseOf } from '../http/types.js';
import type { AbuseIpdbService } from './service.js';

/** AbuseIPDB's flags: present (`verbose`, `verbose=true`) is on; `false` and `0` are off. */
const flag = (value: string | undefined) => value !== undefined && !['false', 'False', '0'].includes(value);

export function abuseipdbHandlers(abuseipdb: AbuseIpdbService, blacklist: BlacklistService): Handlers {
  return {
    async abuseipdbCheck(req, res) {
      const body: ResponseOf<'abuseipdbCheck'> = await abuseipdb.check(req.query.ipAddress, req.query.maxAgeInDays ?? 30, flag(req.query.verbose), res.locals.meteredRead);
      res.json(body);
    },

    async abuseipdbReport(req, res) {
      const body: ResponseOf<'abuseipdbReport'> = await abuseipdb.report(res.locals.caller!, sourceIp(req), req.body, res.locals.charge!);
      res.json(body);
    },

    async abuseipdbBlacklist(req, res) {
      const plaintext = flag(req.query.plaintext) || /^text\/plain\b/i.test(req.headers.accept ?? '');
      await sendList(res, await blacklist.list(abuseipdb.listParams(req.query, plaintext), 'abuseipdb', res.locals.meteredRead), req.headers['if-none-match']);
    },

    async abuseipdbBulkReport(req, res) {
      const file = (req.files as { fieldname: string; buffer: Buffer }[] | undefined)?.find((f) => f.fieldname === 'csv');
      const body: ResponseOf<'abuseipdbBulkReport'> = await abuseipdb.bulkReport(res.locals.caller!, sourceIp(req), file?.buffer.toString('utf8') ?? '', res.locals.charge!);
      res.json(body);
    },

    async abuseipdbCheckBlock(req, res) {
      const body: ResponseOf<'abuseipdbCheckBlock'> = await abuseipdb.checkBlock(req.query.network, req.query.maxAgeInDays ?? 30, res.locals.charge!);
      res.json(body);
    },

    async abuseipdbClearAddress(req, res) {
      const body: ResponseOf<'abuseipdbClearAddress'> = await abuseipdb.clearAddress(res.locals.caller!, req.query.ipAddress);
      res.json(body);
    },
  };
}
