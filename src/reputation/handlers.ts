import { sendData } from '../http/envelope.js';
import { sourceIp, type Metering } from '../http/metering.js';
import type { DataOf, Handlers } from '../http/types.js';
import { ASN_ADDRESSES_DEFAULT, NETWORK_ADDRESSES_MAX, type ReputationService } from './service.js';

/** `metering`: the edge's rate-limit headers, from the Usage each charged use case returns. */
export function reputationHandlers(reputation: ReputationService, metering: Metering): Handlers {
  return {
    async checkIpPublic(req, res) {
      const { data, usage } = await reputation.checkPublic(req.query.ip, req.query.verbose ?? false, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'checkIpPublic'>>(res, data);
    },

    async checkIp(req, res) {
      const { data, usage } = await reputation.check(req.query.ip, {
        verbose: req.query.verbose ?? false,
        includeReports: req.query.include_reports ?? false,
      }, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'checkIp'>>(res, data);
    },

    async checkBlock(req, res) {
      const { data, usage } = await reputation.checkBlock(req.query.network, req.query.limit ?? NETWORK_ADDRESSES_MAX, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'checkBlock'>>(res, data);
    },

    async checkAsn(req, res) {
      const { data, usage } = await reputation.checkAsn(req.query.asn, req.query.limit ?? ASN_ADDRESSES_DEFAULT, res.locals.payer!, req.query.maxAgeInDays);
      metering.answered(res, usage);
      sendData<DataOf<'checkAsn'>>(res, data);
    },

    async bulkCheckIps(req, res) {
      const { data, usage } = await reputation.bulkCheck(req.body.ips, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'bulkCheckIps'>>(res, data);
    },

    async reportIp(req, res) {
      const { data, usage } = await reputation.report(res.locals.caller!, sourceIp(req), req.body, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'reportIp'>>(res, data, 'The report was recorded.');
    },

    async bulkReportIps(req, res) {
      const { data, usage } = await reputation.bulkReport(res.locals.caller!, sourceIp(req), req.body.csv, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'bulkReportIps'>>(res, data, 'The bulk report was processed.');
    },

    async submitWhitelistFeedback(req, res) {
      const { data, usage } = await reputation.feedback(res.locals.caller!, req.body, res.locals.payer!);
      metering.answered(res, usage);
      sendData<DataOf<'submitWhitelistFeedback'>>(res, data, 'The feedback was recorded.');
    },

    async listReports(req, res) {
      const data: DataOf<'listReports'> = await reputation.history(
        req.params.ip,
        req.query.page ?? 1,
        req.query.per_page ?? 25,
      );
      sendData(res, data);
    },

    async listReportEvidence(req, res) {
      const data: DataOf<'listReportEvidence'> = await reputation.ownEvidence(
        res.locals.caller!,
        req.params.ip,
        req.query.page ?? 1,
        req.query.per_page ?? 10,
      );
      sendData(res, data);
    },

    async searchIpsPublic(req, res) {
      const data: DataOf<'searchIpsPublic'> = await reputation.search(req.query.q, req.query.limit ?? 20);
      sendData(res, data);
    },
  };
}
