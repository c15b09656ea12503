import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { Whitelist } from '../../src/reputation/whitelist.repository.js';
import { bouncersOf } from '../support/crowdsec.js';
import { call } from '../support/http.js';
import { reportFromAccounts } from '../support/reports.js';
import { createNetns, type Netns } from '../support/netns.js';
import { eventually } from '../support/relay-fakes.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import { missingTools, requireTools } from '../support/tools.js';

/**
 * Debian's stock CrowdSec bouncers against this server, configured with nothing but its LAPI URL
 * and a bouncer key. Each runs in a scratch network namespace, reaching the test server over a
 * veth pair: the firewall bouncer drives real nftables sets there (the machine's own firewall is
 * never touched), the custom bouncer calls a script with `add` and `del`. Both must take the
 * startup list, then an added and a deleted decision after a regeneration.
 *
 * Needs root, iproute2, nft and the packages `crowdsec-firewall-bouncer` and
 * `crowdsec-custom-bouncer` (`.ci/run` installs them); skipped elsewhere, naming what is
 * missing, unless CI=true, where their absence fails.
 */
const FIREWALL = '/usr/bin/crowdsec-firewall-bouncer';
const CUSTOM = '/usr/bin/crowdsec-custom-bouncer';
const missing = missingTools(['ip', 'nft', 'crowdsec-firewall-bouncer', 'crowdsec-custom-bouncer'], { netns: true });

const FIRST = ['45.155.205.11', '2a0d:5600:24::11'];
const GONE = '45.155.205.12';
const ADDED = '193.32.162.11';

let s: TestServer;
let ns: Netns;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let work: string;
let hostAddress: string;
const veth = `trsv${randomBytes(4).toString('hex')}`;
const children: ChildProcess[] = [];

const regenerate = () => blacklistSnapshots(s.pool, s.clock).regenerate();

async function sh(command: string) {
  const { execFile } = await import('node:child_process');
  await new Promise<void>((resolve, reject) => execFile('sh', ['-c', command], (err) => (err ? reject(err) : resolve())));
}

/**
 * A package's own configuration with api_url and api_key set (all a user changes), and, for the
 * test, a pull a second, in the foreground, logging to stdout, without its metrics listener.
 */
function configured(bouncer: string, key: string, settings: Record<string, string>): string {
  const all: Record<string, string> = {
    ...settings,
    api_url: `http://${hostAddress}:${proxy.port}/crowdsec/`,
    api_key: key,
    update_frequency: '1s',
    daemonize: 'false',
    log_mode: 'stdout',
  };
  let text = readFileSync(`/etc/crowdsec/bouncers/${bouncer}.yaml`, 'utf8');
  for (const [name, value] of Object.entries(all)) text = text.replace(new RegExp(`^${name}: .*$`, 'm'), `${name}: ${value}`);
  return text.replace(/^prometheus:\n\s+enabled: true/m, 'prometheus:\n  enabled: false');
}

