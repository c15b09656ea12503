import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import { ifNoneMatchHas } from './etag.js';

/** A list to send (the blacklist in any of its forms): its ETag, and its body once asked for. */
export interface SentList {
  etag: string;
  open(): Promise<{ contentType: string; body: Buffer | AsyncGenerator<string> }>;
}

/**
 * Sends a list: its ETag, 304 when If-None-Match names it, else the body as it is read. A
 * `deprecated` form names its successor (Deprecation, Sunset and Link headers).
 */
export async function sendList(res: Response, list: SentList, ifNoneMatch: string | undefined, deprecated?: { since: Date; sunset: Date; successor: string }) {
  res.setHeader('ETag', list.etag);
  res.setHeader('Cache-Control', 'private, no-cache');
  if (deprecated) {
    res.setHeader('Deprecation', `@${deprecated.since.getTime() / 1000}`);
    res.setHeader('Sunset', deprecated.sunset.toUTCString());
    res.setHeader('Link', `<${deprecated.successor}>; rel="successor-version"`);
  }
  if (ifNoneMatchHas(ifNoneMatch, list.etag)) {
    res.status(304).end();
    return;
  }
  const { contentType, body } = await list.open();
  res.status(200).setHeader('Content-Type', contentType);
  // A kept list goes out as it is, encoded once; one being read streams.
  if (Buffer.isBuffer(body)) res.end(body);
  else await pipeline(Readable.from(body), res);
}
