import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../src/openapi.js';

const run = promisify(execFile);

/** Debian's fail2ban: its AbuseIPDB action and the Python it runs on. */
export const FAIL2BAN_ABUSEIPDB = '/etc/fail2ban/action.d/abuseipdb.conf';
const PYTHON = '/usr/bin/python3';
/**
 * What running the stock action takes (for tools.ts's missingTools): Debian's Python, curl (the
 * action's command), and the fail2ban package (its action file and its Python code).
 */
export const FAIL2BAN_NEEDS = [
  [PYTHON, 'curl'],
  { files: { fail2ban: FAIL2BAN_ABUSEIPDB, 'fail2ban (its Python package)': '/usr/lib/python3/dist-packages/fail2ban' } },
] as const;

/**
 * Bans an address with fail2ban's stock `abuseipdb` action, through fail2ban's own code, its
 * report sent to `reportUrl`: either the stock file with its URL changed (the one change a user
 * makes), or the stock file beside contrib's abuseipdb.local (`local`, which takes the base URL
 * as `abuseipdb_url`). Resolves with the action's command line as fail2ban read it; rejects when
 * the command fails.
 */
export async function fail2banAbuseipdbBan(
  reportUrl: string,
  key: string,
  ip: string,
  categories: string,
  matches: string,
  local?: string,
): Promise<string> {
  const conf = mkdtempSync(path.join(tmpdir(), 'trs-fail2ban-'));
  try {
    mkdirSync(path.join(conf, 'action.d'));
    const stock = readFileSync(FAIL2BAN_ABUSEIPDB, 'utf8');
    if (!stock.includes('https://api.abuseipdb.com/api/v2/report')) throw new Error(`${FAIL2BAN_ABUSEIPDB} no longer names AbuseIPDB's report URL`);
    const extra: string[] = [];
    if (local) {
      writeFileSync(path.join(conf, 'action.d', 'abuseipdb.conf'), stock);
      writeFileSync(path.join(conf, 'action.d', 'abuseipdb.local'), readFileSync(local, 'utf8'));
      extra.push(`abuseipdb_url=${reportUrl.replace(/\/report$/, '')}`);
    } else {
      writeFileSync(path.join(conf, 'action.d', 'abuseipdb.conf'), stock.replace('https://api.abuseipdb.com/api/v2/report', reportUrl));
    }
    writeFileSync(path.join(conf, 'matches'), matches);
    const { stdout } = await run(PYTHON, [
      path.join(projectRoot, 'test', 'support', 'fail2ban-ban.py'),
      conf,
      'abuseipdb',
      ip,
      path.join(conf, 'matches'),
      `abuseipdb_apikey=${key}`,
      `abuseipdb_category=${categories}`,
      ...extra,
    ]);
    return stdout.trim();
  } finally {
    rmSync(conf, { recursive: true, force: true });
  }
}
