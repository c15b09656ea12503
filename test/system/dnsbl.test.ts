import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { runCli } from '../support/cli.js';
import { call } from '../support/http.js';
import { reportFromAccounts } from '../support/reports.js';
import { createNetns } from '../support/netns.js';
import { missingTools, requireTools } from '../support/tools.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 28: the blacklist as a DNS blocklist. `trs dnsbl export` writes the snapshot as an
 * rbldnsd data file; Debian's rbldnsd serves it on a free local port, and a real resolver
 * (dig) asks it what a mail server would: a listed address answers 127.0.0.2 with its TXT, an
 * unlisted one NXDOMAIN, and the RFC 5782 test entries answer as the RFC says.
 */
const execFileAsync = promisify(execFile);
const missing = missingTools(['rbldnsd', 'dig']);
const missingForPostfix = missingTools(['ip', 'rbldnsd', 'postfix', 'python3'], { netns: true });
const ZONE = 'bl.trs.test';
const LISTED = ['45.155.205.4', '45.155.205.5', '2a0d:5600:24::2'];
const UNLISTED = '198.51.100.77';

let s: TestServer;
let key: string;
let work: string;
let rbldnsd: ChildProcess | undefined;
let port = 0;

const freeUdpPort = () =>
  new Promise<number>((resolve, reject) => {
    const socket = createSocket('udp4');
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      const { port } = socket.address();
      socket.close(() => resolve(port));
    });
  });

/** The query name of an address under the zone: reversed octets, or reversed nibbles for IPv6 (RFC 5782 §2.1, §2.4). */
function queryName(ip: string): string {
  if (!ip.includes(':')) return `${ip.split('.').reverse().join('.')}.${ZONE}`;
  const [head, tail = ''] = ip.split('::');
  const groups = (part: string) => (part ? part.split(':') : []);
  const h = groups(head!);
  const t = groups(tail);
  const full = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t].map((g) => g.padStart(4, '0')).join('');
  return `${[...full].reverse().join('.')}.${ZONE}`;
}

async function dig(name: string, type: 'A' | 'TXT'): Promise<{ status: string; answers: string[] }> {
  const { stdout } = await execFileAsync('dig', ['@127.0.0.1', '-p', String(port), '+time=2', '+tries=2', '+noall', '+comments', '+answer', name, type]);
  const status = /status: (\w+)/.exec(stdout)?.[1] ?? 'none';
  const answers = stdout
    .split('\n')
    .filter((line) => line && !line.startsWith(';'))
    .map((line) => line.split(/\s+/).slice(4).join(' '));
  return { status, answers };
}

