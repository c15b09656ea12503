import { Option, type Command } from 'commander';
import { ROLES, type Role } from '../roles.js';
import { systemClock } from '../clock.js';
import { positiveInt, type Cli } from './context.js';

/** The `keys` commands: API keys and the accounts they belong to. */
export function keyCommands(program: Command, { io, withModules, print }: Cli): void {
  const keys = program.command('keys').description('create, list and revoke API keys');

  keys
    .command('create')
    .description('create an account with a new API key (shown once), or a further key for --account')
    .addOption(new Option('--role <role>', 'role of the new account').choices(ROLES).default('free'))
    .option('--licences <n>', 'business licences (2-20)', positiveInt)
    .option('--email <email>', 'contact address of the account')
    .option('--name <name>', 'a name for the key (shown by /verify-key as keyName), e.g. the site it is for')
    .option('--account <id>', 'add the key to this existing account instead', positiveInt)
    .option('--json', 'print one JSON object')
    .action(async (opts: { role: Role; licences?: number; email?: string; account?: number; name?: string; json?: boolean }) => {
      const created = await withModules((s) =>
        s.keys.keys.create({
          role: opts.role,
          licences: opts.licences,
          email: opts.email,
          accountId: opts.account,
          name: opts.name,
        }),
      );
      print(created, !!opts.json, () =>
        [
          `account ${created.accountId} (${created.role}${created.role === 'business' ? `, ${created.licences} licences` : ''})`,
          `key id  ${created.keyId}`,
          `key     ${created.key}`,
          'The key is shown this once; only its hash is stored.',
        ].join('\n'),
      );
    });

  keys
    .command('list')
    .description('list keys (prefix, account, role, state); never the keys themselves')
    .option('--json', 'print a JSON array')
    .action(async (opts: { json?: boolean }) => {
      const listed = await withModules((s) => s.keys.keys.list());
      print(listed, !!opts.json, () =>
        listed
          .map((k) =>
            [k.keyId, k.prefix + '…', `account ${k.accountId}`, k.role, k.revokedAt ? `revoked ${k.revokedAt}` : 'active', k.name].join('  ').trimEnd(),
          )
          .join('\n') || 'no keys',
      );
    });

  keys
    .command('revoke <keyId>')
    .description('revoke a key; it stops working at once')
    .option('--json', 'print a JSON object')
    .action(async (keyId: string, opts: { json?: boolean }) => {
      const revoked = await withModules((s) => s.keys.keys.revoke(keyId, systemClock.now()));
      if (!revoked) {
        io.stderr.write(`no active key ${keyId}\n`);
        io.exitCode = 1;
      }
      print({ keyId, revoked }, !!opts.json, () => (revoked ? `revoked ${keyId}` : `nothing revoked`));
    });

}
