/**
 * The abuse confidence score (0-100), as published in the description of GET /check and in
 * docs/scoring.md. Pure: everything it needs is in the per-IP aggregate and the current time.
 */

export const HALF_LIFE_DAYS = 14;
export const HALF_LIFE_MS = HALF_LIFE_DAYS * 86_400_000;
/**
 * Age weights are stored as 2^((t - EPOCH) / half-life) and summed on write, so that the sum of
 * every report's weight at any later time is one multiplication: sum * 2^(-(now - EPOCH) / h).
 * A double holds these up to 2^1023, i.e. until about 2064 with this epoch.
 */
export const EPOCH_MS = Date.UTC(2025, 0, 1);

/** What one report submission adds to `ip_stats.decay_sum`. */
export function decayContribution(reportedAt: Date): number {
  return 2 ** ((reportedAt.getTime() - EPOCH_MS) / HALF_LIFE_MS);
}

/** The age-weighted number of submissions at `now`: each counts 0.5^(ageDays / 14). */
export function effectiveReports(decaySum: number, now: Date): number {
  return decaySum * 2 ** (-(now.getTime() - EPOCH_MS) / HALF_LIFE_MS);
}

export interface ScoreInput {
  /** Report submissions, aggregated ones included. */
  reportCount: number;
  uniqueReporters: number;
  honeypotReports: number;
  decaySum: number;
  lastReportedAt: Date | null;
  /** Highest severity (1-10) among the reported categories; 0 without reports. */
  maxSeverity: number;
  whitelisted: boolean;
  /** Distinct accounts that reported the address as a false positive (POST /whitelist). */
  positiveFeedback: number;
}

/** Each distinct account's positive feedback multiplies the score by this, counting at most FEEDBACK_MAX. */
export const FEEDBACK_FACTOR = 0.8;
export const FEEDBACK_MAX = 5;

export type ConstraintCode = 'whitelisted' | 'single_reporter' | 'two_reporters';

export interface ConstraintReason {
  code: ConstraintCode;
  cap: number;
  message: string;
}

export interface Score {
  abuseConfidencePercentage: number;
  confidenceBreakdown: {
    reportScore: number;
    diversityScore: number;
    recencyWeight: number;
    severityWeight: number;
    honeypotBonus: number;
    feedbackWeight: number;
    maxConfidence: number;
    constraintReasons: ConstraintReason[];
  };
  debugInfo: {
    reportCount: number;
    uniqueReporters: number;
    honeypotReportsCount: number;
    effectiveReportCount: number;
    timeDampeningFactor: number;
    positiveFeedbackCount: number;
  };
}

const CAPS: Record<ConstraintCode, ConstraintReason> = {
  whitelisted: { code: 'whitelisted', cap: 0, message: 'The address is on the operator whitelist.' },
  single_reporter: {
    code: 'single_reporter',
    cap: 60,
    message: 'All reports come from one account; a single reporter cannot push the score above 60.',
  },
  two_reporters: {
    code: 'two_reporters',
    cap: 85,
    message: 'All reports come from two accounts; the score stays at or below 85 until a third reporter confirms.',
  },
};

const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

// The terms of the score, one function each: computeScore shows them, confidenceScorer only sums
// them. Terms of small integers come from tables computed once by the same formulas.
const diversityOf = (reporters: number) => (reporters > 1 ? 100 * (1 - Math.exp(-(reporters - 1) / 4)) : 0);
const severityOf = (maxSeverity: number) => (maxSeverity > 0 ? 0.6 + 0.04 * Math.min(10, maxSeverity) : 0);
const feedbackOf = (feedback: number) => FEEDBACK_FACTOR ** Math.min(FEEDBACK_MAX, Math.max(0, feedback));
const DIVERSITY = Array.from({ length: 64 }, (_, n) => diversityOf(n));
const SEVERITY = Array.from({ length: 11 }, (_, n) => severityOf(n));
const FEEDBACK = Array.from({ length: FEEDBACK_MAX + 1 }, (_, n) => feedbackOf(n));
const fromTable = (table: number[], of: (n: number) => number, n: number) => table[n] ?? of(n);

const reportScoreOf = (effective: number) => 100 * (1 - Math.exp(-effective / 6));
const recencyOf = (hoursSinceLast: number) => 0.5 + 0.5 * Math.exp(-hoursSinceLast / 168);
const honeypotOf = (honeypotReports: number) => Math.min(15, 5 * honeypotReports);
/** The lowest cap that applies (CAPS). */
const maxConfidenceOf = (input: ScoreInput) =>
  input.whitelisted ? CAPS.whitelisted.cap : input.uniqueReporters === 1 ? CAPS.single_reporter.cap : input.uniqueReporters === 2 ? CAPS.two_reporters.cap : 100;
const combine = (reportScore: number, diversity: number, recency: number, severity: number, honeypot: number, feedback: number, maxConfidence: number) =>
  Math.round(Math.max(0, Math.min(((0.65 * reportScore + 0.35 * diversity) * recency * severity + honeypot) * feedback, maxConfidence, 100)));

/**
 * The abuse confidence percentage at `now`, for many aggregates in a tight loop (bulk checks,
 * the blacklist): computeScore's number without its breakdown, and without an allocation.
 */
export function confidenceScorer(now: Date): (input: ScoreInput) => number {
  const nowMs = now.getTime();
  const decay = effectiveReports(1, now);
  return (input) => confidenceAt(input, nowMs, decay);
}

