import { Command, InvalidArgumentError, Option } from 'commander';
import { loadConfig } from '../config.js';
import { connectDatabase, type Database } from '../db/connect.js';
import { ROLES, type Role } from '../db/entities.js';
import { createLogger } from '../http/logging.js';
import { KeyService } from '../keys/keys.js';
import { Whitelist } from '../reputation/whitelist.js';
import { blacklistSnapshots } from '../blacklist/snapshots.js';
import { systemClock } from '../clock.js';
import { BundleLedger, bundleBalance } from '../relay/ledger.js';
import { BUNDLES } from '../relay/policy.js';

/**
 * The operator's command line: `npm run --silent cli -- <command>`. It connects to the same
 * database as the server (DATABASE_URL, or the embedded one under DATA_DIR).
 */
const program = new Command('trs').description('Threat-Reputation Service administration').showHelpAfterError();

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

async function withDatabase<T>(work: (db: Database) => Promise<T>): Promise<T> {
  const config = loadConfig();
  // The CLI's own logs go to stderr so that stdout carries only the command's answer.
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel, process.stderr as never);
  const db = await connectDatabase(config, logger);
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}

function print(value: unknown, json: boolean, text: () => string): void {
  process.stdout.write(json ? JSON.stringify(value) + '\n' : text() + '\n');
}

const keys = program.command('keys').description('create, list and revoke API keys');

keys
  .command('create')
  .description('create an account with a new API key (shown once), or a further key for --account')
  .addOption(new Option('--role <role>', 'role of the new account').choices(ROLES).default('free'))
  .option('--licences <n>', 'business licences (2-20)', positiveInt)
  .option('--email <email>', 'contact address of the account')
  .option('--account <id>', 'add the key to this existing account instead', positiveInt)
  .option('--json', 'print one JSON object')
  .action(async (opts: { role: Role; licences?: number; email?: string; account?: number; json?: boolean }) => {
    const created = await withDatabase((db) =>
      new KeyService(db.orm.em).create({
        role: opts.role,
        licences: opts.licences,
        email: opts.email,
        accountId: opts.account,
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
    const listed = await withDatabase((db) => new KeyService(db.orm.em).list());
    print(listed, !!opts.json, () =>
      listed
        .map((k) =>
          [k.keyId, k.prefix + '…', `account ${k.accountId}`, k.role, k.revokedAt ? `revoked ${k.revokedAt}` : 'active'].join('  '),
        )
        .join('\n') || 'no keys',
    );
  });

keys
  .command('revoke <keyId>')
  .description('revoke a key; it stops working at once')
  .option('--json', 'print a JSON object')
  .action(async (keyId: string, opts: { json?: boolean }) => {
    const revoked = await withDatabase((db) => new KeyService(db.orm.em).revoke(keyId, new Date()));
    if (!revoked) {
      process.stderr.write(`no active key ${keyId}\n`);
      process.exitCode = 1;
    }
    print({ keyId, revoked }, !!opts.json, () => (revoked ? `revoked ${keyId}` : `nothing revoked`));
  });

const whitelist = program.command('whitelist').description('addresses and ranges that always score 0 and never appear on the blacklist');

whitelist
  .command('add <ipOrCidr>')
  .description('whitelist an address or CIDR range (e.g. 203.0.113.9 or 2001:db8::/32)')
  .option('--note <text>', 'why it is whitelisted', '')
  .option('--json', 'print a JSON object')
  .action(async (input: string, opts: { note: string; json?: boolean }) => {
    const result = await withDatabase((db) => new Whitelist(db.pool).add(input, opts.note));
    print(result, !!opts.json, () => (result.added ? `whitelisted ${result.range}` : `${result.range} was already whitelisted`));
  });

whitelist
  .command('remove <ipOrCidr>')
  .description('remove an address or range from the whitelist')
  .option('--json', 'print a JSON object')
  .action(async (input: string, opts: { json?: boolean }) => {
    const result = await withDatabase((db) => new Whitelist(db.pool).remove(input));
    if (!result.removed) process.exitCode = 1;
    print(result, !!opts.json, () => (result.removed ? `removed ${result.range}` : `${result.range} is not whitelisted`));
  });

whitelist
  .command('list')
  .description('list the whitelist')
  .option('--json', 'print a JSON array')
  .action(async (opts: { json?: boolean }) => {
    const entries = await withDatabase((db) => new Whitelist(db.pool).list());
    print(entries, !!opts.json, () => entries.map((e) => `${e.range}  ${e.note}`.trimEnd()).join('\n') || 'the whitelist is empty');
  });

const bundles = program.command('bundles').description('prepaid relay bundles (the payment webhook does the same)');

for (const [name, kind, what] of [
  ['credit', 'purchase', 'add a bundle\'s credits to the account'],
  ['refund', 'refund', 'take a bundle\'s credits back (the balance may go below zero)'],
] as const) {
  bundles
    .command(name)
    .description(what)
    .requiredOption('--account <id>', 'account id', positiveInt)
    .requiredOption('--bundle <bundleId>', `one of ${Object.keys(BUNDLES).join(', ')}`)
    .option('--json', 'print a JSON object')
    .action(async (opts: { account: number; bundle: string; json?: boolean }) => {
      const result = await withDatabase((db) => new BundleLedger(db.pool, systemClock).manual(kind, opts.account, opts.bundle));
      print({ accountId: opts.account, bundleId: opts.bundle, ...result }, !!opts.json, () =>
        `${name === 'credit' ? 'credited' : 'refunded'} ${opts.bundle}: ${result.channel} balance of account ${opts.account} is ${result.balance}`,
      );
    });
}

bundles
  .command('balance')
  .description('show the mail and SMS bundle balances of an account')
  .requiredOption('--account <id>', 'account id', positiveInt)
  .option('--json', 'print a JSON object')
  .action(async (opts: { account: number; json?: boolean }) => {
    const balances = await withDatabase(async (db) => ({
      mail: await bundleBalance(db.pool, opts.account, 'mail'),
      sms: await bundleBalance(db.pool, opts.account, 'sms'),
    }));
    print({ accountId: opts.account, ...balances }, !!opts.json, () => `mail ${balances.mail}, sms ${balances.sms}`);
  });

program
  .command('blacklist')
  .description('the blacklist snapshot')
  .command('regenerate')
  .description('score every reported address into a new snapshot now (the server does it every BLACKLIST_INTERVAL_MINUTES)')
  .option('--json', 'print a JSON object')
  .action(async (opts: { json?: boolean }) => {
    const result = await withDatabase((db) => blacklistSnapshots(db.pool, systemClock).regenerate());
    print(result, !!opts.json, () =>
      result.changed
        ? `new snapshot ${result.snapshotId}: ${result.entries} addresses`
        : `the list is unchanged (snapshot ${result.snapshotId}, ${result.entries} addresses)`,
    );
  });

program
  .command('db')
  .description('database administration')
  .command('migrate')
  .description('apply pending migrations (the server also does this on start)')
  .action(async () => {
    await withDatabase(async () => undefined);
    process.stdout.write('database is up to date\n');
  });

program.parseAsync().catch((err: unknown) => {
  process.stderr.write(`error: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
