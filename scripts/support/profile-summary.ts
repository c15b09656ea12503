/**
 * Where a CPU profile's time goes, by component: each sample is charged to the first frame on
 * its stack (from the leaf up) that belongs to a known component, so that time in Node's own
 * internals counts for whoever called them.
 *   tsx scripts/support/profile-summary.ts PROFILE.cpuprofile [--requests N] [--from SECONDS]
 * `--from` leaves out the samples of the first SECONDS of the profile (start-up, warm-up).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface Frame {
  functionName: string;
  url: string;
}
interface Node {
  id: number;
  callFrame: Frame;
  children?: number[];
}
interface Profile {
  startTime: number;
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

const COMPONENTS: [string, RegExp][] = [
  ['request validation (express-openapi-validator, ajv)', /node_modules\/(express-openapi-validator|ajv|ajv-formats|@apidevtools|media-typer|content-type)\//],
  ['authentication (keys, cache)', /\/src\/(http\/auth|keys\/keys|keys\/sites|account\/last-used)\.ts/],
  ['metering and fault budget', /\/src\/(http\/metering|keys\/usage|http\/fault-budget|keys\/roles)\.ts/],
  ['scoring', /\/src\/reputation\/score\.ts/],
  ['reputation service and repository', /\/src\/reputation\//],
  ['GeoIP', /\/src\/geo\/|node_modules\/(maxmind|mmdb-lib)\//],
  ['reports and statistics', /\/src\/(stats|blacklist|categories)\//],
  ['relay', /\/src\/relay\//],
  ['pg client (protocol, parsing rows)', /node_modules\/(pg|pg-protocol|pg-pool|pg-types|pg-query-stream|pg-cursor|postgres-[a-z]+)\//],
  ['ORM (MikroORM)', /node_modules\/@mikro-orm\//],
  ['logging (pino)', /node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream)\/|\/src\/(logging|http\/logging)\.ts/],
  ['metrics (prom-client)', /node_modules\/prom-client\/|\/src\/http\/metrics\.ts/],
  ['security headers (helmet)', /node_modules\/helmet\//],
  ['envelope, errors, paths, drain', /\/src\/http\//],
  ['Express and its router', /node_modules\/(express|router|body-parser|finalhandler|send|serve-static|qs|raw-body|type-is|on-finished|depd|mime-types|accepts|negotiator|fresh|etag|parseurl|path-to-regexp|encodeurl|cookie|vary|statuses|http-errors|debug|iconv-lite)\//],
  ['other project code', /\/src\//],
  ['other packages', /node_modules\//],
];

const { values, positionals } = parseArgs({ allowPositionals: true, options: { requests: { type: 'string' }, from: { type: 'string' } } });
const profile = JSON.parse(readFileSync(positionals[0]!, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

const component = new Map<number, string>();
function componentOf(id: number): string {
  const known = component.get(id);
  if (known) return known;
  const node = byId.get(id)!;
  const name = node.callFrame.functionName;
  let result: string | undefined;
  if (name === '(idle)') result = 'idle';
  else if (name === '(garbage collector)') result = 'garbage collection';
  else if (name === '(program)') result = 'V8 and native (unattributed)';
  else {
    // the first matching rule in order wins
    result = COMPONENTS.find(([, pattern]) => pattern.test(node.callFrame.url))?.[0];
    if (!result) {
      const up = parent.get(id);
      result = up === undefined ? 'Node internals (http, net, timers)' : componentOf(up);
      if (up !== undefined && result === 'idle') result = 'Node internals (http, net, timers)';
    }
  }
  component.set(id, result);
  return result;
}

const totals = new Map<string, number>();
let total = 0;
const from = profile.startTime + Number(values.from ?? 0) * 1e6;
let at = profile.startTime;
profile.samples.forEach((id, i) => {
  const us = profile.timeDeltas[i] ?? 0;
  at += us;
  if (at < from) return;
  const c = componentOf(id);
  totals.set(c, (totals.get(c) ?? 0) + us);
  if (c !== 'idle') total += us;
});
const requests = values.requests ? Number(values.requests) : undefined;
console.log(`busy CPU: ${(total / 1e6).toFixed(2)} s${requests ? ` over ${requests} requests = ${(total / requests / 1000).toFixed(3)} ms per request` : ''}`);
console.log('| component | share of busy CPU | ms per request |');
console.log('|---|---:|---:|');
for (const [c, us] of [...totals].filter(([c]) => c !== 'idle').sort((a, b) => b[1] - a[1])) {
  console.log(`| ${c} | ${((100 * us) / total).toFixed(1)}% | ${requests ? (us / requests / 1000).toFixed(3) : ''} |`);
}
