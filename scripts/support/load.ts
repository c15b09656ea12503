/**
 * A small load generator over autocannon for profiling runs:
 *   tsx scripts/support/load.ts URL_TEMPLATE --connections C --seconds S [--key K] [--body TEMPLATE] [--ips FILE]
 * `{ip}` in the URL or body is replaced per request by an address from FILE (one per line).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    connections: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '10' },
    key: { type: 'string' },
    body: { type: 'string' },
    ips: { type: 'string' },
  },
});
const template = positionals[0]!;
const ips = values.ips ? readFileSync(values.ips, 'utf8').split('\n').filter(Boolean) : ['8.8.8.8'];
const pick = () => ips[Math.floor(Math.random() * ips.length)]!;
const url = new URL(template.replace('{ip}', '0.0.0.0'));
const headers: Record<string, string> = values.key ? { 'X-Key': values.key } : {};
if (values.body) headers['content-type'] = 'application/json';

const result = await autocannon({
  url: url.origin,
  connections: Number(values.connections),
  duration: Number(values.seconds),
  requests: [
    {
      method: values.body ? 'POST' : 'GET',
      headers,
      setupRequest: (req) => ({
        ...req,
        path: template.replace(url.origin, '').replace('{ip}', pick()),
        body: values.body?.replace(/\{ip\}/g, () => pick()),
      }),
    },
  ],
});
process.stdout.write(
  `${template}: ${Math.round(result.requests.average)} req/s, p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ` +
    `non-2xx ${result.non2xx}, errors ${result.errors}\n`,
);
