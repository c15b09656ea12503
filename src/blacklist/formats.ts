/**
 * The list in the forms firewalls load as they are: CIDR lists, nftables, ipset, iptables and
 * nginx files. Each writer takes the list's networks one at a time (a whole list is never held)
 * and writes a file the tool loads in one go; its delta form changes what the full form made.
 * Pure: no I/O.
 */

/** An entry of a list: one address, or a CIDR block of an aggregated list. */
export interface Net {
  version: 4 | 6;
  /** `198.51.100.23`, or `198.51.100.4/31` for a block. */
  address: string;
  /** Always with its length: `198.51.100.23/32`. */
  cidr: string;
}

export type Change = 'added' | 'removed';

export type FirewallFormat = 'cidr' | 'nftables' | 'ipset' | 'iptables' | 'ip6tables' | 'nginx';

/** What a file's first comment says about the list. */
export interface Heading {
  confidence: number;
  categories: number[] | undefined;
  generatedAt: Date;
  /** For a delta: the tag it starts from and the tag it leads to. */
  delta?: { since: string; etag: string };
}

export interface Writer {
  /** The text before the first entry. */
  begin(): string;
  /** One entry (of a delta: with its change; removals come first); the text to write now. */
  write(net: Net, change?: Change): string;
  /** The text after the last entry. */
  end(): string;
}

const NAME = 'Threat-Reputation Service blacklist';

function describe(heading: Heading, family?: string): string {
  const categories = heading.categories?.length ? `, categories ${heading.categories.join(',')}` : '';
  const what = `confidence ${heading.confidence} and above${categories}`;
  const title = family ? `${NAME} (${family})` : NAME;
  if (heading.delta) {
    return `# ${title}: ${what}; the changes from ${heading.delta.since} to ${heading.delta.etag}, generated ${heading.generatedAt.toISOString()}.\n`;
  }
  return `# ${title}: ${what}, generated ${heading.generatedAt.toISOString()}.\n`;
}

const countLine = (count: number) => `# ${count} ${count === 1 ? 'entry' : 'entries'}\n`;

/** `txt` (bare addresses) and `cidr`: one entry per line; a delta's lines start with `-` or `+`. */
class LineWriter implements Writer {
  constructor(private readonly cidr: boolean) {}
  begin() {
    return '';
  }
  write(net: Net, change?: Change) {
    const sign = change === undefined ? '' : change === 'removed' ? '-' : '+';
    return `${sign}${this.cidr ? net.cidr : net.address}\n`;
  }
  end() {
    return '';
  }
}

const NFT_BATCH = 500;

/** nftables: `table inet trs` with the sets v4 and v6 and chains dropping their traffic. */
class NftablesWriter implements Writer {
  /** Elements waiting per statement (`add element inet trs v4`), written 500 at a time. */
  private readonly batches = new Map<string, string[]>();
  private lastChange: Change | undefined;
  private count = 0;

  constructor(
    private readonly heading: Heading,
    private readonly interval: boolean,
  ) {}

  begin() {
    const head = describe(this.heading);
    if (this.heading.delta) {
      return `#!/usr/sbin/nft -f\n${head}# Load it with \`nft -f FILE\` over table inet trs as the full list (same parameters) made it.\n`;
    }
    const flags = this.interval ? '\t\tflags interval\n' : '';
    const chain = (hook: string) =>
      `\tchain ${hook} {\n\t\ttype filter hook ${hook} priority -10; policy accept;\n\t\tip saddr @v4 drop\n\t\tip6 saddr @v6 drop\n\t}\n`;
    return (
      `#!/usr/sbin/nft -f\n${head}` +
      '# Load it with `nft -f FILE`: it replaces table inet trs in one transaction, dropping\n' +
      '# input and forwarded traffic from the addresses in its sets v4 and v6.\n' +
      'table inet trs\ndelete table inet trs\ntable inet trs {\n' +
      `\tset v4 {\n\t\ttype ipv4_addr\n${flags}\t}\n` +
      `\tset v6 {\n\t\ttype ipv6_addr\n${flags}\t}\n` +
      chain('input') +
      chain('forward') +
      '}\n'
    );
  }

  write(net: Net, change?: Change) {
    this.count++;
    // Removals are written before any addition: an interval set refuses overlapping blocks.
    let out = change !== this.lastChange ? this.flush() : '';
    this.lastChange = change;
    const key = `${change === 'removed' ? 'delete' : 'add'} element inet trs v${net.version}`;
    const batch = this.batches.get(key) ?? [];
    this.batches.set(key, batch);
    batch.push(net.address);
    if (batch.length >= NFT_BATCH) {
      out += `${key} { ${batch.join(', ')} }\n`;
      this.batches.delete(key);
    }
    return out;
  }

  end() {
    return this.flush() + countLine(this.count);
  }

  private flush() {
    let out = '';
    for (const [key, elements] of this.batches) out += `${key} { ${elements.join(', ')} }\n`;
    this.batches.clear();
    return out;
  }
}

