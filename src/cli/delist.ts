import { InvalidArgumentError, Option, type Command } from 'commander';
import { DELIST_STATUSES } from '../db/entities/delisting.js';
import { DELIST_DAYS_MAX } from '../delisting/rules.js';
import type { DelistService, DelistReview } from '../delisting/service.js';
import type { Cli } from './context.js';


function days(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > DELIST_DAYS_MAX) throw new InvalidArgumentError(`must be an integer from 1 to ${DELIST_DAYS_MAX}`);
  return n;
}

function evidenceCount(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 20) throw new InvalidArgumentError('must be an integer from 1 to 20');
  return n;
}

/**
 * The service as the operator's commands use it (modules.ts): the decision mails go through the
 * server's mail settings (RELAY_SMTP_URL or the outbox, ACCOUNT_MAIL_FROM), and the command waits
 * for them before it ends.
 */
async function withService<T>(withModules: Cli['withModules'], work: (service: DelistService) => Promise<T>): Promise<T> {
  return withModules(async (modules) => {
    try {
      return await work(modules.delisting.service);
    } finally {
      await modules.account.mailer.settle();
      modules.account.mailer.close();
    }
  });
}

function line(r: DelistReview): string {
  const decided = r.decidedAt ? `  decided ${r.decidedAt} by ${r.decidedBy}${r.note ? `: ${r.note}` : ''}` : '';
  const evidence = r.evidence
    ? [
        `    evidence: ${r.evidence.total} report(s) with evidence${r.evidence.reports.length < r.evidence.total ? `, the newest ${r.evidence.reports.length} shown` : ''}`,
        ...r.evidence.reports.map((e) =>
          [`      report ${e.id} by account ${e.accountId} at ${e.reportedAt.toISOString()}`, ...e.evidence.split('\n').map((l) => `        ${l}`)].join('\n'),
        ),
      ]
    : [];
  return [
    `${r.id}  ${r.ip}  ${r.status}  ${r.proven ? 'proven' : 'not proven'}  ${r.createdAt}  ${r.email}${decided}`,
    `    ${r.reason.replace(/\n/g, '\n    ')}`,
    ...evidence,
  ].join('\n');
}

/** `delist list|approve|reject`: the operator's review of delisting requests. */
export function delistCommands(program: Command, { withModules, print }: Cli): void {
  const delist = program.command('delist').description('delisting requests: review them, approve (whitelist for N days) or reject');

  delist
    .command('list')
    .description('list requests, proven first, then oldest first (all but expired ones by default)')
    .addOption(new Option('--status <status>', 'only requests in this status').choices(DELIST_STATUSES))
    .option('--evidence <n>', 'with each request to decide, the private evidence of the newest N reports about its address', evidenceCount)
    .option('--json', 'print a JSON array')
    .action(async (opts: { status?: string; evidence?: number; json?: boolean }) => {
      const listed = await withService(withModules, (service) => service.list(opts.status, 500, { evidence: opts.evidence }));
      print(listed, !!opts.json, () => listed.map(line).join('\n') || 'no delisting requests');
    });

  delist
    .command('approve <id>')
    .description('approve an open request: whitelist its address or range for N days and mail the requester')
    .option('--days <n>', 'how long the address stays whitelisted (default DELIST_DAYS, 30)', days)
    .option('--note <text>', 'a note for the requester (one line)')
    .option('--json', 'print a JSON object')
    .action(async (id: string, opts: { days?: number; note?: string; json?: boolean }) => {
      const done = await withService(withModules, (service) => service.approve(id, { days: opts.days, note: opts.note }, { actor: 'cli' }));
      print(done, !!opts.json, () => `approved ${done.id}: ${done.ip} is whitelisted until ${done.whitelistUntil}; it leaves the list at the next regeneration`);
    });

  delist
    .command('reject <id>')
    .description('reject an open or unconfirmed request with a note; the address may not ask again for 7 days')
    .requiredOption('--note <text>', 'why (mailed to the requester; one line)')
    .option('--json', 'print a JSON object')
    .action(async (id: string, opts: { note: string; json?: boolean }) => {
      const done = await withService(withModules, (service) => service.reject(id, { note: opts.note }, { actor: 'cli' }));
      print(done, !!opts.json, () => `rejected ${done.id} (${done.ip})`);
    });
}
