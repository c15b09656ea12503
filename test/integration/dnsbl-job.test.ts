import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { loadConfig } from '../../src/config.js';
import { BlacklistJob } from '../../src/blacklist/job.js';
import { reportFromAccounts } from '../support/reports.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue 28: with DNSBL_FILE, every server process rewrites the DNS blocklist file when the
 * current snapshot is not the one it last wrote it from (the regeneration may have run on
 * another process), whole or not at all (a temporary file renamed over it).
 */
let s: TestServer;
let work: string;

beforeAll(async () => {
  s = await startTestServer();
  work = mkdtempSync(path.join(tmpdir(), 'trs-dnsbl-job-'));
});
afterAll(async () => {
  await s?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('DNSBL_FILE', () => {
  it('is rewritten after each new snapshot, and only then', async () => {
    const file = path.join(work, 'bl.rbldnsd');
    const snapshots = blacklistSnapshots(s.pool, s.clock, 3);
    const job = new BlacklistJob(snapshots, 15 * 60_000, pino({ level: 'silent' }), {
      file,
      zone: 'bl.example.net',
      confidence: 50,
      publicUrl: undefined,
    });
    // No snapshot yet: nothing to write.
    await job.exportDnsbl();
    expect(readdirSync(work)).toEqual([]);

    await reportFromAccounts(s, ['45.155.205.4']);
    const first = await snapshots.regenerate();
    await job.exportDnsbl();
    const text = readFileSync(file, 'utf8');
    expect(text).toContain(`$SOA 5m bl.example.net. hostmaster.bl.example.net. ${first.snapshotId} `);
    expect(text).toMatch(/^45\.155\.205\.4 :127\.0\.0\.2:Listed, abuse confidence \d+, categories 18 22$/m);
    const written = statSync(file).mtimeMs;

    // The same snapshot: the file is left alone.
    await new Promise((resolve) => setTimeout(resolve, 20));
    await job.exportDnsbl();
    expect(statSync(file).mtimeMs).toBe(written);

    // A new snapshot (made elsewhere): the file follows, and no temporary file is left.
    s.clock.advance(60_000);
    await reportFromAccounts(s, ['193.32.162.10']);
    const second = await snapshots.regenerate();
    expect(second.snapshotId).toBeGreaterThan(first.snapshotId);
    await job.exportDnsbl();
    expect(readFileSync(file, 'utf8')).toMatch(/^193\.32\.162\.10 :127\.0\.0\.2:/m);
    expect(readdirSync(work)).toEqual(['bl.rbldnsd']);
  });

  it('is read from the settings, with the zone checked', () => {
    expect(loadConfig({ DNSBL_FILE: '/var/lib/rbldnsd/trs', DNSBL_ZONE: 'BL.Example.COM.' }).dnsbl).toEqual({
      file: '/var/lib/rbldnsd/trs',
      zone: 'bl.example.com',
      confidence: 90,
    });
    expect(() => loadConfig({ DNSBL_ZONE: 'bl.example.com\n$SOA' })).toThrow(/DNSBL_ZONE/);
  });
});
