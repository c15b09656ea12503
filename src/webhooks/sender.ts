import { lookup as dnsLookup } from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { parseAddress, type Network } from '../address.js';
import { ANSWER_READ_BYTES, ATTEMPT_TIMEOUT_MS, inRanges, refusedAddress } from './rules.js';

/** Where a URL may be sent to: the address it was checked at, or why it may not. */
export type Resolved = { ok: true; address: string; family: 4 | 6 } | { ok: false; reason: string };

/** The outcome of one attempt. */
export interface Attempt {
  delivered: boolean;
  status: number | null;
  error: string | null;
}

/**
 * Resolves a webhook URL's host (every address it has) and refuses it unless every one is
 * public or inside WEBHOOK_ALLOW_RANGES; plain http only into those ranges. The address
 * returned is the one connected to: DNS is not asked again for the connection, so a record
 * that changes after the check (DNS rebinding) cannot swap it.
 */
export async function resolveTarget(url: URL, ranges: Network[], lookup = dnsLookup): Promise<Resolved> {
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, reason: 'must be an https URL' };
  if (url.username || url.password) return { ok: false, reason: 'must not carry credentials' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  let addresses: { address: string; family: number }[];
  if (parseAddress(host)) addresses = [{ address: host, family: host.includes(':') ? 6 : 4 }];
  else {
    try {
      addresses = await lookup(host, { all: true, verbatim: true });
    } catch {
      return { ok: false, reason: `host ${host} could not be resolved` };
    }
  }
  if (addresses.length === 0) return { ok: false, reason: `host ${host} has no address` };
  for (const { address } of addresses) {
    const refused = refusedAddress(address, ranges);
    if (refused) return { ok: false, reason: `resolves to ${address}, ${refused}` };
  }
  const first = addresses[0]!;
  if (url.protocol === 'http:' && !addresses.every((a) => inRanges(a.address, ranges))) {
    return { ok: false, reason: 'must be an https URL (plain http only to hosts in WEBHOOK_ALLOW_RANGES)' };
  }
  return { ok: true, address: parseAddress(first.address)!.text, family: first.family === 6 ? 6 : 4 };
}

/**
 * POSTs `body` to `url` connected to `target` (pinned: the socket's lookup answers only the
 * checked address), never following a redirect (a 3xx is a failure), within `timeoutMs` (10
 * seconds) from the request to the answer's end, reading at most a few KB of the answer.
 */
export function post(
  url: URL,
  target: { address: string; family: 4 | 6 },
  headers: Record<string, string>,
  body: string,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
): Promise<Attempt> {
  const pinned: LookupFunction = (_hostname, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<Attempt>((resolve) => {
    let settled = false;
    const done = (attempt: Attempt) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(attempt);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        agent: false,
        lookup: pinned,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'TRS-Webhooks/1' },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > ANSWER_READ_BYTES) res.destroy();
        });
        const finish = () => {
          if (status >= 200 && status < 300) done({ delivered: true, status, error: null });
          else if (status >= 300 && status < 400) done({ delivered: false, status, error: `redirect (${status}) not followed` });
          else done({ delivered: false, status, error: `answered ${status}` });
        };
        res.on('end', finish);
        res.on('close', finish);
        res.on('error', finish);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      done({ delivered: false, status: null, error: `no answer within ${timeoutMs / 1000} s` });
    }, timeoutMs);
    req.on('error', (err) => done({ delivered: false, status: null, error: err.message.slice(0, 200) }));
    req.end(body);
  });
}
