import { sendData } from '../http/envelope.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { StatsService } from './service.js';

export function statsHandlers(stats: StatsService): Handlers {
  return {
    async getPublicStats(_req, res) {
      const data: DataOf<'getPublicStats'> = await stats.publicStats();
      sendData(res, data);
    },
    async getStatistics(_req, res) {
      const data: DataOf<'getStatistics'> = await stats.statistics();
      sendData(res, data);
    },
    async getTrends(req, res) {
      const data: DataOf<'getTrends'> = await stats.trends(req.query.period ?? '7d', req.query.category);
      sendData(res, data);
    },
    async getAttackMapData(_req, res) {
      const data: DataOf<'getAttackMapData'> = await stats.attackMapData();
      sendData(res, data);
    },
  };
}