/** ipset: the hash:net sets trs-v4 and trs-v6, filled under other names and swapped in whole. */
class IpsetWriter implements Writer {
  private count = 0;
  constructor(private readonly heading: Heading) {}

  begin() {
    const head = describe(this.heading);
    if (this.heading.delta) {
      return `${head}# Load it with \`ipset restore -file FILE\` over the sets trs-v4 and trs-v6 of the full list.\n`;
    }
    const create = (name: string, family: string) => `create ${name} hash:net family ${family} maxelem 1000000 -exist\n`;
    return (
      head +
      '# Load it with `ipset restore -file FILE`: it fills the sets trs-v4 and trs-v6 (hash:net) and\n' +
      '# swaps them in whole. Then match them once, e.g.\n' +
      '#   iptables -I INPUT -m set --match-set trs-v4 src -j DROP\n' +
      '#   ip6tables -I INPUT -m set --match-set trs-v6 src -j DROP\n' +
      create('trs-v4', 'inet') +
      create('trs-v6', 'inet6') +
      create('trs-v4-next', 'inet') +
      create('trs-v6-next', 'inet6') +
      'flush trs-v4-next\nflush trs-v6-next\n'
    );
  }

  write(net: Net, change?: Change) {
    this.count++;
    if (change) return `${change === 'removed' ? 'del' : 'add'} trs-v${net.version} ${net.address} -exist\n`;
    return `add trs-v${net.version}-next ${net.address}\n`;
  }

  end() {
    if (this.heading.delta) return countLine(this.count);
    return 'swap trs-v4-next trs-v4\nswap trs-v6-next trs-v6\ndestroy trs-v4-next\ndestroy trs-v6-next\n' + countLine(this.count);
  }
}

/** iptables-restore / ip6tables-restore: the chain trs-blacklist, one DROP rule per entry. */
class IptablesWriter implements Writer {
  private count = 0;
  constructor(
    private readonly heading: Heading,
    private readonly version: 4 | 6,
  ) {}

  begin() {
    const tool = this.version === 4 ? 'iptables' : 'ip6tables';
    const head = describe(this.heading, this.version === 4 ? 'IPv4' : 'IPv6');
    if (this.heading.delta) {
      return `${head}# Load it with \`${tool}-restore --noflush FILE\` over the chain trs-blacklist of the full list.\n*filter\n`;
    }
    return (
      head +
      `# Load it with \`${tool}-restore --noflush FILE\`: it replaces the rules of the chain\n` +
      `# trs-blacklist. Then send traffic through the chain once: ${tool} -I INPUT -j trs-blacklist\n` +
      '# A chain is read rule by rule: for long lists prefer format=ipset or format=nftables.\n' +
      '*filter\n:trs-blacklist - [0:0]\n'
    );
  }

  write(net: Net, change?: Change) {
    this.count++;
    return `${change === 'removed' ? '-D' : '-A'} trs-blacklist -s ${net.cidr} -j DROP\n`;
  }

  end() {
    return 'COMMIT\n' + countLine(this.count);
  }
}

/** nginx: a geo map, `$trs_blacklist` 1 for listed clients. It has no delta form. */
class NginxWriter implements Writer {
  private count = 0;
  constructor(private readonly heading: Heading) {}

  begin() {
    return (
      describe(this.heading) +
      '# Include it in http {} (include /etc/nginx/trs-blacklist.conf;), then refuse listed\n' +
      '# clients where you want: if ($trs_blacklist) { return 403; }\n' +
      '# Behind a proxy, set set_real_ip_from and real_ip_header first: geo reads $remote_addr.\n' +
      'geo $trs_blacklist {\n\tdefault 0;\n'
    );
  }

  write(net: Net) {
    this.count++;
    return `\t${net.address} 1;\n`;
  }

  end() {
    return '}\n' + countLine(this.count);
  }
}

/** The writer of a format: `txt` and `cidr` lines, or a firewall's file. */
export function writerFor(format: FirewallFormat | 'txt', heading: Heading, aggregated: boolean): Writer {
  switch (format) {
    case 'txt':
      return new LineWriter(false);
    case 'cidr':
      return new LineWriter(true);
    case 'nftables':
      return new NftablesWriter(heading, aggregated);
    case 'ipset':
      return new IpsetWriter(heading);
    case 'iptables':
      return new IptablesWriter(heading, 4);
    case 'ip6tables':
      return new IptablesWriter(heading, 6);
    case 'nginx':
      return new NginxWriter(heading);
  }
}

/** The IP family a format is limited to (iptables and ip6tables each take one). */
export const FORMAT_FAMILY: Partial<Record<FirewallFormat, 4 | 6>> = { iptables: 4, ip6tables: 6 };

/** Formats without a delta form. */
export const NO_DELTA: ReadonlySet<string> = new Set(['nginx', 'rbldnsd']);
