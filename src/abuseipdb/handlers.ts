import type { BlacklistService } from '../blacklist/service.js';
import { sendList } from '../http/lists.js';
import { sourceIp, type Metering } from '../http/metering.js';
import type { Handlers, ResponseOf } from '../http/types.js';
import type { AbuseIpdbService } from './service.js';

/** AbuseIPDB's flags: present (`verbose`, `verbose=true`) is on; `false` and `0` are off. */
const flag = (value: string | undefined) => value !== undefined && !['false', 'False', '0'].includes(value);

export function abuseipdbHandlers(abuseipdb: AbuseIpdbService, blacklist: BlacklistService, metering: Metering): Handlers {
  return {
    async abuseipdbCheck(req, res) {
      const { data: body, usage } = await abuseipdb.check(req.query.ipAddress, req.query.maxAgeInDays ?? 30, flag(req.query.verbose), res.locals.payer!);
      metering.answered(res, usage);
      res.json(body satisfies ResponseOf<'abuseipdbCheck'>);
    },

    async abuseipdbReport(req, res) {
      const { data: body, usage } = await abuseipdb.report(res.locals.caller!, sourceIp(req), req.body, res.locals.payer!);
      metering.answered(res, usage);
      res.json(body satisfies ResponseOf<'abuseipdbReport'>);
    },

    async abuseipdbBlacklist(req, res) {
      const plaintext = flag(req.query.plaintext) || /^text\/plain\b/i.test(req.headers.accept ?? '');
      const answer = await blacklist.list(abuseipdb.listParams(req.query, plaintext), 'abuseipdb', res.locals.payer);
      if (answer.usage) metering.answered(res, answer.usage);
      await sendList(res, answer, req.headers['if-none-match']);
    },

    async abuseipdbBulkReport(req, res) {
      const file = (req.files as { fieldname: string; buffer: Buffer }[] | undefined)?.find((f) => f.fieldname === 'csv');
      const { data: body, usage } = await abuseipdb.bulkReport(res.locals.caller!, sourceIp(req), file?.buffer.toString('utf8') ?? '', res.locals.payer!);
      metering.answered(res, usage);
      res.json(body satisfies ResponseOf<'abuseipdbBulkReport'>);
    },

    async abuseipdbCheckBlock(req, res) {
      const { data: body, usage } = await abuseipdb.checkBlock(req.query.network, req.query.maxAgeInDays ?? 30, res.locals.payer!);
      metering.answered(res, usage);
      res.json(body satisfies ResponseOf<'abuseipdbCheckBlock'>);
    },

    async abuseipdbClearAddress(req, res) {
      const body: ResponseOf<'abuseipdbClearAddress'> = await abuseipdb.clearAddress(res.locals.caller!, req.query.ipAddress);
      res.json(body);
    },
  };
}
