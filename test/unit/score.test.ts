import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeScore, confidenceScorer, decayContribution, effectiveReports, type ScoreInput } from '../../src/reputation/score.js';

const NOW = new Date('2026-06-15T12:00:00Z');
const DAY = 86_400_000;

/** An IP's reports: `count` submissions spread evenly over the last `spanDays`, ending `ageDays` ago. */
function input(o: {
  count: number;
  reporters: number;
  honeypot?: number;
  ageDays?: number;
  spanDays?: number;
  severity?: number;
  whitelisted?: boolean;
  feedback?: number;
}): ScoreInput {
  const age = o.ageDays ?? 0;
  const span = o.spanDays ?? 0;
  let decaySum = 0;
  for (let i = 0; i < o.count; i++) {
    const at = NOW.getTime() - (age + (o.count > 1 ? (span * i) / (o.count - 1) : 0)) * DAY;
    decaySum += decayContribution(new Date(at));
  }
  return {
    reportCount: o.count,
    uniqueReporters: Math.min(o.reporters, o.count),
    honeypotReports: Math.min(o.honeypot ?? 0, o.count),
    decaySum,
    lastReportedAt: o.count ? new Date(NOW.getTime() - age * DAY) : null,
    maxSeverity: o.count ? (o.severity ?? 6) : 0,
    whitelisted: o.whitelisted ?? false,
    positiveFeedback: o.feedback ?? 0,
  };
}

const arbitraryIp = fc.record({
  count: fc.integer({ min: 1, max: 500 }),
  reporters: fc.integer({ min: 1, max: 200 }),
  honeypot: fc.integer({ min: 0, max: 10 }),
  ageDays: fc.double({ min: 0, max: 365, noNaN: true }),
  spanDays: fc.double({ min: 0, max: 90, noNaN: true }),
  severity: fc.integer({ min: 1, max: 10 }),
});

const score = (i: ScoreInput) => computeScore(i, NOW).abuseConfidencePercentage;

describe('the abuse confidence score', () => {
  it('is the same number from the bulk scorer as from computeScore', () => {
    const bulk = confidenceScorer(NOW);
    fc.assert(
      fc.property(arbitraryIp, fc.boolean(), fc.integer({ min: 0, max: 8 }), fc.integer({ min: -30, max: 30 }), (o, whitelisted, feedback, skewDays) => {
        const i = input({ ...o, whitelisted, feedback, ageDays: Math.max(-1, o.ageDays + skewDays) });
        expect(bulk(i)).toBe(score(i));
      }),
      { numRuns: 2000 },
    );
    for (const i of [input({ count: 0, reporters: 0 }), input({ count: 3, reporters: 1, severity: 0 }), input({ count: 2, reporters: 2, severity: 12 })]) {
      expect(bulk(i)).toBe(score(i));
    }
  });

  it('is an integer from 0 to 100 with every breakdown value in range', () => {
    fc.assert(
      fc.property(arbitraryIp, fc.boolean(), (o, whitelisted) => {
        const s = computeScore(input({ ...o, whitelisted }), NOW);
        expect(Number.isInteger(s.abuseConfidencePercentage)).toBe(true);
        expect(s.abuseConfidencePercentage).toBeGreaterThanOrEqual(0);
        expect(s.abuseConfidencePercentage).toBeLessThanOrEqual(s.confidenceBreakdown.maxConfidence);
        const b = s.confidenceBreakdown;
        for (const v of [b.reportScore, b.diversityScore]) expect(v).toBeGreaterThanOrEqual(0), expect(v).toBeLessThanOrEqual(100);
        for (const v of [b.recencyWeight, b.severityWeight]) expect(v).toBeGreaterThanOrEqual(0), expect(v).toBeLessThanOrEqual(1);
        expect(s.debugInfo.timeDampeningFactor).toBeLessThanOrEqual(1);
        expect(s.debugInfo.effectiveReportCount).toBeLessThanOrEqual(o.count);
      }),
      { seed: 20261121, numRuns: 500 },
    );
  });

  it('never falls when another distinct reporter confirms', () => {
    fc.assert(
      fc.property(arbitraryIp, (o) => {
        const reporters = Math.min(o.reporters, o.count - 1);
        fc.pre(reporters >= 1);
        expect(score(input({ ...o, reporters: reporters + 1 }))).toBeGreaterThanOrEqual(score(input({ ...o, reporters })));
      }),
      { seed: 7, numRuns: 500 },
    );
  });

  it('rises strictly from one reporter to several for the same reports', () => {
    const one = score(input({ count: 10, reporters: 1 }));
    const three = score(input({ count: 10, reporters: 3 }));
    const ten = score(input({ count: 10, reporters: 10 }));
    expect(one).toBeLessThan(three);
    expect(three).toBeLessThan(ten);
  });

  it('never rises as the same reports grow older', () => {
    fc.assert(
      fc.property(arbitraryIp, fc.double({ min: 0.01, max: 200, noNaN: true }), (o, older) => {
        expect(score(input({ ...o, ageDays: o.ageDays + older }))).toBeLessThanOrEqual(score(input(o)));
      }),
      { seed: 11, numRuns: 500 },
    );
  });

  it('halves the weight of a report every 14 days', () => {
    const weight = effectiveReports(decayContribution(new Date(NOW.getTime() - 14 * DAY)), NOW);
    expect(weight).toBeCloseTo(0.5, 10);
  });

  it('gives 0 to a whitelisted address, whatever its reports', () => {
    fc.assert(
      fc.property(arbitraryIp, (o) => {
        const s = computeScore(input({ ...o, whitelisted: true }), NOW);
        expect(s.abuseConfidencePercentage).toBe(0);
        expect(s.confidenceBreakdown.constraintReasons.map((r) => r.code)).toContain('whitelisted');
      }),
      { seed: 3, numRuns: 200 },
    );
  });

  it('keeps a single reporter at or below 60, however much it reports', () => {
    fc.assert(
      fc.property(arbitraryIp, (o) => {
        expect(score(input({ ...o, reporters: 1, honeypot: o.honeypot }))).toBeLessThanOrEqual(60);
      }),
      { seed: 5, numRuns: 300 },
    );
  });

  it('gives 0 and a neutral breakdown to an address without reports', () => {
    const s = computeScore(input({ count: 0, reporters: 0 }), NOW);
    expect(s.abuseConfidencePercentage).toBe(0);
    expect(s.confidenceBreakdown).toEqual({
      reportScore: 0,
      diversityScore: 0,
      recencyWeight: 0,
      severityWeight: 0,
      honeypotBonus: 0,
      feedbackWeight: 1,
      maxConfidence: 100,
      constraintReasons: [],
    });
  });

  it('matches the worked example of docs/scoring.md', () => {
    // 8 submissions by 4 accounts, one of them a honeypot with 2 reports; the newest 2 hours
    // old, the others 1 to 7 days old; highest severity 8 (SQL Injection).
    const ages = [2 / 24, 1, 2, 3, 4, 5, 6, 7];
    const decaySum = ages.reduce((sum, d) => sum + decayContribution(new Date(NOW.getTime() - d * DAY)), 0);
    const s = computeScore(
      { reportCount: 8, uniqueReporters: 4, honeypotReports: 2, decaySum, lastReportedAt: new Date(NOW.getTime() - 2 * 3_600_000), maxSeverity: 8, whitelisted: false, positiveFeedback: 0 },
      NOW,
    );
    expect(s).toEqual({
      abuseConfidencePercentage: 67,
      confidenceBreakdown: {
        reportScore: 67.62,
        diversityScore: 52.76,
        recencyWeight: 0.9941,
        severityWeight: 0.92,
        honeypotBonus: 10,
        feedbackWeight: 1,
        maxConfidence: 100,
        constraintReasons: [],
      },
      debugInfo: { reportCount: 8, uniqueReporters: 4, honeypotReportsCount: 2, effectiveReportCount: 7, timeDampeningFactor: 0.8458, positiveFeedbackCount: 0 },
    });
  });
});

