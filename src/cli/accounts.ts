import { Option, type Command } from 'commander';
import pino from 'pino';
import { AccountService, accountSettings } from '../account/accounts.js';
import { AccountMailer } from '../account/mailer.js';
import { purgeAccounts, purgeSettingsOf } from '../account/job.js';
import { Sessions } from '../account/sessions.repository.js';
import { AuthThrottle } from '../account/throttle.repository.js';
import { systemClock } from '../clock.js';
import { loadConfig } from '../config.js';
import type { Database } from '../db/connect.js';
import { ROLES, type Role } from '../roles.js';
import { positiveInt, type Cli } from './context.js';


/** The account service for the operator's commands (they send no mail). */
function service(db: Database, env: NodeJS.ProcessEnv): AccountService {
  const web = loadConfig(env).web;
  const logger = pino({ level: 'silent' });
  const sessions = new Sessions(db.pool, systemClock, { absoluteMs: web.sessionAbsoluteMs, idleMs: web.sessionIdleMs });
  return new AccountService(db.pool, systemClock, new AccountMailer(undefined, logger), sessions, accountSettings(web), {
    throttle: new AuthThrottle(db.pool, systemClock),
  });
}

/** `accounts …` and `invites create`: what the operator does for web accounts. */
export function accountCommands(program: Command, { io, withDatabase, print }: Cli): void {
  const env = io.env;
  const accounts = program.command('accounts').description('web accounts: confirm addresses, change roles and licences, purge old data');

  accounts
    .command('verify <idOrEmail>')
    .description(
      "mark an account's address as confirmed (for servers that cannot send mail); an account whose password was set before " +
        'its address was confirmed (a web sign-up) is refused unless --reset-password',
    )
    .option('--reset-password', 'also clear its password, end its sessions and revoke its keys, and print a link with which the owner chooses a new password')
    .option('--json', 'print a JSON object')
    .action(async (idOrEmail: string, opts: { resetPassword?: boolean; json?: boolean }) => {
      const done = await withDatabase((db) => service(db, env).verifyByOperator(idOrEmail, { resetPassword: !!opts.resetPassword }));
      print(done, !!opts.json, () => {
        const account = `account ${done.accountId} (${done.email})`;
        if (!done.reset) return done.already ? `${account} was confirmed already` : `${account} is confirmed; it can sign in now`;
        const { link, expiresAt, sessionsEnded, keysRevoked } = done.reset;
        return [
          `${account} is confirmed; its password is cleared, ${sessionsEnded} session(s) ended and ${keysRevoked} key(s) revoked.`,
          `Give this link to the address's owner, by a way you trust (it works once, until ${expiresAt.toISOString()}); with it they choose a password:`,
          `  ${link}`,
          ...(link.startsWith('/') ? ["(PUBLIC_URL is not set: put the server's origin, such as https://trs.example.com, before it.)"] : []),
          'Should it expire before it is used, run this command again.',
        ].join('\n');
      });
    });

  accounts
    .command('set-role <accountId>')
    .description("change an account's role (and Business licences); recorded in its audit trail")
    .addOption(new Option('--role <role>', 'the new role').choices(ROLES).makeOptionMandatory())
    .option('--licences <n>', 'business licences (2-20)', positiveInt)
    .option('--json', 'print a JSON object')
    .action(async (accountId: string, opts: { role: Role; licences?: number; json?: boolean }) => {
      const id = positiveInt(accountId);
      const done = await withDatabase((db) => service(db, env).setRole(id, opts.role, opts.licences));
      print({ accountId: id, ...done }, !!opts.json, () => `account ${id} is ${done.role}${done.role === 'business' ? ` with ${done.licences} licences` : ''}`);
    });

  accounts
    .command('purge')
    .description(
      'delete ended sessions, used or expired links, old throttle windows, audit events past AUDIT_RETENTION_DAYS, key sites past 30 days, relay message contents past RELAY_PAYLOAD_RETENTION_HOURS, relay messages past RELAY_MESSAGE_RETENTION_DAYS, usage counters before yesterday, hourly statistics no window reads and sign-ups left unconfirmed for 30 days (the server does it hourly)',
    )
    .option('--json', 'print a JSON object')
    .action(async (opts: { json?: boolean }) => {
      const config = loadConfig(env);
      const purged = await withDatabase((db) => purgeAccounts(db.pool, systemClock, purgeSettingsOf(config)));
      print(purged ?? { busy: true }, !!opts.json, () =>
        purged
          ? `purged ${purged.sessions} sessions, ${purged.links} links and invites, ${purged.throttle} throttle windows, ${purged.audit} audit events, ${purged.keySites} key sites, ${purged.relayPayloads} relay message contents, ${purged.relayMessages} relay messages, ${purged.usageCounters} usage counters, ${purged.hourlyRollups} hourly statistics rows, ${purged.unverifiedAccounts} unconfirmed accounts, ${purged.whitelistExpired} expired whitelist entries, ${purged.delistRequests.expired} delisting requests expired and ${purged.delistRequests.deleted} deleted`
          : 'another process is purging right now',
      );
    });

  program
    .command('invites')
    .description('invite codes for SIGNUP=invite')
    .command('create')
    .description('make an invite code (shown once; only its hash is stored)')
    .option('--days <n>', 'days the code stays valid', positiveInt, 14)
    .option('--note <text>', 'who it is for', '')
    .option('--json', 'print a JSON object')
    .action(async (opts: { days: number; note: string; json?: boolean }) => {
      const invite = await withDatabase((db) => service(db, env).createInvite(opts.note, opts.days));
      const url = loadConfig(env).web.publicUrl;
      print({ ...invite, url: url && `${url}/account/register?invite=${invite.code}` }, !!opts.json, () =>
        [`invite code ${invite.code}`, `valid until ${invite.expiresAt.toISOString()}`, url ? `sign-up page: ${url}/account/register?invite=${invite.code}` : ''].filter(Boolean).join('\n'),
      );
    });
}