beforeAll(async () => {
  s = await startTestServer();
  key = (await s.createKey('contributor')).key;
  await reportFromAccounts(s, LISTED);
  await blacklistSnapshots(s.pool, s.clock, 3).regenerate();
  work = mkdtempSync(path.join(tmpdir(), 'trs-dnsbl-'));
  chmodSync(work, 0o755); // rbldnsd drops to its own user: it must read the file
});
afterAll(async () => {
  rbldnsd?.kill('SIGTERM');
  await s?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('the DNS blocklist', () => {
  beforeEach((ctx) => requireTools(ctx, missing));

  it('is exported by trs dnsbl export and served by rbldnsd to a real resolver', { timeout: 60_000 }, async () => {
    const file = path.join(work, 'trs.rbldnsd');
    const exported = await runCli({ ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn', PUBLIC_URL: 'https://trs.example.com' }, 'dnsbl', 'export', '--zone', ZONE, '--confidence', '50', '--out', file, '--json');
    expect(exported.code).toBe(0);
    expect(JSON.parse(exported.out)).toMatchObject({ file, zone: ZONE, confidence: 50, entries: LISTED.length });
    const text = readFileSync(file, 'utf8');
    expect(text).toContain(`$SOA 5m ${ZONE}. hostmaster.${ZONE}.`);

    port = await freeUdpPort();
    rbldnsd = spawn('rbldnsd', ['-n', '-4', '-b', `127.0.0.1/${port}`, '-w', work, `${ZONE}:combined:trs.rbldnsd`], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    rbldnsd.stdout!.on('data', (d) => (output += d));
    rbldnsd.stderr!.on('data', (d) => (output += d));
    // Ready when it answers the zone's SOA.
    for (let i = 0; ; i++) {
      const soa = await dig(ZONE, 'A').catch(() => undefined);
      if (soa && soa.status !== 'none') break;
      if (i > 50 || rbldnsd.exitCode !== null) throw new Error(`rbldnsd did not start: ${output}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    for (const ip of LISTED) {
      expect(await dig(queryName(ip), 'A'), ip).toEqual({ status: 'NOERROR', answers: ['127.0.0.2'] });
      const [txt] = (await dig(queryName(ip), 'TXT')).answers;
      expect(txt).toMatch(/^"Listed, abuse confidence \d+, categories 18 22 - see https:\/\/trs\.example\.com\/lookup\?ip=/);
      expect(txt).toContain(`lookup?ip=${ip}"`);
    }
    expect((await dig(queryName(UNLISTED), 'A')).status).toBe('NXDOMAIN');
    // RFC 5782 §5: the test entries.
    expect(await dig(queryName('127.0.0.2'), 'A')).toEqual({ status: 'NOERROR', answers: ['127.0.0.2'] });
    expect((await dig(queryName('127.0.0.1'), 'A')).status).toBe('NXDOMAIN');
    expect(queryName('::ffff:7f00:2')).toBe(`2.0.0.0.0.0.f.7.f.f.f.f.${'0.'.repeat(20)}${ZONE}`);
    expect((await dig(queryName('::ffff:7f00:2'), 'A')).answers).toEqual(['127.0.0.2']);
    expect((await dig(queryName('::ffff:7f00:1'), 'A')).status).toBe('NXDOMAIN');
  });

  it('refuses a zone that is not a DNS name, so nothing can be written into the file through it', async () => {
    const file = path.join(work, 'evil.rbldnsd');
    for (const zone of ['bl.example.com\n$SOA 0 evil. evil. 1 1 1 1 1', 'bl example.com', '-x.example.com', 'a'.repeat(64) + '.com']) {
      const result = await runCli({ ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn' }, 'dnsbl', 'export', '--zone', zone, '--out', file);
      expect(result.code, zone).not.toBe(0);
      expect(result.err).toMatch(/not a DNS zone name/);
    }
    expect(() => readFileSync(file)).toThrow();
  });
});

describe('a mail server using the DNS blocklist', () => {
  beforeEach((ctx) => requireTools(ctx, missingForPostfix));

  /**
   * Postfix in a scratch network namespace, whose resolver is rbldnsd on 127.0.0.1:53 serving
   * the exported file; clients connect from a listed and an unlisted address of the namespace.
   */
  it('Postfix refuses a listed client with the list\'s TXT and takes an unlisted one', { timeout: 90_000 }, async () => {
    const file = path.join(work, 'trs.rbldnsd');
    const exported = await runCli({ ...process.env, DATABASE_URL: s.db.url, LOG_LEVEL: 'warn' }, 'dnsbl', 'export', '--zone', ZONE, '--confidence', '50', '--out', file);
    expect(exported.code).toBe(0);
    const ns = await createNetns('trs-dnsbl');
    const resolvConf = path.join('/etc/netns', ns.name);
    const pf = path.join(work, 'postfix');
    try {
      // `ip netns exec` mounts /etc/netns/<name>/resolv.conf over the namespace's resolver.
      mkdirSync(resolvConf, { recursive: true });
      writeFileSync(path.join(resolvConf, 'resolv.conf'), 'nameserver 127.0.0.1\n');
      for (const dir of ['etc', 'queue', 'data']) mkdirSync(path.join(pf, dir), { recursive: true });
      const postfixUser = await execFileAsync('id', ['-u', 'postfix']);
      chownSync(path.join(pf, 'data'), Number(postfixUser.stdout.trim()), -1);
      writeFileSync(
        path.join(pf, 'etc', 'main.cf'),
        [
          'compatibility_level = 3.6',
          `queue_directory = ${pf}/queue`,
          `data_directory = ${pf}/data`,
          `maillog_file = ${pf}/maillog`,
          `maillog_file_prefixes = ${pf}`,
          'myhostname = mx.trs.test',
          'mydestination = mx.trs.test',
          'inet_interfaces = 127.0.0.1',
          'inet_protocols = ipv4',
          'alias_maps =',
          'alias_database =',
          'local_recipient_maps =',
          `smtpd_client_restrictions = reject_rbl_client ${ZONE}=127.0.0.2`,
          'smtpd_recipient_restrictions = permit_auth_destination, reject',
          '',
        ].join('\n'),
      );
      const service = (name: string, type: string, priv: string, limit = '-') => `${name} ${type} ${priv} - n - ${limit} ${name === 'smtp' ? 'smtpd' : name === 'defer' || name === 'trace' ? 'bounce' : name === 'retry' ? 'error' : name === 'rewrite' ? 'trivial-rewrite' : name}`;
      writeFileSync(
        path.join(pf, 'etc', 'master.cf'),
        [
          service('smtp', 'inet', 'n'),
          service('pickup', 'unix', 'n', '1'),
          service('cleanup', 'unix', 'n', '0'),
          service('qmgr', 'unix', 'n', '1'),
          service('rewrite', 'unix', '-'),
          service('bounce', 'unix', '-', '0'),
          service('defer', 'unix', '-', '0'),
          service('trace', 'unix', '-', '0'),
          service('verify', 'unix', '-', '1'),
          service('proxymap', 'unix', '-'),
          service('anvil', 'unix', '-', '1'),
          service('scache', 'unix', '-', '1'),
          'postlog unix-dgram n - n - 1 postlogd',
          service('error', 'unix', '-'),
          service('retry', 'unix', '-'),
          service('discard', 'unix', '-'),
          '',
        ].join('\n'),
      );
      await ns.sh('ip addr add 45.155.205.4/32 dev lo && ip addr add 198.51.100.77/32 dev lo');
      await ns.sh(`rbldnsd -b 127.0.0.1/53 -w ${work} -p ${work}/rbldnsd.pid ${ZONE}:combined:trs.rbldnsd`);
      await ns.sh(`postfix -c ${pf}/etc start`);
      // What a client is told at RCPT TO (Postfix applies the client restrictions there).
      const client = `import smtplib, sys
s = smtplib.SMTP('127.0.0.1', 25, source_address=(sys.argv[1], 0), timeout=20)
s.ehlo('client.example')
s.mail('sender@example.org')
code, msg = s.rcpt('postmaster@mx.trs.test')
print(code, msg.decode())
s.quit()`;
      const ask = async (from: string) => {
        for (let i = 0; ; i++) {
          try {
            return (await ns.sh(`python3 - ${from}`, client)).out.trim();
          } catch (err) {
            if (i > 30) throw err;
            await new Promise((resolve) => setTimeout(resolve, 200)); // smtpd not listening yet
          }
        }
      };
      expect(await ask('45.155.205.4')).toMatch(new RegExp(`^554 5\\.7\\.1 Service unavailable; Client host \\[45\\.155\\.205\\.4\\] blocked using ${ZONE.replace(/\./g, '\\.')}; Listed, abuse confidence \\d+, categories 18 22`));
      expect(await ask('198.51.100.77')).toBe('250 2.1.5 Ok');
    } finally {
      await ns.sh(`postfix -c ${pf}/etc stop`).catch(() => undefined);
      await ns.sh(`kill $(cat ${work}/rbldnsd.pid)`).catch(() => undefined);
      await ns.remove();
      rmSync(resolvConf, { recursive: true, force: true });
    }
  });
});

describe('GET /blacklist?format=rbldnsd', () => {
  it('answers the same data file over HTTP, without the zone records', async () => {
    const res = await call(s.origin, '/api/v2/blacklist?format=rbldnsd&confidence=50', { key });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    const text = String(res.body);
    expect(text).not.toContain('$SOA');
    expect(text).toContain('$DATASET ip4set:trs-v4 @');
    expect(text).toContain('$DATASET ip6trie:trs-v6 @');
    for (const ip of LISTED) expect(text).toMatch(new RegExp(`^${ip.replace(/\./g, '\\.')} :127\\.0\\.0\\.2:Listed, abuse confidence \\d+, categories 18 22`, 'm'));
    // IPv4 entries in the ip4set, IPv6 ones after the ip6trie line.
    expect(text.indexOf('2a0d:5600:24::2 ')).toBeGreaterThan(text.indexOf('$DATASET ip6trie'));
    expect(text.indexOf('45.155.205.4 ')).toBeLessThan(text.indexOf('$DATASET ip6trie'));
  });

  it('has no delta and no aggregation: 422 naming the parameter, as for the other formats without them', async () => {
    const since = await call(s.origin, '/api/v2/blacklist?format=rbldnsd&since=%22bl-0123456789abcdef%22', { key });
    expect(since.status).toBe(422);
    expect(JSON.stringify(since.body)).toContain('since');
    const aggregate = await call(s.origin, '/api/v2/blacklist?format=rbldnsd&aggregate=true', { key });
    expect(aggregate.status).toBe(422);
    expect(JSON.stringify(aggregate.body)).toContain('aggregate');
  });
});
