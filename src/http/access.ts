import { FEATURES, KEY_COUNTERS, type Feature, type KeyCounter } from '../roles.js';
import type { ApiDocument } from '../openapi.js';
import type { AnyOperationId } from './types.js';

/** An operation of any document the server answers with its API keys (/api/v2, the AbuseIPDB adapter). */
export type OperationId = AnyOperationId;

/**
 * Who may call an operation and what a call costs, as the operation states it in the OpenAPI
 * document:
 *
 * ```yaml
 * x-access:
 *   feature: bulk_check   # a key whose role has this feature; without it the operation is public
 *   answers: relay        # the shape of its errors; the document's own (its root x-access.answers) by default
 *   countsSite: false     # whether a keyed call's X-Rip-Site is counted and bounded here (default: yes, but for the relay)
 * x-charge:
 *   withKey: check        # the account's daily counter a keyed call charges
 *   withoutKey: public    # the per-source-address allowance a call without a key charges
 *   units: handler        # the handler charges as many units as the request holds, after its own checks
 *   withRead: true        # the metering (the charge of a call, or the reading of the counter for the
 *                         #   headers of an uncharged one) runs in the statement the handler reads its answer with
 *   gatedByPublicLimit: true   # never charged, but refused once the caller's public allowance is used up
 *   per: distinct valid address   # with units: handler, what one unit is (for the reference)
 *   monthly: mail         # a relay send: metered on the channel's monthly quota, then its bundles
 * ```
 *
 * This module reads them once, at start, and is what authentication, metering, the error
 * handler and the contract test's hooks consult; the role table (src/roles.ts) says which
 * role has which feature and how much of each counter.
 */
export interface AccessRule {
  /** undefined: public, a key is optional. Otherwise a key whose role has this feature. */
  feature?: Feature;
  /** The shape its errors are answered in: its own `x-access.answers`, else its document's. */
  answers: Answers;
  /** Relay operations answer without the envelope, with relay error codes. */
  relay: boolean;
  /** Whether the site a keyed request names (`X-Rip-Site`) is counted and bounded (not by the relay, which bounds `site_url`). */
  countsSite: boolean;
  /** What one call charges, with and without a key; undefined charges nothing. */
  chargeWithKey?: KeyCounter;
  chargeWithoutKey?: 'public';
  /** The handler charges, after its own checks, as many units as the request holds. */
  chargedByHandler: boolean;
  /**
   * The use case reads its answer in the statement that charges the call (or reads the counter
   * its headers show), through the Quota port (Quota.chargeWith): one round trip.
   */
  meteredWithRead: boolean;
  /** Refused with 429 once the caller's per-address allowance is used up, though never charged. */
  gatedByPublicLimit: boolean;
}

/** The rules of the operations of one or more documents, by operationId. */
export type AccessRules = Readonly<Partial<Record<OperationId, AccessRule>>>;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/**
 * The shapes errors are answered in: the envelope `{meta, data}`; the relay's `{ok, code,
 * message}`; CrowdSec's LAPI `{message}`; AbuseIPDB's `{errors: [...]}`; the inbound webhooks'
 * `{ok: false, code, message}` (the relay's, without its key texts).
 */
export const ANSWERS = ['envelope', 'relay', 'crowdsec', 'abuseipdb', 'webhook'] as const;
export type Answers = (typeof ANSWERS)[number];

/** The shape a document answers errors in (its root `x-access.answers`): for any request under its base. */
export function documentAnswers(document: ApiDocument): Answers {
  const answers = ((document as { 'x-access'?: { answers?: unknown } })['x-access'])?.answers;
  if (typeof answers !== 'string' || !(ANSWERS as readonly string[]).includes(answers)) {
    throw new Error(`The OpenAPI document "${document.info?.title}" must name its error shape: x-access.answers, one of ${ANSWERS.join(', ')}`);
  }
  return answers as Answers;
}
const ACCESS_FIELDS = new Set(['feature', 'answers', 'countsSite']);
/** `per` (what one unit is) and `monthly` (the relay channel a send is metered on) are read by the reference only. */
const CHARGE_FIELDS = new Set(['withKey', 'withoutKey', 'units', 'withRead', 'gatedByPublicLimit', 'per', 'monthly']);

/** The access rules of every operation of a document; throws naming every malformed one. */
export function accessRules(document: ApiDocument): AccessRules {
  const rules: Partial<Record<OperationId, AccessRule>> = {};
  const problems: string[] = [];
  const answers = documentAnswers(document);
  for (const item of Object.values(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = (item as Record<string, Record<string, unknown> | undefined>)[method];
      const id = operation?.operationId as OperationId | undefined;
      if (!operation || !id) continue;
      const rule = readRule(id, operation['x-access'], operation['x-charge'], answers, problems);
      if (rule) rules[id] = rule;
    }
  }
  if (problems.length) throw new Error(`The OpenAPI document's access rules are malformed:\n  ${problems.join('\n  ')}`);
  return rules as AccessRules;
}

function readRule(id: string, access: unknown, charge: unknown, documentAnswers: Answers, problems: string[]): AccessRule | undefined {
  const start = problems.length;
  const object = (value: unknown, name: string, fields: Set<string>): Record<string, unknown> => {
    if (value === undefined && name === 'x-charge') return {};
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      problems.push(`${id}: ${name} must be an object`);
      return {};
    }
    for (const key of Object.keys(value)) if (!fields.has(key)) problems.push(`${id}: ${name}.${key} is not a known field`);
    return value as Record<string, unknown>;
  };
  const a = object(access, 'x-access', ACCESS_FIELDS);
  const c = object(charge, 'x-charge', CHARGE_FIELDS);
  const oneOf = <T extends string>(value: unknown, name: string, allowed: readonly T[]): T | undefined => {
    if (value === undefined) return undefined;
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    problems.push(`${id}: ${name} must be one of ${allowed.join(', ')}`);
    return undefined;
  };
  const flag = (value: unknown, name: string): boolean | undefined => {
    if (value === undefined || typeof value === 'boolean') return value;
    problems.push(`${id}: ${name} must be true or false`);
    return undefined;
  };
  const feature = oneOf(a.feature, 'x-access.feature', FEATURES);
  const answers = oneOf(a.answers, 'x-access.answers', ANSWERS) ?? documentAnswers;
  const relay = answers === 'relay';
  const rule: AccessRule = {
    feature,
    answers,
    relay,
    countsSite: flag(a.countsSite, 'x-access.countsSite') ?? !relay,
    chargeWithKey: oneOf(c.withKey, 'x-charge.withKey', KEY_COUNTERS),
    chargeWithoutKey: oneOf(c.withoutKey, 'x-charge.withoutKey', ['public'] as const),
    chargedByHandler: oneOf(c.units, 'x-charge.units', ['call', 'handler'] as const) === 'handler',
    meteredWithRead: flag(c.withRead, 'x-charge.withRead') ?? false,
    gatedByPublicLimit: flag(c.gatedByPublicLimit, 'x-charge.gatedByPublicLimit') ?? false,
  };
  if (rule.feature && rule.chargeWithoutKey) problems.push(`${id}: a keyed operation charges no public allowance`);
  if (rule.meteredWithRead && (rule.chargedByHandler || rule.gatedByPublicLimit)) problems.push(`${id}: x-charge.withRead with units: handler or gatedByPublicLimit`);
  if (rule.chargedByHandler && !rule.chargeWithKey && !rule.chargeWithoutKey) problems.push(`${id}: x-charge.units without a counter`);
  return problems.length === start ? rule : undefined;
}