/** Starts a bouncer in the namespace; its output is kept for a failing test to show. */
function startBouncer(binary: string, config: string) {
  const child = spawn('ip', ['netns', 'exec', ns.name, binary, '-c', config], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  children.push(child);
  return { child, output: () => output };
}

describe('Debian\'s stock CrowdSec bouncers against this server', () => {
  beforeEach((ctx) => requireTools(ctx, missing));
  beforeAll(async () => {
    if (missing) return;
    s = await startTestServer();
    work = mkdtempSync(path.join(tmpdir(), 'trs-bouncer-'));
    ns = await createNetns('trs-bouncer');
    // A /30 of its own: 10.<200-249>.<0-255>.1 here, .2 in the namespace.
    const [a, b] = [200 + (randomBytes(1)[0]! % 50), randomBytes(1)[0]!];
    hostAddress = `10.${a}.${b}.1`;
    await sh(`ip link add ${veth} type veth peer name ${veth}p && ip link set ${veth}p netns ${ns.name} && ip addr add ${hostAddress}/30 dev ${veth} && ip link set ${veth} up`);
    await ns.sh(`ip addr add 10.${a}.${b}.2/30 dev ${veth}p && ip link set ${veth}p up`);
    proxy = await startTcpProxy('127.0.0.1', Number(new URL(s.origin).port), hostAddress);
    await reportFromAccounts(s, [...FIRST, GONE]);
    await regenerate();
  }, 120_000);

  afterAll(async () => {
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((child) => new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))));
    await proxy?.close?.();
    await sh(`ip link del ${veth}`).catch(() => undefined);
    await ns?.remove();
    await s?.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('the firewall bouncer fills its nftables sets from the startup list, then adds and deletes after a regeneration', async () => {
    const { key } = await bouncersOf(s).add('debian-firewall', { confidence: 50 });
    const config = path.join(work, 'firewall.yaml');
    writeFileSync(config, configured('crowdsec-firewall-bouncer', key, { mode: 'nftables', pid_dir: `${work}/` }));
    const bouncer = startBouncer(FIREWALL, config);
    const held = async () => {
      const v4 = await ns.sh('nft list set ip crowdsec crowdsec-blacklists').catch(() => ({ out: '' }));
      const v6 = await ns.sh('nft list set ip6 crowdsec6 crowdsec6-blacklists').catch(() => ({ out: '' }));
      return `${v4.out}\n${v6.out}`;
    };
    const holds = async (ip: string) => (await held()).includes(ip);
    try {
      await eventually(async () => (await holds(FIRST[0]!)) && (await holds(FIRST[1]!)) && (await holds(GONE)), 30_000);
      await reportFromAccounts(s, [ADDED]);
      await new Whitelist(s.orm.em).add(GONE, 'unblocked');
      await regenerate();
      await eventually(async () => (await holds(ADDED)) && !(await holds(GONE)), 30_000);
      expect(await holds(FIRST[0]!)).toBe(true);
      // The set's elements carry the decisions' durations as timeouts (12 to 24 hours).
      expect(await held()).toMatch(/timeout (1[2-9]|2[0-4])h/);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nbouncer output:\n${bouncer.output()}\nsets:\n${await held()}`);
    }
    const [listed] = (await bouncersOf(s).list()).filter((b) => b.name === 'debian-firewall');
    expect(listed!.userAgent).toMatch(/^crowdsec-firewall-bouncer\//);
    expect(listed!.lastPullAt).not.toBeNull(); // (its address is the proxy's, 127.0.0.1)
  }, 120_000);

  it('the custom bouncer calls its script with add for the startup list, then del and add', async () => {
    await new Whitelist(s.orm.em).remove(GONE);
    await regenerate(); // GONE is back
    const { key } = await bouncersOf(s).add('debian-custom', { confidence: 50 });
    const log = path.join(work, 'custom.log');
    const script = path.join(work, 'custom.sh');
    writeFileSync(script, `#!/bin/sh\necho "$1 $2" >> ${log}\n`);
    chmodSync(script, 0o755);
    writeFileSync(log, '');
    const config = path.join(work, 'custom.yaml');
    writeFileSync(config, configured('crowdsec-custom-bouncer', key, { bin_path: script, piddir: `${work}/` }));
    const bouncer = startBouncer(CUSTOM, config);
    const calls = () => readFileSync(log, 'utf8').trim().split('\n').filter(Boolean);
    try {
      await eventually(() => [...FIRST, GONE, ADDED].every((ip) => calls().includes(`add ${ip}`)), 30_000);
      await new Whitelist(s.orm.em).add(GONE, 'unblocked again');
      await reportFromAccounts(s, ['193.32.162.12']);
      await regenerate();
      await eventually(() => calls().includes(`del ${GONE}`) && calls().includes('add 193.32.162.12'), 30_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\nbouncer output:\n${bouncer.output()}\ncalls:\n${calls().join('\n')}`);
    }
  }, 120_000);
});
