import { InvalidArgumentError, type Command } from 'commander';
import { loadConfig } from '../config.js';
import { consoleProgress } from '../progress.js';
import { checkZone, writeDnsblFile } from '../blacklist/dnsbl.js';
import { type Cli } from './context.js';

/** The `blacklist` and `dnsbl` commands: regeneration now, the DNS blocklist zone file. */
export function blacklistCommands(program: Command, { io, withModules, print }: Cli): void {
  program
    .command('blacklist')
    .description('the blacklist snapshot')
    .command('regenerate')
    .description(
      'write a new snapshot now (the server does it every BLACKLIST_INTERVAL_MINUTES): the addresses changed since the last one and those whose score decayed are scored again, the others carried forward',
    )
    .option('--full', 'score every reported address again')
    .option('--json', 'print a JSON object')
    .action(async (opts: { json?: boolean; full?: boolean }) => {
      const result = await withModules((s) => s.blacklist.snapshots.regenerate(consoleProgress(io.stderr), { full: !!opts.full }));
      const scored = `${result.full ? 'full pass' : 'incremental'}, ${result.rescored} scored`;
      print(result, !!opts.json, () =>
        result.changed
          ? `new snapshot ${result.snapshotId}: ${result.entries} addresses (${scored})`
          : `the list is unchanged (snapshot ${result.snapshotId}, ${result.entries} addresses; ${scored})`,
      );
    });

  program
    .command('dnsbl')
    .description('the blacklist as a DNS blocklist for mail servers (served by rbldnsd)')
    .command('export')
    .description('write the current snapshot as an rbldnsd data file (combined dataset), replacing FILE whole (DNSBL_FILE makes the server do it after each regeneration)')
    .requiredOption('--out <file>', 'the data file to write')
    .option('--zone <name>', 'the zone rbldnsd serves (e.g. bl.example.com): adds its SOA and NS records (default DNSBL_ZONE)')
    .option('--confidence <n>', 'the lowest score listed, 0-100 (default DNSBL_CONFIDENCE, 90)', (value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 0 || n > 100) throw new InvalidArgumentError('must be an integer from 0 to 100');
      return n;
    })
    .option('--json', 'print a JSON object')
    .action(async (opts: { out: string; zone?: string; confidence?: number; json?: boolean }) => {
      const config = loadConfig(io.env);
      const zone = opts.zone === undefined ? config.dnsbl.zone : checkZone(opts.zone);
      const confidence = opts.confidence ?? config.dnsbl.confidence;
      const written = await withModules((s) =>
        writeDnsblFile(s.blacklist.snapshots, opts.out, { zone, confidence, publicUrl: config.web.publicUrl }),
      );
      print({ file: opts.out, zone: zone ?? null, confidence, ...written }, !!opts.json, () =>
        `wrote ${written.entries} addresses (confidence >= ${confidence}, snapshot ${written.snapshotId}) to ${opts.out}`,
      );
    });

}
