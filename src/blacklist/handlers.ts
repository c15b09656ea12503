import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { sendData } from '../http/envelope.js';
import { ifNoneMatchHas } from '../http/etag.js';
import type { Metering } from '../http/metering.js';
import type { DataOf, Handlers } from '../http/types.js';
import type { BlacklistService, ListParams, ListVariant } from './service.js';
import type { BlacklistSnapshots } from './snapshots.js';
import { API_BASE } from '../openapi.js';

/** The deprecated forms: deprecated since 2025-01-01, to be removed after 2027-12-31. */
const DEPRECATION = `@${Date.UTC(2025, 0, 1) / 1000}`;
const SUNSET = new Date(Date.UTC(2027, 11, 31, 23, 59, 59)).toUTCString();

/** Sends a list: its ETag, 304 when If-None-Match names it, else the body as it is read. */
export async function sendBlacklist(res: Response, list: BlacklistService, metering: Metering, params: ListParams, variant: ListVariant, ifNoneMatch?: string) {
  const answer = await list.list(params, variant, res.locals.payer);
  if (answer.usage) metering.answered(res, answer.usage);
  res.setHeader('ETag', answer.etag);
  res.setHeader('Cache-Control', 'private, no-cache');
  if (variant !== 'standard' && variant !== 'abuseipdb') {
    res.setHeader('Deprecation', DEPRECATION);
    res.setHeader('Sunset', SUNSET);
    res.setHeader('Link', `<${API_BASE}/blacklist${variant === 'git' ? '?format=txt' : ''}>; rel="successor-version"`);
  }
  if (ifNoneMatchHas(ifNoneMatch, answer.etag)) {
    res.status(304).end();
    return;
  }
  const { contentType, body } = await answer.open();
  res.status(200).setHeader('Content-Type', contentType);
  // A kept list goes out as it is, encoded once; one being read streams.
  if (Buffer.isBuffer(body)) res.end(body);
  else await pipeline(Readable.from(body), res);
}

export function blacklistHandlers(list: BlacklistService, snapshots: BlacklistSnapshots, metering: Metering): Handlers {
  return {
    getBlacklist: (req, res) => sendBlacklist(res, list, metering, req.query, 'standard', req.headers['if-none-match']),
    getBlacklistDetailed: (req, res) => sendBlacklist(res, list, metering, req.query, 'detailed', req.headers['if-none-match']),
    getBlacklistCombined: (req, res) => sendBlacklist(res, list, metering, req.query, 'combined', req.headers['if-none-match']),
    exportBlacklistGit: (req, res) => sendBlacklist(res, list, metering, req.query as ListParams, 'git', req.headers['if-none-match']),

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
