import cliProgress from 'cli-progress';
import type { Logger } from 'pino';

/**
 * Progress of long work (loading GeoIP data, seeding, imports, regenerating the blacklist).
 * On a terminal each step draws a bar with its rate and time left (cli-progress, on stderr so
 * that stdout keeps only a command's answer); anywhere else (a log file, a container, CI) each
 * step writes one log line when it ends, with its count and duration, and nothing while it runs.
 */
export interface Step {
  /** Adds `by` units of work done. */
  advance(by?: number): void;
  /** Sets the work done so far. */
  update(done: number): void;
  /** Ends the step; `details` go into its log line. */
  done(details?: Record<string, unknown>): void;
}

export interface Progress {
  /** Starts a step of `total` units (1 when the work cannot be counted). */
  step(name: string, total?: number): Step;
}

/** Where a step's closing line goes when no bar is drawn. */
export type StepLog = (fields: Record<string, unknown>, message: string) => void;

export interface ProgressOptions {
  /** The terminal the bars go to (default stderr); no TTY, no bars. */
  stream?: NodeJS.WriteStream;
  /** Force bars on or off (default: whether `stream` is a TTY). */
  bars?: boolean;
}

/** Progress that draws bars on a terminal and otherwise logs one line per step. */
export function progress(log: StepLog, options: ProgressOptions = {}): Progress {
  const stream = options.stream ?? process.stderr;
  const bars = options.bars ?? stream.isTTY === true;
  return {
    step(name, requested = 1) {
      // An empty file or table is still one step to show, and a bar cannot divide by zero.
      const total = Math.max(1, requested);
      const started = performance.now();
      let current = 0;
      const bar = bars
        ? new cliProgress.SingleBar(
            {
              stream,
              format: `${name.padEnd(32)} {bar} {percentage}% | {value}/{total} | {duration_formatted}, ETA {eta_formatted}`,
              hideCursor: true,
              etaBuffer: 50,
              fps: 10,
            },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
      bar?.start(total, 0);
      return {
        advance(by = 1) {
          current += by;
          bar?.update(current);
        },
        update(done) {
          current = done;
          bar?.update(current);
        },
        done(details = {}) {
          bar?.update(total);
          bar?.stop();
          // Updates may be sparse (every few thousand units): a finished step did all of its total.
          const counted = total > 1 ? { count: total } : {};
          if (!bar) log({ step: name, ...counted, ms: Math.round(performance.now() - started), ...details }, `${name}: done`);
        },
      };
    },
  };
}

/**
 * Progress for a command line: bars on a terminal, else plain lines on stderr (or on `out`, a
 * writer of the caller's, which gets the lines and never bars).
 */
export function consoleProgress(out: { write(text: string): unknown } = process.stderr): Progress {
  return progress(
    (fields, message) => {
      const { step: _step, ...rest } = fields;
      const extra = Object.entries(rest).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`);
      out.write(`${message} (${extra.join(', ')})\n`);
    },
    out === process.stderr ? {} : { bars: false },
  );
}

/** Progress for a server process: bars on a terminal, else one `info` line per step. */
export function logProgress(logger: Logger): Progress {
  return progress((fields, message) => logger.info(fields, message));
}

/** No progress at all (tests, and callers that report nothing). */
export const silentProgress: Progress = { step: () => ({ advance() {}, update() {}, done() {} }) };
