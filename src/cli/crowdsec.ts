import { InvalidArgumentError, type Command } from 'commander';
import { DEFAULT_BOUNCER_CONFIDENCE } from '../crowdsec/bouncers.js';
import type { Bouncer } from '../crowdsec/repository.js';
import { positiveInt, type Cli } from './context.js';

/** The `bouncers` commands: CrowdSec bouncers and their choice of list. */
export function bouncerCommands(program: Command, { io, withModules, print }: Cli): void {
  const bouncerCommands = program.command('bouncers').description('CrowdSec bouncers: a key each for /crowdsec/v1, with its choice of list');

  function score(value: string): number {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0 || n > 100) throw new InvalidArgumentError('must be a score from 0 to 100');
    return n;
  }
  // Commander turns a parser's null into '': `all` and `none` stay words until the action.
  function categoryList(value: string): number[] | 'all' {
    if (value === 'all') return value;
    if (!/^\d+(,\d+)*$/.test(value)) throw new InvalidArgumentError('must be category ids separated by commas (18,22), or all');
    return value.split(',').map(Number);
  }
  const limitOf = (value: string): number | 'none' => (value === 'none' ? value : positiveInt(value));
  /** The options of `bouncers add|set` as the service takes them. */
  const bouncerOptions = (opts: { confidence?: number; categories?: number[] | 'all'; limit?: number | 'none' }) => ({
    confidence: opts.confidence,
    categories: opts.categories === 'all' ? null : opts.categories,
    limit: opts.limit === 'none' ? null : opts.limit,
  });

  /** One line per bouncer for `bouncers list`. */
  function bouncerLine(b: Bouncer): string {
    const at = (d: Date | null) => (d ? d.toISOString() : 'never');
    const choice = `confidence >= ${b.confidence}${b.categories ? `, categories ${b.categories.join(',')}` : ''}${b.limit ? `, at most ${b.limit}` : ''}`;
    return [b.name, `${b.keyPrefix}…`, choice, `last pull ${at(b.lastPullAt)}`, b.lastIp ?? '-', b.userAgent ?? '-'].join('  ');
  }

  bouncerCommands
    .command('add <name>')
    .description('make a bouncer and print its key once (put it in the bouncer\'s api_key; only its hash is kept)')
    .option('--confidence <score>', 'the lowest abuse confidence score it blocks (0-100)', score, DEFAULT_BOUNCER_CONFIDENCE)
    .option('--categories <ids>', 'only addresses reported with one of these threat categories (18,22), or all', categoryList)
    .option('--limit <n>', 'at most this many addresses, highest scores first (none: all)', limitOf)
    .option('--json', 'print one JSON object')
    .action(async (name: string, opts: { confidence: number; categories?: number[] | 'all'; limit?: number | 'none'; json?: boolean }) => {
      const { bouncer, key } = await withModules((s) => s.crowdsec.bouncers.add(name, bouncerOptions(opts)));
      print({ name: bouncer.name, key, prefix: bouncer.keyPrefix, confidence: bouncer.confidence, categories: bouncer.categories, limit: bouncer.limit }, !!opts.json, () =>
        [
          `API key for '${bouncer.name}':`,
          '',
          `   ${key}`,
          '',
          'It is shown this once; only its hash is kept. In the bouncer\'s configuration:',
          '   api_url: https://<this server>/crowdsec/',
          `   api_key: ${key}`,
        ].join('\n'),
      );
    });

  bouncerCommands
    .command('list')
    .description('list the bouncers: name, key prefix, choice of list, last pull, address and user agent')
    .option('--json', 'print a JSON array')
    .action(async (opts: { json?: boolean }) => {
      const listed = await withModules((s) => s.crowdsec.bouncers.list());
      print(listed, !!opts.json, () => listed.map(bouncerLine).join('\n') || 'no bouncers');
    });

  bouncerCommands
    .command('set <name>')
    .description('change what a bouncer blocks; its next pull adds and deletes the difference')
    .option('--confidence <score>', 'the lowest abuse confidence score it blocks (0-100)', score)
    .option('--categories <ids>', 'threat-category ids (18,22), or all', categoryList)
    .option('--limit <n>', 'at most this many addresses (none: all)', limitOf)
    .option('--json', 'print one JSON object')
    .action(async (name: string, opts: { confidence?: number; categories?: number[] | 'all'; limit?: number | 'none'; json?: boolean }) => {
      const bouncer = await withModules((s) => s.crowdsec.bouncers.set(name, bouncerOptions(opts)));
      print(bouncer, !!opts.json, () => bouncerLine(bouncer));
    });

  bouncerCommands
    .command('delete <name>')
    .description('delete a bouncer; its key stops working at once')
    .action(async (name: string) => {
      const removed = await withModules((s) => s.crowdsec.bouncers.remove(name));
      if (!removed) io.exitCode = 1;
      io.stdout.write(removed ? `deleted bouncer ${name}\n` : `no bouncer ${name}\n`);
    });

}
