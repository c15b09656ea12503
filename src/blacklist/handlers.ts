import type { Response } from 'express';
import { sendData } from '../http/envelope.js';
import { sendList } from '../http/lists.js';
import type { Metering } from '../http/metering.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { BlacklistService, ListAnswer, ListParams, ListVariant } from './service.js';
import type { BlacklistSnapshots } from './repository.js';
import { API_BASE } from '../openapi.js';

/** The deprecated forms: deprecated since 2025-01-01, to be removed after 2027-12-31. */
const DEPRECATED = { since: new Date(Date.UTC(2025, 0, 1)), sunset: new Date(Date.UTC(2027, 11, 31, 23, 59, 59)) };

/** Sends a list of `variant`, the deprecated forms naming their successor; its usage headers first. */
async function sendBlacklist(res: Response, list: BlacklistService, metering: Metering, params: ListParams, variant: ListVariant, ifNoneMatch?: string) {
  const answer = await list.list(params, variant, res.locals.payer);
  if (answer.usage) metering.answered(res, answer.usage);
  const deprecated = variant !== 'standard' && variant !== 'abuseipdb';
  await sendList(res, answer, ifNoneMatch, deprecated ? { ...DEPRECATED, successor: `${API_BASE}/blacklist${variant === 'git' ? '?format=txt' : ''}` } : undefined);
}

/** Sends a feed (blacklist/feeds.ts): its usage headers, then the list. */
async function sendFeed(res: Response, metering: Metering, answer: Promise<ListAnswer>, ifNoneMatch?: string) {
  const sent = await answer;
  if (sent.usage) metering.answered(res, sent.usage);
  await sendList(res, sent, ifNoneMatch);
}

export function blacklistHandlers(list: BlacklistService, snapshots: BlacklistSnapshots, metering: Metering): Handlers {
  return {
    getBlacklist: (req, res) => sendBlacklist(res, list, metering, req.query, 'standard', req.headers['if-none-match']),
    getBlacklistDetailed: (req, res) => sendBlacklist(res, list, metering, req.query, 'detailed', req.headers['if-none-match']),
    getBlacklistCombined: (req, res) => sendBlacklist(res, list, metering, req.query, 'combined', req.headers['if-none-match']),
    exportBlacklistGit: (req, res) => sendBlacklist(res, list, metering, req.query as ListParams, 'git', req.headers['if-none-match']),

    getStixFeed: (req, res) => sendFeed(res, metering, list.stix(req.query, res.locals.payer), req.headers['if-none-match']),
    getMispManifest: (req, res) => sendFeed(res, metering, list.mispManifest(res.locals.payer), req.headers['if-none-match']),
    getMispEvent: (req, res) => sendFeed(res, metering, list.mispEvent(req.params.event, res.locals.payer), req.headers['if-none-match']),

    async listBlacklistCategories(_req, res) {
      const data: DataOf<'listBlacklistCategories'> = await list.thematicCategories();
      sendData(res, data);
    },

    async getBlacklistStats(_req, res) {
      const data: DataOf<'getBlacklistStats'> = await snapshots.stats();
      sendData(res, data);
    },
  };
}