/** confidenceScorer's number at `nowMs`, `decay` being effectiveReports(1, that time). */
function confidenceAt(input: ScoreInput, nowMs: number, decay: number): number {
  if (!(input.reportCount > 0 && input.lastReportedAt !== null)) return 0;
  const effective = Math.min(input.reportCount, input.decaySum * decay);
  const hoursSinceLast = Math.max(0, nowMs - input.lastReportedAt.getTime()) / 3_600_000;
  return combine(
    reportScoreOf(effective),
    fromTable(DIVERSITY, diversityOf, input.uniqueReporters),
    recencyOf(hoursSinceLast),
    fromTable(SEVERITY, severityOf, input.maxSeverity),
    honeypotOf(input.honeypotReports),
    fromTable(FEEDBACK, feedbackOf, input.positiveFeedback),
    maxConfidenceOf(input),
  );
}

/** How far ahead `scoreHoldsUntil` looks: past it every decaying term is 0 to a double's precision. */
const HOLD_HORIZON_MS = 20 * 365 * 86_400_000;
/** The precision of `scoreHoldsUntil`: the moment it names is at most this before the real change. */
const HOLD_PRECISION_MS = 1_000;

/**
 * The last moment (to a second, never after it) at which the score of `input` is still `score`,
 * its score at `now`; null when it never changes again. The score never rises as the same
 * inputs age (every term that depends on time, the effective count and the recency weight, only
 * falls), so it holds from `now` to that moment and is lower at any time after it: a
 * regeneration at time T need only rescore the addresses whose moment is before T (see
 * docs/scaling.md). Found by bisection on the same scorer the regeneration uses.
 */
export function scoreHoldsUntil(input: ScoreInput, now: Date, score: number): Date | null {
  if (score === 0) return null;
  const at = (ms: number) => confidenceAt(input, ms, 2 ** (-(ms - EPOCH_MS) / HALF_LIFE_MS));
  let lo = now.getTime();
  if (at(lo) !== score) return now;
  let hi = lo + HOLD_HORIZON_MS;
  if (at(hi) === score) return null;
  while (hi - lo > HOLD_PRECISION_MS) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (at(mid) === score) lo = mid;
    else hi = mid;
  }
  return new Date(lo);
}

export function computeScore(input: ScoreInput, now: Date): Score {
  const reasons: ConstraintReason[] = [];
  if (input.whitelisted) reasons.push(CAPS.whitelisted);
  if (input.uniqueReporters === 1) reasons.push(CAPS.single_reporter);
  if (input.uniqueReporters === 2) reasons.push(CAPS.two_reporters);
  const maxConfidence = maxConfidenceOf(input);

  const hasReports = input.reportCount > 0 && input.lastReportedAt !== null;
  // A report stamped a little in the future (clock skew between writers) weighs as a new one.
  const effective = hasReports ? Math.min(input.reportCount, effectiveReports(input.decaySum, now)) : 0;
  const reportScore = reportScoreOf(effective);
  const diversityScore = diversityOf(input.uniqueReporters);
  const hoursSinceLast = hasReports ? Math.max(0, now.getTime() - input.lastReportedAt!.getTime()) / 3_600_000 : 0;
  const recencyWeight = hasReports ? recencyOf(hoursSinceLast) : 0;
  const severityWeight = hasReports ? severityOf(input.maxSeverity) : 0;
  const honeypotBonus = honeypotOf(input.honeypotReports);
  const feedbackWeight = feedbackOf(input.positiveFeedback);
  const score = hasReports ? combine(reportScore, diversityScore, recencyWeight, severityWeight, honeypotBonus, feedbackWeight, maxConfidence) : 0;

  return {
    abuseConfidencePercentage: score,
    confidenceBreakdown: {
      reportScore: round(reportScore),
      diversityScore: round(diversityScore),
      recencyWeight: round(recencyWeight, 4),
      severityWeight: round(severityWeight, 4),
      honeypotBonus,
      feedbackWeight: round(feedbackWeight, 4),
      maxConfidence,
      constraintReasons: reasons,
    },
    debugInfo: {
      reportCount: input.reportCount,
      uniqueReporters: input.uniqueReporters,
      honeypotReportsCount: input.honeypotReports,
      effectiveReportCount: Math.round(effective),
      timeDampeningFactor: input.reportCount > 0 ? round(effective / input.reportCount, 4) : 0,
      positiveFeedbackCount: input.positiveFeedback,
    },
  };
}

/** What the score reads of an address's aggregate (reputation/repository.ts's IpAggregate). */
export type AggregateFacts = Omit<ScoreInput, 'reportCount'> & { totalReports: number };

/** The score of an address from its aggregate: the one way lookups, reports and the blacklist score. */
export function scoreAggregate(aggregate: AggregateFacts, now: Date): Score {
  return computeScore(toScoreInput(aggregate), now);
}

/** What the score reads of an aggregate. */
export function toScoreInput(aggregate: AggregateFacts): ScoreInput {
  return {
    reportCount: aggregate.totalReports,
    uniqueReporters: aggregate.uniqueReporters,
    honeypotReports: aggregate.honeypotReports,
    decaySum: aggregate.decaySum,
    lastReportedAt: aggregate.lastReportedAt,
    maxSeverity: aggregate.maxSeverity,
    whitelisted: aggregate.whitelisted,
    positiveFeedback: aggregate.positiveFeedback,
  };
}
