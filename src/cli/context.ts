import { InvalidArgumentError } from 'commander';
import type { Logger } from 'pino';
import type { Database, MigrateMode } from '../db/connect.js';
import type { GeoIp } from '../geo/geoip.js';
import type { Modules } from '../modules.js';

/** Where a run of the command line reads its settings and writes its answers. */
export interface CliIo {
  /** The settings (DATABASE_URL, DATA_DIR, LOG_LEVEL …), as the server reads them. */
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  /** 0 until a command fails; the exit code of the run. */
  exitCode: number;
}

/**
 * What every area's commands (src/cli/<area>.ts) are given by the program (program.ts): the run's
 * settings and streams, the database, the areas' modules, and the one way to print an answer.
 */
export interface Cli {
  io: CliIo;
  /** A command's work on the database (connected, migrated as the server does, closed after). */
  withDatabase<T>(work: (db: Database, logger: Logger) => Promise<T>, migrate?: MigrateMode): Promise<T>;
  /**
   * A command's work with the areas' modules (modules.ts), built once for it. The GeoIP data
   * takes a while to load and only the commands that look addresses up open it (`geo`).
   */
  withModules<T>(work: (modules: Modules, db: Database) => Promise<T>, options?: { geo?: GeoIp; migrate?: MigrateMode }): Promise<T>;
  /**
   * Every answer of a command goes out here, as JSON or as text: what users gave (key names, a
   * bouncer's User-Agent, provider errors …) reaches the operator's terminal with its control and
   * bidi characters escaped (src/text.ts), so it cannot act on the terminal or reorder a line.
   */
  print(value: unknown, json: boolean, text: () => string): void;
}

/** An option's value that must be a positive integer. */
export function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}
