/**
 * Time: the one source of it, and the calendar arithmetic every window is made of. The windows
 * (the UTC day of the quotas, the 5-minute aggregation, the monthly relay period, the
 * 15-minute regeneration, the 30-minute cache) read `Clock.now()`, never `new Date()`, so that
 * tests move time instead of waiting for it.
 */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock a test can set and move. */
export class ManualClock implements Clock {
  constructor(private current: Date = new Date()) {}
  now(): Date {
    return new Date(this.current.getTime());
  }
  set(to: Date | string): void {
    this.current = new Date(to);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

export const MINUTE_MS = 60_000;
export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

/** The UTC calendar day of a moment, as a `date` column holds it: `2026-11-25`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** 00:00 UTC of the moment's day. */
export function startOfUtcDay(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
}

/** 00:00 UTC of the day after the moment: when the daily counters start again. */
export function nextUtcMidnight(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1));
}

/** The calendar month (UTC) of a moment, the end exclusive: the relay's monthly period. */
export function utcMonth(at: Date): { start: Date; end: Date } {
  return {
    start: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1)),
    end: new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 1)),
  };
}

/** Whole seconds from `from` until `until`, rounded up (a `Retry-After`); 0 once it has passed. */
export function secondsUntil(from: Date, until: Date): number {
  return Math.max(0, Math.ceil((until.getTime() - from.getTime()) / 1000));
}

/** The moment `ms` before another: the start of a window that ends now. */
export function before(at: Date, ms: number): Date {
  return new Date(at.getTime() - ms);
}
