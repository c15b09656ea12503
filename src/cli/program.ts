import { Command, CommanderError } from 'commander';
import type { Logger } from 'pino';
import { systemClock } from '../clock.js';
import { loadConfig } from '../config.js';
import { connectDatabase, type Database, type MigrateMode } from '../db/connect.js';
import type { GeoIp } from '../geo/geoip.js';
import { createLogger } from '../logging.js';
import { buildModules, type Modules } from '../modules.js';
import { escapeUnprintable, printableJson } from '../text.js';
import { accountCommands } from './accounts.js';
import { blacklistCommands } from './blacklist.js';
import { categoryCommands } from './categories.js';
import type { Cli, CliIo } from './context.js';
import { bouncerCommands } from './crowdsec.js';
import { delistCommands } from './delist.js';
import { keyCommands } from './keys.js';
import { relayCommands } from './relay.js';
import { reputationCommands } from './reputation.js';
import { rulesCommands } from './rules.js';

export type { CliIo } from './context.js';

/** For the commands that look no address up: the GeoIP data (seconds to load) is not opened. */
const NO_GEOIP: GeoIp = {
  lookup() {
    throw new Error('internal error: this command did not open the GeoIP data');
  },
};

/**
 * The operator's command line: `npx trs <command>` (the package's `bin`, compiled), or
 * `npm run --silent cli -- <command>` from source. It connects to the same database as the
 * server (DATABASE_URL, or the embedded one under DATA_DIR) and, like the server, migrates it
 * unless MIGRATE_ON_START=false.
 */
export function createProgram(io: CliIo): Command {
  const program = new Command('trs')
    .description('Threat-Reputation Service administration')
    .showHelpAfterError()
    // Commander's errors (an unknown command, a bad option, --help) end the run, not the
    // process: runTrs returns their exit code. Subcommands inherit both settings.
    .exitOverride()
    .configureOutput({ writeOut: (text) => void io.stdout.write(text), writeErr: (text) => void io.stderr.write(text) });

  // What every area's commands are given (cli/context.ts says what each does).
  async function withDatabase<T>(work: (db: Database, logger: Logger) => Promise<T>, migrate?: MigrateMode): Promise<T> {
    const config = loadConfig(io.env);
    // The CLI's own logs go to stderr so that stdout carries only the command's answer.
    const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, io.stderr as never);
    const db = await connectDatabase(config, logger, { migrate: migrate ?? (config.migrateOnStart ? 'apply' : 'verify'), prepared: false });
    try {
      return await work(db, logger);
    } finally {
      await db.close();
    }
  }

  async function withModules<T>(work: (modules: Modules, db: Database) => Promise<T>, options: { geo?: GeoIp; migrate?: MigrateMode } = {}): Promise<T> {
    return withDatabase(
      (db, logger) => work(buildModules({ orm: db.orm, pool: db.pool, replicas: db.replicas, clock: systemClock, logger, config: loadConfig(io.env), geo: options.geo ?? NO_GEOIP }), db),
      options.migrate,
    );
  }

  function print(value: unknown, json: boolean, text: () => string): void {
    io.stdout.write(json ? printableJson(value) + '\n' : escapeUnprintable(text()) + '\n');
  }

  // Each area's commands (src/cli/<area>.ts), in the order `trs --help` lists them.
  const cli: Cli = { io, withDatabase, withModules, print };
  const areas = [keyCommands, reputationCommands, relayCommands, categoryCommands, rulesCommands, bouncerCommands, blacklistCommands, accountCommands, delistCommands];
  for (const commands of areas) commands(program, cli);

  program
    .command('db')
    .description('database administration')
    .command('migrate')
    .description('apply pending migrations, under the same lock as the server (which also does it on start unless MIGRATE_ON_START=false)')
    .option('--json', 'print a JSON object')
    .action(async (opts: { json?: boolean }) => {
      const applied = await withDatabase(async (db) => db.applied, 'apply');
      print({ applied }, !!opts.json, () =>
        applied.length ? `applied ${applied.length} migration(s): ${applied.join(', ')}` : 'database is up to date',
      );
    });

  return program;
}

/**
 * One run of `trs <argv>` (argv without the node and script paths): resolves with its exit code,
 * 0, or 1 when a command failed (and whatever commander's own errors exit with, 0 for --help).
 * The entry (index.ts) runs it on the process's environment and streams; the tests run it in
 * their own process, with an environment of their own and captured output.
 */
export async function runTrs(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    await createProgram(io).parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has written its message already.
      io.exitCode = err.exitCode;
    } else {
      io.stderr.write(`error: ${escapeUnprintable(err instanceof Error ? err.message : String(err))}\n`);
      io.exitCode = 1;
    }
  }
  return io.exitCode;
}
