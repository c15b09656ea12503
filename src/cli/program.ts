import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { loadConfig } from '../config.js';
import { connectDatabase, type Database, type MigrateMode } from '../db/connect.js';
import { openGeoIp } from '../geo/geoip.js';
import { consoleProgress } from '../progress.js';
import { ReputationRepository } from '../reputation/repository.js';
import { BULK_REPORT_MAX_BYTES, BULK_REPORT_MAX_LINES, ReputationService } from '../reputation/service.js';
import { ROLES, type Role } from '../roles.js';
import { createLogger } from '../logging.js';
import { checkZone, writeDnsblFile } from '../blacklist/dnsbl.js';
import { systemClock } from '../clock.js';
import type { Logger } from 'pino';
import type { GeoIp } from '../geo/geoip.js';
import { buildModules, type Modules } from '../modules.js';
import { bundleBalance } from '../relay/ledger.repository.js';
import { BUNDLES } from '../relay/policy.js';
import type { RelayMessageView } from '../relay/repository.js';
import { writeFile } from 'node:fs/promises';
import { CATALOGUE_TTL_MS, CUSTOM_ID_MAX, CUSTOM_ID_MIN } from '../categories/service.js';
import { TEMPLATES_TTL_MS } from '../relay/delivery/templates.js';
import { generateSigningKey, publicKeyBase64, readSigningKey } from '../rules/rulesets.js';
import { AccountRepository } from '../account/repository.js';
import { accountCommands } from './accounts.js';
import { delistCommands } from './delist.js';
import { maintainReports } from '../account/job.js';
import { DEFAULT_BOUNCER_CONFIDENCE } from '../crowdsec/bouncers.js';
import type { Bouncer } from '../crowdsec/repository.js';
import { escapeUnprintable, printableJson } from '../text.js';
import { parseAddress } from '../address.js';

