import type { Command } from 'commander';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { loadConfig } from '../config.js';
import { openGeoIp } from '../geo/geoip.js';
import { consoleProgress } from '../progress.js';
import { ReputationRepository } from '../reputation/repository.js';
import { BULK_REPORT_MAX_BYTES, BULK_REPORT_MAX_LINES, ReputationService } from '../reputation/service.js';
import { systemClock } from '../clock.js';
import { AccountRepository } from '../account/repository.js';
import { maintainReports } from '../account/job.js';
import { parseAddress } from '../address.js';
import { positiveInt, type Cli } from './context.js';

/** The reputation's commands: the whitelist, the reports (import, retention, evidence) and the GeoIP data stored with them. */
export function reputationCommands(program: Command, { io, withDatabase, withModules, print }: Cli): void {
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
      const geo = await openGeoIp({ ...config.geoip, progress });
      const result = await withModules(
        async (s) => {
          const step = progress.step('filling ASNs');
          const totals = await s.reputation.service.backfillAsn(opts.batch, (scanned) => step.update(scanned));
          step.done(totals);
          return totals;
        },
        { geo },
      );
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
      const result = await withModules((s) => s.reputation.evidence(address.text, opts.limit, opts.account));
      print({ ip: address.text, ...result }, !!opts.json, () =>
        [
          `${result.total} report(s) about ${address.text} with evidence${result.reports.length < result.total ? `, the newest ${result.reports.length} shown` : ''}`,
          ...result.reports.map((r) =>
            [`report ${r.id} by account ${r.accountId} at ${r.reportedAt.toISOString()} (categories ${r.categories.join(', ')})`, ...r.evidence.split('\n').map((l) => `  ${l}`)].join('\n'),
          ),
        ].join('\n'),
      );
    });

}
