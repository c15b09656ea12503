import { InvalidArgumentError, type Command } from 'commander';
import { CATALOGUE_TTL_MS, CUSTOM_ID_MAX, CUSTOM_ID_MIN } from '../categories/service.js';
import { positiveInt, type Cli } from './context.js';

/** The `categories` commands: the threat-category catalogue. */
export function categoryCommands(program: Command, { io, withModules, print }: Cli): void {
  const categories = program.command('categories').description('the threat-category catalogue: the 30 of the specification, the web set 31-58, your own');

  categories
    .command('list')
    .description('list every category with its catalogue and whether it is enabled')
    .option('--json', 'print a JSON array')
    .action(async (opts: { json?: boolean }) => {
      const all = await withModules((s) => s.categories.service.all());
      print(all, !!opts.json, () =>
        all.map((c) => `${String(c.id).padStart(4)}  ${c.enabled ? 'on ' : 'off'}  ${c.catalogue.padEnd(6)}  sev ${String(c.severity_level).padStart(2)}  ${c.name}`).join('\n'),
      );
    });

  for (const [name, enabled] of [['enable', true], ['disable', false]] as const) {
    categories
      .command(`${name} <catalogue>`)
      .description(`${name} a whole catalogue: web (the ReportedIP clients' WordPress and web-application categories 31-58) or custom`)
      .option('--json', 'print a JSON object')
      .action(async (catalogue: string, opts: { json?: boolean }) => {
        if (catalogue !== 'web' && catalogue !== 'custom') throw new InvalidArgumentError('the catalogue is web or custom (core is always on)');
        const changed = await withModules((s) => s.categories.service.setCatalogue(catalogue, enabled));
        print({ catalogue, enabled, changed }, !!opts.json, () =>
          `${changed} ${catalogue} categories ${enabled ? 'enabled' : 'disabled'}; every server process uses the change within ${CATALOGUE_TTL_MS / 1000} s`,
        );
      });
  }

  categories
    .command('set <id>')
    .description(`add or change one of your own categories (ids ${CUSTOM_ID_MIN}-${CUSTOM_ID_MAX})`)
    .requiredOption('--name <name>', 'display name, one line')
    .requiredOption('--severity <1-10>', 'severity, feeds the score', positiveInt)
    .option('--description <text>', 'what it covers', '')
    .option('--json', 'print a JSON object')
    .action(async (id: string, opts: { name: string; severity: number; description: string; json?: boolean }) => {
      const entry = await withModules((s) =>
        s.categories.service.upsertCustom({ id: positiveInt(id), name: opts.name, description: opts.description, severity: opts.severity }),
      );
      print(entry, !!opts.json, () => `category ${entry.id} (${entry.name}, severity ${entry.severity_level}) is enabled`);
    });

  categories
    .command('disable-one <id>')
    .description('switch one of your own categories off (reports that carry it keep it)')
    .action(async (id: string) => {
      const done = await withModules((s) => s.categories.service.disableCustom(positiveInt(id)));
      if (!done) io.exitCode = 1;
      io.stdout.write(done ? `category ${id} disabled\n` : `no enabled operator category ${id}\n`);
    });

}
