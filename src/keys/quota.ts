import type { NamedQuery, Queryable } from '../db/pool.js';
import type { Caller } from './service.js';
import type { Counter } from '../roles.js';

/**
 * The quota as the use cases see it: a charge is a value they get back (the counter's `Usage`,
 * or a `Refusal`) and return with their answer; the edge turns it into rate-limit headers, or a
 * 429. Nothing about HTTP here. Meter (keys/usage.repository.ts) is the PostgreSQL implementation.
 */

/** Who a counter belongs to: an account (all its keys share it) or a public source address. */
export type Subject = { caller: Caller } | { sourceIp: string };

/** A daily counter as it stands after a charge or a look: what the rate-limit headers say. */
export interface Usage {
  counter: Counter;
  /** -1 when unlimited. */
  limit: number;
  used: number;
  /** Start of the next UTC day. */
  resetAt: Date;
}

/** What a charge made, for a refund: the counter rows, the day and the units. */
export interface Receipt {
  subject: string[];
  counter: Counter;
  day: string;
  units: number;
}

/** A charge admitted: the counter after it. `receipt` is absent for a look (`peek`). */
export interface Charged extends Usage {
  refused?: undefined;
  receipt?: Receipt;
}

/** A charge the counter refused: nothing was charged; `usage` is the counter as it stands. */
export interface Refusal {
  refused: true;
  usage: Usage;
}

export type Outcome = Charged | Refusal;

/**
 * Who pays for a request and on which counter, as the edge decided it from the operation's
 * `x-charge` and the caller: a value handed to the use case. `peek`: the operation is not
 * charged, its answer only shows the counter. `tab`: the standalone charges made for the
 * request (not those inside a transaction), which the edge may give back when the server then
 * fails to answer (5xx).
 */
export interface Payer {
  subject: Subject;
  counter: Counter;
  peek?: boolean;
  tab?: Receipt[];
}

export interface Quota {
  /**
   * Charges `units`, all or nothing. With `tx` (a transaction) the charge commits or rolls back
   * with the work it pays for; without, it is the payer's tab's.
   */
  charge(payer: Payer, units: number, tx?: Queryable): Promise<Outcome>;
  /**
   * Charges `units` (or, for a `peek` payer, reads the counter) and runs `read`, in one
   * statement and one round trip. On a refusal the rows are empty.
   */
  chargeWith<R extends object>(payer: Payer, units: number, read: NamedQuery): Promise<{ outcome: Outcome; rows: R[] }>;
  /** Charges many requests in a transaction, in their order, each all or nothing. */
  chargeMany(claims: { payer: Payer; units: number }[], tx: Queryable): Promise<Outcome[]>;
}

/** A refused charge, thrown by a use case: the edge answers 429 with the counter's headers. */
export class QuotaExceeded extends Error {
  constructor(readonly usage: Usage) {
    super(`the ${usage.counter} quota is used up`);
    this.name = 'QuotaExceeded';
  }
}

/** The usage of an admitted charge; a refusal is thrown as QuotaExceeded. */
export function paid(outcome: Outcome): Usage {
  if (outcome.refused) throw new QuotaExceeded(outcome.usage);
  return outcome;
}

/** A use case's answer with what it cost: the edge sets the rate-limit headers from `usage`. */
export interface Metered<T> {
  data: T;
  usage: Usage;
}
