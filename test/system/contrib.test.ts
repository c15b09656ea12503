import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { projectRoot } from '../../src/openapi.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { missingTools, requireTools } from '../support/tools.js';

/**
 * The recipes in contrib/ run as an administrator installs them, against a real server: the
 * fail2ban action's ban command and the nftables sync script (with an `nft` that records what
 * it is given, and checks its syntax with the real nft where one is installed). Both run curl:
 * without it they are skipped, naming it (CI=true fails them).
 */
const run = promisify(execFile);
const contrib = path.join(projectRoot, 'contrib');
const realNft = spawnSync('sh', ['-c', 'PATH="$PATH:/usr/sbin:/sbin" command -v nft']).stdout.toString().trim();
const missingCurl = missingTools(['curl']);

let s: TestServer;
let work: string;
beforeAll(async () => {
  s = await startTestServer();
  work = mkdtempSync(path.join(tmpdir(), 'trs-contrib-'));
});
afterAll(async () => {
  await s?.close();
  rmSync(work, { recursive: true, force: true });
});

/** A fail2ban action's command, with its [Init] defaults and the given tags filled in. */
function fail2banCommand(file: string, action: string, tags: Record<string, string>): string {
  const text = readFileSync(file, 'utf8');
  const values: Record<string, string> = {};
  let current: string | undefined;
  for (const line of text.split('\n')) {
    if (/^\s*(#|$)/.test(line) || /^\[/.test(line)) {
      current = undefined;
      continue;
    }
    const assignment = /^(\w+)\s*=\s?(.*)$/.exec(line);
    if (assignment) {
      current = assignment[1]!;
      values[current] = assignment[2]!;
    } else if (current && /^\s/.test(line)) {
      values[current] += `\n${line}`; // fail2ban keeps continuation lines
    }
  }
  const all = { ...values, ...tags };
  return (values[action] ?? '').replace(/<(\w+)>/g, (tag, name: string) => all[name] ?? tag);
}

describe('contrib/fail2ban', () => {
  it('reports a banned address with the jail\'s categories', async (ctx) => {
    requireTools(ctx, missingCurl);
    const key = (await s.createKey('free')).key;
    const command = fail2banCommand(path.join(contrib, 'fail2ban/action.d/trs-report.conf'), 'actionban', {
      trs_url: s.base,
      trs_key: key,
      trs_categories: '18,22',
      ip: '45.155.205.233',
      name: 'sshd',
      failures: '6',
    });
    await run('sh', ['-c', command]);
    const { data } = await s.clientFor(key).GET('/check', { params: { query: { ip: '45.155.205.233' } } });
    expect(data?.data).toMatchObject({ totalReports: 1, categories: [18, 22] });

    const refused = fail2banCommand(path.join(contrib, 'fail2ban/action.d/trs-report.conf'), 'actionban', {
      trs_url: s.base,
      trs_key: 'trs_unknownunknownunknownunknownunknownunknown1',
      ip: '45.155.205.234',
      name: 'sshd',
      failures: '6',
    });
    await expect(run('sh', ['-c', refused])).rejects.toThrow(); // curl --fail: fail2ban logs the error
  });
});

describe('contrib/nftables', () => {
  it('loads the blacklist once per ETag, atomically, and again when the table is gone', async (ctx) => {
    requireTools(ctx, missingCurl);
    const reporter = (await s.createKey('enterprise')).key;
    for (const ip of ['45.155.205.10', '45.155.205.11', '2a0d:5600:24::1']) {
      const { response } = await s.clientFor(reporter).POST('/report', { body: { ip, categories: [18] } });
      expect(response.status).toBe(200);
    }
    await blacklistSnapshots(s.pool, s.clock).regenerate();

    const nftDir = path.join(work, 'nft');
    const fakeNft = path.join(work, 'nft.sh');
    writeFileSync(
      fakeNft,
      [
        '#!/bin/sh',
        `mkdir -p ${nftDir}`,
        'case "$1" in',
        `  list) [ -f ${nftDir}/table ] ;;`,
        `  -f) ${realNft ? `${realNft} -c -f "$2" || exit 1; ` : ''}cp "$2" ${nftDir}/load.$(ls ${nftDir} | wc -l) && touch ${nftDir}/table ;;`,
        '  *) exit 2 ;;',
        'esac',
      ].join('\n'),
      { mode: 0o755 },
    );
    const sync = (key: string) =>
      run(path.join(contrib, 'nftables/trs-blacklist-sync'), [], {
        env: { ...process.env, TRS_URL: s.base, TRS_KEY: key, TRS_CONFIDENCE: '1', STATE_DIRECTORY: path.join(work, 'state'), NFT: fakeNft },
      });
    const loads = () => readdirSync(nftDir).filter((f) => f.startsWith('load.'));
    const contributor = (await s.createKey('contributor')).key;

    await sync(contributor);
    expect(loads()).toHaveLength(1);
    const ruleset = readFileSync(path.join(nftDir, loads()[0]!), 'utf8');
    expect(ruleset).toMatch(/^table inet trs\ndelete table inet trs\ntable inet trs \{/);
    const v4 = /set v4 \{ type ipv4_addr; elements = \{ ([^}]*) \}; \}/.exec(ruleset)?.[1]?.split(',');
    expect(v4).toEqual(expect.arrayContaining(['45.155.205.10', '45.155.205.11']));
    expect(ruleset).toContain('set v6 { type ipv6_addr; elements = { 2a0d:5600:24::1 }; }');
    expect(readFileSync(path.join(work, 'state/etag'), 'utf8')).toMatch(/^".+"\n$/);

    await sync(contributor); // unchanged: 304, nothing loaded
    expect(loads()).toHaveLength(1);

    rmSync(path.join(nftDir, 'table')); // a reboot emptied the firewall
    await sync(contributor);
    expect(loads()).toHaveLength(2);

    const free = (await s.createKey('free')).key; // Free keys have no blacklist: 403
    await expect(sync(free)).rejects.toThrow(/answered 403/);
    expect(loads()).toHaveLength(2);
  });
});
