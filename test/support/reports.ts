import { expect } from 'vitest';
import { call } from './http.js';
import type { TestServer } from './server.js';

/**
 * Reports addresses from several new Enterprise accounts (one bulk report each, a second
 * apart), so that they score high enough for the lists: 8 accounts put an address in the 60s.
 */
export async function reportFromAccounts(s: TestServer, ips: string[], options: { categories?: string; reporters?: number } = {}) {
  const { categories = '18|22', reporters = 8 } = options;
  for (let r = 0; r < reporters; r++) {
    const { key } = await s.createKey('enterprise');
    s.clock.advance(1000);
    const csv = ips.map((ip) => `${ip},${categories},seed`).join('\n');
    expect((await call(s.origin, '/api/v2/bulk-report', { key, json: { csv } })).status).toBe(200);
  }
}