/** For the commands that look no address up: the GeoIP data (seconds to load) is not opened. */
const NO_GEOIP: GeoIp = {
  lookup() {
    throw new Error('internal error: this command did not open the GeoIP data');
  },
};

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


  function positiveInt(value: string): number {
    const n = Number(value);
    if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be a positive integer');
    return n;
  }

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

  /**
   * A command's work with the areas' modules (modules.ts), built once for it. The GeoIP data
   * takes a while to load and only the commands that look addresses up open it (`geo`).
   */
  async function withModules<T>(work: (modules: Modules, db: Database) => Promise<T>, options: { geo?: GeoIp; migrate?: MigrateMode } = {}): Promise<T> {
    return withDatabase(
      (db, logger) => work(buildModules({ orm: db.orm, pool: db.pool, replicas: db.replicas, clock: systemClock, logger, config: loadConfig(io.env), geo: options.geo ?? NO_GEOIP }), db),
      options.migrate,
    );
  }

  /**
   * Every answer of a command goes out here, as JSON or as text: what users gave (key names, a
   * bouncer's User-Agent, provider errors …) reaches the operator's terminal with its control and
   * bidi characters escaped (src/text.ts), so it cannot act on the terminal or reorder a line.
   */
  function print(value: unknown, json: boolean, text: () => string): void {
    io.stdout.write(json ? printableJson(value) + '\n' : escapeUnprintable(text()) + '\n');
  }

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

  const whitelist = program.command('whitelist').description('addresses and ranges that always score 0 and never appear on the blacklist');

  whitelist
    .command('add <ipOrCidr>')
    .description('whitelist an address or CIDR range (e.g. 203.0.113.9 or 2001:db8::/32)')
    .option('--note <text>', 'why it is whitelisted', '')
    .option('--json', 'print a JSON object')
    .action(async (input: string, opts: { note: string; json?: boolean }) => {
      const result = await withModules((s) => s.reputation.whitelist.add(input, opts.note));
      print(result, !!opts.json, () => (result.added ? `whitelisted ${result.range}` : `${result.range} was already whitelisted`));
    });

  whitelist
    .command('remove <ipOrCidr>')
    .description('remove an address or range from the whitelist')
    .option('--json', 'print a JSON object')
    .action(async (input: string, opts: { json?: boolean }) => {
      const result = await withModules((s) => s.reputation.whitelist.remove(input));
      if (!result.removed) io.exitCode = 1;
      print(result, !!opts.json, () => (result.removed ? `removed ${result.range}` : `${result.range} is not whitelisted`));
    });

  whitelist
    .command('list')
    .description('list the whitelist')
    .option('--json', 'print a JSON array')
    .action(async (opts: { json?: boolean }) => {
      const entries = await withModules((s) => s.reputation.whitelist.list());
      print(entries, !!opts.json, () => entries.map((e) => `${e.range}  ${e.note}${e.expiresAt ? `  (until ${e.expiresAt})` : ''}`.trimEnd()).join('\n') || 'the whitelist is empty');
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
        const result = await withModules((s) => s.relay.ledger.manual(kind, opts.account, opts.bundle));
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

  const relay = program.command('relay').description('the 2FA relay\'s messages: where each one stands');

  /** One message's lifecycle as lines: each step with its time. */
  function messageText(m: RelayMessageView): string {
    const at = (d: Date | null) => (d ? new Date(d).toISOString() : '-');
    return [
      `message ${m.id}  ${m.channel}  ${m.status}  account ${m.account_id}  to ${m.recipient}${m.site ? `  site ${m.site}` : ''}`,
      `  queued    ${at(m.created_at)}  (${m.funded_by})`,
      `  sending   ${at(m.sending_at)}  attempts ${m.attempts}`,
      `  sent      ${at(m.sent_at)}${m.provider ? `  via ${m.provider}${m.provider_id ? ` as ${m.provider_id}` : ''}` : ''}`,
      `  receipt   ${at(m.receipt_at)}${m.status === 'delivered' || m.status === 'undelivered' ? `  ${m.status}` : ''}${m.receipt_error ? `  error ${m.receipt_error}` : ''}`,
      `  finished  ${at(m.finished_at)}${m.last_error ? `  last error: ${m.last_error}` : ''}`,
    ].join('\n');
  }

  relay
    .command('messages')
    .description('an account\'s relay messages, newest first: status, recipient, provider, times')
    .requiredOption('--account <id>', 'account id', positiveInt)
    .option('--limit <n>', 'how many', positiveInt, 50)
    .option('--json', 'print a JSON array')
    .action(async (opts: { account: number; limit: number; json?: boolean }) => {
      const rows = await withModules((s) => s.relay.messages.list(opts.account, Math.min(opts.limit, 10_000)));
      print(rows, !!opts.json, () =>
        rows
          .map((m) =>
            [String(m.id).padStart(8), new Date(m.created_at).toISOString(), m.channel.padEnd(4), m.status.padEnd(11), m.provider ?? '-', m.recipient].join('  '),
          )
          .join('\n') || `account ${opts.account} has sent no relay message`,
      );
    });

  relay
    .command('message <queueId>')
    .description('one relay message (the queue_id of its send): each step of its delivery with its time')
    .option('--json', 'print a JSON object')
    .action(async (queueId: string, opts: { json?: boolean }) => {
      const message = await withModules((s) => s.relay.messages.get(positiveInt(queueId)));
      if (!message) {
        io.exitCode = 1;
        io.stderr.write(`no relay message ${queueId}\n`);
        return;
      }
      print(message, !!opts.json, () => messageText(message));
    });

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

  const templates = program.command('templates').description('SMS templates of the relay: {code} and {expiry} are filled in on the server');

  templates
    .command('list')
    .description('list the templates and their languages')
    .option('--json', 'print a JSON array')
    .action(async (opts: { json?: boolean }) => {
      const rows = await withModules((s) => s.relay.templates.list());
      print(rows, !!opts.json, () => rows.map((r) => `${r.code.padEnd(22)} ${r.lang}  ${r.builtin ? '(built in) ' : ''}${r.body}`).join('\n'));
    });

  templates
    .command('set <code> <lang> <text>')
    .description('add or replace a template text in a language, e.g. set 2fa_login it "Il tuo codice è {code}. Scade tra {expiry}."')
    .action(async (code: string, lang: string, text: string) => {
      await withModules((s) => s.relay.templates.set(code, lang, text));
      io.stdout.write(`template ${code} (${lang}) saved; every server process uses it within ${TEMPLATES_TTL_MS / 1000} s\n`);
    });

  templates
    .command('remove <code> <lang>')
    .description('remove a template text')
    .action(async (code: string, lang: string) => {
      const removed = await withModules((s) => s.relay.templates.remove(code, lang));
      if (!removed) io.exitCode = 1;
      io.stdout.write(removed ? `removed ${code} (${lang})\n` : `no template ${code} (${lang})\n`);
    });

  const rules = program.command('rules').description('signed rule sets for the ReportedIP Hive plugin (served at /api/v2/rules/{name})');

  rules
    .command('keygen')
    .description('make an Ed25519 signing key: writes the private key (set RULES_SIGNING_KEY_FILE to it) and prints the public key to pin in Hive')
    .requiredOption('--out <file>', 'where to write the private key (PEM, readable by its owner only)')
    .action(async (opts: { out: string }) => {
      const { privateKeyPem, publicKey } = generateSigningKey();
      await writeFile(opts.out, privateKeyPem, { mode: 0o600, flag: 'wx' });
      io.stdout.write(`private key written to ${opts.out}\npublic key (pin it in Hive): ${publicKey}\n`);
    });

  rules
    .command('public-key')
    .description('print the public key of RULES_SIGNING_KEY_FILE, as a Hive site pins it')
    .action(async () => {
      const file = loadConfig(io.env).rules.signingKeyFile;
      if (!file) throw new Error('RULES_SIGNING_KEY_FILE is not set');
      io.stdout.write(`${publicKeyBase64(await readSigningKey(file))}\n`);
    });

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

  /**
   * Reads a CSV of reports in the format of POST /bulk-report (`ip,categories,comment`, categories
   * joined by `|`) in chunks of what one request may carry, so each chunk is checked and stored
   * exactly as the API would, in its own transaction.
   */
  async function* csvChunks(file: string): AsyncGenerator<{ csv: string; firstLine: number; bytesRead: number }> {
    let lines: string[] = [];
    let bytes = 0;
    let firstLine = 1;
    let lineNo = 0;
    let bytesRead = 0;
    for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
      lineNo++;
      const size = Buffer.byteLength(line, 'utf8') + 1;
      bytesRead += size;
      if (lines.length === BULK_REPORT_MAX_LINES || bytes + size > BULK_REPORT_MAX_BYTES) {
        yield { csv: lines.join('\n'), firstLine, bytesRead: bytesRead - size };
        lines = [];
        bytes = 0;
        firstLine = lineNo;
      }
      lines.push(line);
      bytes += size;
    }
    if (lines.length) yield { csv: lines.join('\n'), firstLine, bytesRead };
  }

  const geoCommands = program.command('geo').description('the GeoIP data stored with reported addresses');
  geoCommands
    .command('backfill-asn')
    .description('fill the AS (GET /check-asn) of reported addresses stored without one, from the GeoIP data, in batches')
    .option('--batch <n>', 'addresses per batch (one UPDATE each)', positiveInt, 5_000)
    .option('--json', 'print a JSON object')
    .action(async (opts: { batch: number; json?: boolean }) => {
      const config = loadConfig(io.env);
      const progress = consoleProgress(io.stderr);
      const result = await withModules(async (s, db) => {
        const geo = await openGeoIp({ ...config.geoip, progress });
        const reputation = new ReputationService(new ReputationRepository(db.pool), s.categories.service, geo, systemClock);
        const step = progress.step('filling ASNs');
        const totals = await reputation.backfillAsn(opts.batch, (scanned) => step.update(scanned));
        step.done(totals);
        return totals;
      });
      print(result, !!opts.json, () => `filled the AS of ${result.filled} of ${result.scanned} address(es) stored without one`);
    });

  const reportCommands = program.command('reports').description('reports: imports on behalf of an account, and their retention');

  reportCommands
    .command('expire')
    .description(
      'make the coming months\' partitions and take out the reports older than REPORT_RETENTION_DAYS now, recomputing the addresses they concerned (the server does it hourly)',
    )
    .option('--json', 'print a JSON object')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(io.env);
      const result = await withDatabase((db) => maintainReports(db.pool, systemClock, { reportRetentionMs: config.reportRetentionMs }));
      print(result, !!opts.json, () =>
        [
          result.created.length ? `created ${result.created.join(', ')}` : 'no partition to create',
          result.partitions.length ? `dropped ${result.partitions.join(', ')}` : 'no month to drop',
          `${result.reports} reports taken out, ${result.addresses} addresses recomputed`,
        ].join('; '),
      );
    });

  reportCommands
    .command('import <file>')
    .description('import a CSV of reports (ip,categories,comment as in POST /bulk-report) for an account; reports are dated now')
    .requiredOption('--account <id>', 'the reporting account', positiveInt)
    .option('--reporter-ip <ip>', 'the address the reports came from (its country feeds the attack map)', '127.0.0.1')
    .option('--json', 'print a JSON object')
    .action(async (file: string, opts: { account: number; reporterIp: string; json?: boolean }) => {
      const config = loadConfig(io.env);
      const progress = consoleProgress(io.stderr);
      const result = await withModules(async (s, db) => {
        const account = await new AccountRepository(db.pool).roleOf(opts.account);
        if (!account) throw new Error(`no account ${opts.account}`);
        const caller = { keyId: 'cli', keyName: 'cli', accountId: opts.account, role: account.role, licences: account.licences };
        const geo = await openGeoIp({ ...config.geoip, progress });
        // Not the services' reputation: an operator's import is neither metered nor gathered for a
        // group commit, each chunk is written as it is read.
        const reputation = new ReputationService(new ReputationRepository(db.pool), s.categories.service, geo, systemClock);
        const step = progress.step(`importing ${file}`, (await stat(file)).size);
        const totals = { stored: 0, refused: 0, errors: [] as { line: number; input: string; error: string }[] };
        for await (const chunk of csvChunks(file)) {
          // Operator imports are not metered: the account's daily report quota stays as it is.
          const { data: answer } = await reputation.bulkReport(caller, opts.reporterIp, chunk.csv, undefined);
          totals.stored += answer.success_count;
          totals.refused += answer.error_count;
          for (const e of answer.errors) if (totals.errors.length < 100) totals.errors.push({ ...e, line: e.line + chunk.firstLine - 1 });
          step.update(chunk.bytesRead);
        }
        step.done({ stored: totals.stored, refused: totals.refused });
        return totals;
      });
      print(result, !!opts.json, () =>
        [
          `stored ${result.stored} report(s), refused ${result.refused} line(s)`,
          ...result.errors.slice(0, 20).map((e) => `  line ${e.line}: ${e.error}: ${e.input}`),
        ].join('\n'),
      );
      if (result.refused) io.exitCode = 1;
    });

  reportCommands
    .command('evidence <ip>')
    .description("the private evidence of the reports about an address (redacted as stored), newest first: every reporter's, or one account's")
    .option('--account <id>', "only this account's reports", positiveInt)
    .option('--limit <n>', 'at most this many reports', positiveInt, 20)
    .option('--json', 'print a JSON object')
    .action(async (ip: string, opts: { account?: number; limit: number; json?: boolean }) => {
      const address = parseAddress(ip.trim());
      if (!address) throw new Error(`${ip} is not an IPv4 or IPv6 address`);
      const result = await withDatabase((db) => new ReputationRepository(db.pool).evidence(address.text, opts.account, opts.limit, 0));
      print({ ip: address.text, ...result }, !!opts.json, () =>
        [
          `${result.total} report(s) about ${address.text} with evidence${result.reports.length < result.total ? `, the newest ${result.reports.length} shown` : ''}`,
          ...result.reports.map((r) =>
            [`report ${r.id} by account ${r.accountId} at ${r.reportedAt.toISOString()} (categories ${r.categories.join(', ')})`, ...r.evidence.split('\n').map((l) => `  ${l}`)].join('\n'),
          ),
        ].join('\n'),
      );
    });

  accountCommands(program, withDatabase, print, io.env);
  delistCommands(program, (work) => withModules(work), print);

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
