import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { networkOf, nonPublicReason, parseAddress, parseNetwork, type Address, type Network } from '../address.js';
import { invalidField, sentence, unprocessable } from '../errors.js';
import type { DelistStatus } from '../db/entities/delisting.js';

/**
 * The rules of delisting requests, without I/O: what a request may hold, when it is proven,
 * the confirmation token, and what each status tells the requester.
 *
 * - unconfirmed: made, its link mailed (or not, past the mail bounds); expires unconfirmed after
 *   CONFIRM_WINDOW_MS.
 * - open: confirmed through the mailed link, waiting for the operator.
 * - approved / rejected: the operator decided; an approval whitelists the address until
 *   `whitelistUntil`; a rejected address may not ask again for REJECTION_COOLDOWN_MS.
 * - expired: never confirmed, or replaced by a proven request for the same address.
 */

export const DELIST_REASON_MAX = 1_000;
export const DELIST_NOTE_MAX = 500;
export const DELIST_EMAIL_MAX = 254;
/** The widest ranges one request may name: a /24 of IPv4, a /48 of IPv6. */
export const DELIST_V4_PREFIX_MIN = 24;
export const DELIST_V6_PREFIX_MIN = 48;
/** The longest approval the operator may give. */
export const DELIST_DAYS_MAX = 3650;
export const CONFIRM_WINDOW_MS = 24 * 3_600_000;
export const MAIL_WINDOW_MS = 24 * 3_600_000;
export const REJECTION_COOLDOWN_MS = 7 * 24 * 3_600_000;
export const SOURCE_WINDOW_MS = 24 * 3_600_000;
/** Decided and expired requests are kept a year (an approval: a year after its whitelist entry ends), then deleted by the purge. */
export const DELIST_RETENTION_MS = 365 * 24 * 3_600_000;

const CONTROL = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/;
const LINE_BREAK = /[\r\n\u2028\u2029]/;

export interface DelistInput {
  ip: string;
  email: string;
  reason: string;
}

export interface ValidDelistInput {
  network: Network;
  email: string;
  reason: string;
}

/**
 * The request's fields checked again (the document states the same bounds): an address or a
 * range no wider than a /24 or /48, public; one mailbox on one line; a reason of at most 1,000
 * characters without control characters (line breaks allowed, CRLF made LF).
 */
export function validateDelistInput(input: DelistInput, normaliseEmail: (email: string) => string | undefined): ValidDelistInput {
  const ip = typeof input.ip === 'string' && !LINE_BREAK.test(input.ip) ? input.ip.trim() : '';
  if (ip.length === 0 || ip.length > 49) throw invalidField('ip', 'must be an IPv4 or IPv6 address or CIDR range');
  const network = parseNetwork(ip);
  if (!network) throw invalidField('ip', 'must be an IPv4 or IPv6 address or CIDR range');
  const min = network.version === 4 ? DELIST_V4_PREFIX_MIN : DELIST_V6_PREFIX_MIN;
  if (network.bits < min) throw invalidField('ip', `must be a range no wider than /${min} for IPv${network.version}`);
  for (const end of [network.firstAddress, network.lastAddress]) {
    const reason = nonPublicReason(parseAddress(end)!);
    if (reason) {
      const message = `${network.bits === (network.version === 4 ? 32 : 128) ? network.firstAddress : network.text} is ${reason} and is never listed`;
      throw unprocessable(sentence(`The request was refused: ${message}`), [{ name: 'ip', message }], 'address_not_reportable');
    }
  }
  if (typeof input.email !== 'string' || input.email.length > DELIST_EMAIL_MAX || LINE_BREAK.test(input.email)) {
    throw invalidField('email', 'must be one e-mail address on one line');
  }
  const email = normaliseEmail(input.email);
  if (!email) throw invalidField('email', 'must be one e-mail address, such as name@example.com');
  const reason = typeof input.reason === 'string' ? input.reason.replace(/\r\n?/g, '\n').trim() : '';
  if (reason.length === 0 || reason.length > DELIST_REASON_MAX) throw invalidField('reason', `must be 1 to ${DELIST_REASON_MAX} characters`);
  if (CONTROL.test(reason)) throw invalidField('reason', 'must not contain control characters');
  return { network, email, reason };
}

/** An operator's note: one line, at most 500 characters, printable. */
export function validateNote(note: string | undefined, required: boolean): string {
  const text = (note ?? '').trim();
  if (required && text.length === 0) throw invalidField('note', 'is required: say why');
  if (text.length > DELIST_NOTE_MAX || LINE_BREAK.test(text) || CONTROL.test(text)) {
    throw invalidField('note', `must be one line of at most ${DELIST_NOTE_MAX} characters`);
  }
  return text;
}

/** The network a requester is counted by: its address, or for IPv6 its /64. */
export function requesterNetwork(caller: Address): string {
  return caller.version === 4 ? `${caller.text}/32` : networkOf(caller, 64);
}

/**
 * Whether the request comes from what it names: the caller's address lies in the range (a
 * single address: equals it), or, for IPv6, in the same /64 as a single address or a range
 * narrower than a /64 (an IPv6 host changes its address within its /64).
 */
export function isProven(network: Network, caller: Address | undefined): boolean {
  if (!caller || caller.version !== network.version) return false;
  if (network.version === 6 && network.bits >= 64) return networkOf(caller, 64) === networkOf(parseAddress(network.firstAddress)!, 64);
  const n = parseNetwork(caller.text)!;
  return n.first >= network.first && n.first <= network.last;
}

/** A confirmation token: 32 random bytes, base64url (43 characters); only its SHA-256 is stored. */
export function newToken(): { token: string; hash: Buffer } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: hashToken(token) };
}

export const hashToken = (token: string): Buffer => createHash('sha256').update(token, 'utf8').digest();

/** Compares a presented token with a stored hash in constant time. */
export function tokenMatches(token: string, stored: Buffer): boolean {
  if (typeof token !== 'string' || token.length === 0 || token.length > 128) return false;
  const presented = hashToken(token);
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

/** `203.0.113.9` for a single address, `203.0.113.0/24` for a range. */
export function shownRange(cidr: string): string {
  const n = parseNetwork(cidr)!;
  return n.bits === (n.version === 4 ? 32 : 128) ? n.firstAddress : n.text;
}

export function provenSentence(proven: boolean, shown: string): string {
  return proven
    ? `The request was made from ${shown} itself, so it is marked as proven and is reviewed first.`
    : `The request was not made from ${shown} (or, for IPv6, its /64), so it is not proven: the operator reviews it after proven requests and may ask for more.`;
}

export function statusSentence(status: DelistStatus, whitelistUntil: Date | null): string {
  switch (status) {
    case 'unconfirmed':
      return 'Waiting for confirmation through the link mailed to the requester.';
    case 'open':
      return 'Confirmed; waiting for the operator to decide.';
    case 'approved':
      return `Approved: the address is whitelisted${whitelistUntil ? ` until ${whitelistUntil.toISOString()}` : ''} and leaves the list at its next regeneration.`;
    case 'rejected':
      return 'Rejected by the operator; the address may be asked for again 7 days after the decision.';
    case 'expired':
      return 'Expired without confirmation (or replaced by a proven request for the same address).';
  }
}
