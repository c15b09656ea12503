import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { computeScore, decayContribution, scoreHoldsUntil, type ScoreInput } from '../../src/reputation/score.js';

/**
 * scoreHoldsUntil: the moment up to which a score is known to stay what it is, on which the
 * incremental regeneration relies to carry a score forward (docs/scaling.md).
 */
const NOW = new Date('2026-06-15T12:00:00Z');
const DAY = 86_400_000;

const arbitraryInput = fc
  .record({
    count: fc.integer({ min: 1, max: 300 }),
    reporters: fc.integer({ min: 1, max: 60 }),
    honeypot: fc.integer({ min: 0, max: 4 }),
    ageDays: fc.double({ min: -1, max: 200, noNaN: true }),
    spanDays: fc.double({ min: 0, max: 60, noNaN: true }),
    severity: fc.integer({ min: 1, max: 10 }),
    feedback: fc.integer({ min: 0, max: 6 }),
  })
  .map(
    (o): ScoreInput => {
      let decaySum = 0;
      for (let k = 0; k < o.count; k++) decaySum += decayContribution(new Date(NOW.getTime() - (o.ageDays + (o.spanDays * k) / o.count) * DAY));
      return {
        reportCount: o.count,
        uniqueReporters: Math.min(o.reporters, o.count),
        honeypotReports: Math.min(o.honeypot, o.count),
        decaySum,
        lastReportedAt: new Date(NOW.getTime() - o.ageDays * DAY),
        maxSeverity: o.severity,
        whitelisted: false,
        positiveFeedback: o.feedback,
      };
    },
  );

const scoreAt = (input: ScoreInput, ms: number) => computeScore(input, new Date(ms)).abuseConfidencePercentage;

describe('scoreHoldsUntil', () => {
  it('names a moment at which the score is still the same, and within a second of its first change', () => {
    fc.assert(
      fc.property(arbitraryInput, fc.double({ min: 0, max: 1, noNaN: true }), (input, where) => {
        const score = scoreAt(input, NOW.getTime());
        const until = scoreHoldsUntil(input, NOW, score);
        if (until === null) {
          // It never changes: the same 20 years on, and at any moment between.
          expect(scoreAt(input, NOW.getTime() + 20 * 365 * DAY)).toBe(score);
          expect(scoreAt(input, NOW.getTime() + where * 20 * 365 * DAY)).toBe(score);
          return;
        }
        expect(until.getTime()).toBeGreaterThanOrEqual(NOW.getTime());
        expect(scoreAt(input, until.getTime())).toBe(score);
        expect(scoreAt(input, NOW.getTime() + where * (until.getTime() - NOW.getTime()))).toBe(score);
        expect(scoreAt(input, until.getTime() + 1_000)).toBeLessThan(score);
      }),
      { numRuns: 1000 },
    );
  });

  it('is null for a score of 0, and for a score made only of what does not decay', () => {
    const none: ScoreInput = { reportCount: 0, uniqueReporters: 0, honeypotReports: 0, decaySum: 0, lastReportedAt: null, maxSeverity: 0, whitelisted: false, positiveFeedback: 0 };
    expect(scoreHoldsUntil(none, NOW, 0)).toBeNull();
    // Three honeypot reports from one account, a year old: only the honeypot bonus is left.
    const old: ScoreInput = { ...none, reportCount: 3, uniqueReporters: 1, honeypotReports: 3, decaySum: 3 * decayContribution(new Date(NOW.getTime() - 2000 * DAY)), lastReportedAt: new Date(NOW.getTime() - 2000 * DAY), maxSeverity: 5 };
    const score = scoreAt(old, NOW.getTime());
    expect(score).toBe(15);
    expect(scoreHoldsUntil(old, NOW, score)).toBeNull();
  });

  it('says "now" when handed a score the inputs do not give (the regeneration then rescores it next time)', () => {
    const input = fc.sample(arbitraryInput, { numRuns: 1, seed: 7 })[0]!;
    expect(scoreHoldsUntil(input, NOW, scoreAt(input, NOW.getTime()) + 1)).toEqual(NOW);
  });
});
