import { sendData } from '../http/envelope.js';
import { sourceIp } from '../http/metering.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { DelistService } from './service.js';

/** POST /delist-requests and GET /delist-requests/{id}: public, charged per call by the edge. */
export function delistingHandlers(delisting: DelistService): Handlers {
  return {
    async createDelistRequest(req, res) {
      const data = await delisting.request(req.body, sourceIp(req), { actor: 'api', ip: sourceIp(req) });
      sendData(res, data, 'The delisting request was received.', 202);
    },

    async getDelistRequest(req, res) {
      const data: DataOf<'getDelistRequest'> = await delisting.status(req.params.id, req.query.token, { actor: 'api', ip: sourceIp(req) });
      sendData(res, data);
    },
  };
}
