import type { Command } from 'commander';
import { bundleBalance } from '../relay/ledger.repository.js';
import { BUNDLES } from '../relay/policy.js';
import type { RelayMessageView } from '../relay/repository.js';
import { TEMPLATES_TTL_MS } from '../relay/delivery/templates.js';
import { positiveInt, type Cli } from './context.js';

/** The relay's commands: prepaid bundles, where each message stands, the SMS templates. */
export function relayCommands(program: Command, { io, withDatabase, withModules, print }: Cli): void {
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

}
