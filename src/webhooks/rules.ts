import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { addressToBigInt, parseAddress, parseNetwork, nonPublicReason, type Network } from '../address.js';

/** The events an endpoint may subscribe to (the contract's WebhookEvent). */
export const WEBHOOK_EVENTS = ['address.listed', 'address.delisted', 'address.score_changed', 'report.received'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];
export const ADDRESS_EVENTS: readonly WebhookEvent[] = ['address.listed', 'address.delisted', 'address.score_changed'];

/** Subscriptions one account may hold. */
export const MAX_WEBHOOKS = 10;
/** Addresses in one delivery of regeneration events; more are split over several. */
export const BATCH_MAX = 1_000;
/** The default `confidence`, as GET /blacklist's. */
export const DEFAULT_CONFIDENCE = 75;
/** The waits before each retry (Standard Webhooks' schedule): the last comes about 27.6 hours after the first attempt. */
export const RETRY_DELAYS_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 10 * 3_600_000];
/** After failing this long, an endpoint is disabled and its owner mailed. */
export const DISABLE_AFTER_MS = 24 * 3_600_000;
/** Deliveries are kept this long (the hourly purge). */
/**
 * How long a process trusts its list of the accounts subscribed to `report.received` (a report
 * of any other account stores no event, and costs no statement): a subscription made in another
 * process applies to the reports this one stores from at most this long after.
 */
export const SUBSCRIBERS_FRESH_MS = 5_000;
export const DELIVERY_RETENTION_MS = 7 * 24 * 3_600_000;
/** One attempt's time limit, and how much of an answer is read. */
export const ATTEMPT_TIMEOUT_MS = 10_000;
export const ANSWER_READ_BYTES = 4_096;

/** A new signing secret: `whsec_` and the base64 of 24 random bytes. */
export function newSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** A new delivery id, the `webhook-id` of every attempt of it. */
export function newMessageId(): string {
  return `msg_${randomUUID().replace(/-/g, '')}`;
}

/** Standard Webhooks' signature: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` keyed with the secret's bytes. */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64')}`;
}

/** The wait before retry number `attempts` (after that many failed attempts), or undefined when none is left. */
export function retryDelay(attempts: number): number | undefined {
  return RETRY_DELAYS_MS[attempts - 1];
}

/** The operator's WEBHOOK_ALLOW_RANGES, parsed; a malformed one throws at start. */
export function allowRanges(ranges: string[]): Network[] {
  return ranges.map((range) => {
    const network = parseNetwork(range);
    if (!network) throw new Error(`WEBHOOK_ALLOW_RANGES: "${range}" is not a network in CIDR notation`);
    return network;
  });
}

/** Whether `address` lies in one of `ranges`. */
export function inRanges(address: string, ranges: Network[]): boolean {
  const a = parseAddress(address);
  if (!a) return false;
  const n = addressToBigInt(a.text);
  return ranges.some((r) => r.version === a.version && n >= r.first && n <= r.last);
}

/**
 * Why a webhook may not connect to `address` (not public, and outside the operator's allowed
 * ranges), or undefined when it may. Public is src/address.ts's one definition: private,
 * loopback, link-local (with 169.254.169.254), CGNAT, multicast, reserved, ULA (fd00:ec2::254)
 * and documentation addresses are not.
 */
export function refusedAddress(address: string, ranges: Network[]): string | undefined {
  const a = parseAddress(address);
  if (!a) return 'not an IP address';
  if (inRanges(a.text, ranges)) return undefined;
  return nonPublicReason(a);
}
