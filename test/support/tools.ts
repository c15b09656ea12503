import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import type { TestContext } from 'vitest';

/**
 * The programs of this machine that tests drive (nft, ipset, iptables-restore, the CrowdSec
 * bouncers, fail2ban, Chromium, curl …). A test that needs some names them all; on a machine
 * without one it is skipped with a note naming exactly what is missing, and under CI=true it
 * fails instead, since CI installs every one of them (.ci/run): a missing tool there is a broken
 * machine, never a test passed by not running.
 */
/** Whether a command is installed: in PATH or the sbin folders root's PATH has, or an executable path. */
export function installed(command: string): boolean {
  return spawnSync('sh', ['-c', 'PATH="$PATH:/usr/sbin:/sbin" command -v "$1"', 'sh', command]).status === 0;
}

let namespaces: boolean | undefined;
/** Whether this process may make network namespaces (root, iproute2, and a kernel that lets it). */
function netnsWorks(): boolean {
  if (namespaces === undefined) {
    const name = `trs-probe-${randomBytes(3).toString('hex')}`;
    namespaces = process.getuid?.() === 0 && installed('ip') && spawnSync('ip', ['netns', 'add', name]).status === 0;
    if (namespaces) spawnSync('ip', ['netns', 'del', name]);
  }
  return namespaces;
}

export interface Needs {
  /** Root (network namespaces, another user's processes). */
  root?: boolean;
  /** Scratch network namespaces (root and iproute2's `ip`, which the tools list should name). */
  netns?: boolean;
  /** Files a package installs, by the package's name: `{ fail2ban: '/etc/fail2ban/action.d/abuseipdb.conf' }`. */
  files?: Record<string, string>;
}

/**
 * What of `tools` and `needs` this machine lacks, as a note to skip with (`needs ipset,
 * ip6tables-restore: not installed`), or undefined when everything is there.
 */
export function missingTools(tools: readonly string[], needs: Needs = {}): string | undefined {
  const problems: string[] = [];
  const absent = [...tools.filter((tool) => !installed(tool)), ...Object.entries(needs.files ?? {}).filter(([, file]) => !existsSync(file)).map(([pkg]) => pkg)];
  if (absent.length) problems.push(`needs ${absent.join(', ')}: not installed`);
  if ((needs.root || needs.netns) && process.getuid?.() !== 0) problems.push('needs root');
  else if (needs.netns && !absent.includes('ip') && !netnsWorks()) problems.push('needs network namespaces: `ip netns add` fails here');
  return problems.length ? problems.join('; ') : undefined;
}

/**
 * For a test (in it, or in beforeEach for a whole describe) that needs tools: returns when all
 * are there; else skips it with a note naming what is missing, or, under CI=true, fails it.
 * `missing` is what missingTools said (computed once per file).
 */
export function requireTools(ctx: TestContext, missing: string | undefined): void {
  if (missing === undefined) return;
  if (process.env.CI === 'true') throw new Error(`${missing} (CI=true: .ci/run installs every tool the tests use, so a missing one fails)`);
  ctx.skip(missing);
}