describe('positive feedback', () => {
  it('multiplies the score by 0.8 per distinct account, counting at most 5', () => {
    const base = input({ count: 40, reporters: 12, ageDays: 0.1, spanDays: 3, severity: 8 });
    const raw = (n: number) => {
      const s = computeScore({ ...base, positiveFeedback: n }, NOW);
      return { score: s.abuseConfidencePercentage, weight: s.confidenceBreakdown.feedbackWeight, count: s.debugInfo.positiveFeedbackCount };
    };
    const none = computeScore(base, NOW).abuseConfidencePercentage;
    expect(raw(0)).toEqual({ score: none, weight: 1, count: 0 });
    expect(raw(1).weight).toBe(0.8);
    expect(raw(5).weight).toBe(0.3277);
    // the sixth account counts in the number, not in the weight
    expect(raw(6)).toEqual({ ...raw(5), count: 6 });
    expect(raw(1).score).toBeLessThan(none);
    expect(raw(5).score).toBeLessThan(raw(4).score);
  });

  it('never raises a score', () => {
    fc.assert(
      fc.property(arbitraryIp, fc.integer({ min: 0, max: 20 }), (o, n) => {
        const i = input(o);
        expect(computeScore({ ...i, positiveFeedback: n }, NOW).abuseConfidencePercentage).toBeLessThanOrEqual(computeScore(i, NOW).abuseConfidencePercentage);
      }),
    );
  });
});

describe('the caps, exactly', () => {
  // A heavily and recently reported address whose raw score is far above every cap.
  const heavy = (reporters: number, honeypot = 0) => input({ count: 200, reporters, honeypot, ageDays: 0, spanDays: 1, severity: 10 });

  it('holds two reporters at exactly 85 and one at exactly 60', () => {
    // Honeypot reports lift the raw score above the caps (72.7 + 15 for two reporters).
    expect(computeScore(heavy(2, 3), NOW).abuseConfidencePercentage).toBe(85);
    expect(computeScore(heavy(2, 3), NOW).confidenceBreakdown.maxConfidence).toBe(85);
    expect(computeScore(heavy(1, 3), NOW).abuseConfidencePercentage).toBe(60);
    expect(computeScore(heavy(3, 3), NOW).abuseConfidencePercentage).toBeGreaterThan(85);
  });

  it('gives at most 15 honeypot points: 5 per honeypot report up to three', () => {
    const bonus = (n: number) => computeScore(input({ count: 10, reporters: 10, honeypot: n }), NOW).confidenceBreakdown.honeypotBonus;
    expect([0, 1, 2, 3, 4, 10].map(bonus)).toEqual([0, 5, 10, 15, 15, 15]);
  });
});
