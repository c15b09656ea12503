import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PurgeJob, PURGE_QUEUE } from '../../src/account/job.js';
import { blacklistSnapshots } from '../../src/blacklist/repository.js';
import { BlacklistJob } from '../../src/blacklist/job.js';
import { Scheduler } from '../../src/jobs/scheduler.js';
import { loadConfig } from '../../src/config.js';
import { purgeSettingsOf } from '../../src/account/job.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * The scheduled jobs on pg-boss schedules: two schedulers stand for two server processes on one
 * database; each job runs once across both, whichever process takes it.
 */
let s: TestServer;
let schedulers: Scheduler[] = [];
const silent = pino({ level: 'silent' });

/** Two "processes": schedulers that look for due schedules and sent jobs every second. */
const twoProcesses = async (logger = silent) => {
  const opened = await Promise.all(
    [0, 1].map(() => Scheduler.open(s.db.url, logger, { max: 1, cronMonitorIntervalSeconds: 1, cronWorkerIntervalSeconds: 1, pollingIntervalSeconds: 1 })),
  );
  schedulers.push(...opened);
  return opened;
};
const until = async (check: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => {
  await Promise.all(schedulers.map((scheduler) => scheduler.stop()));
  await s?.close();
});

describe('the scheduler (pg-boss schedule())', () => {
  it('runs a job its cron makes due on one process of two, and never two runs at once', async () => {
    const [a, b] = await twoProcesses();
    const started: string[] = [];
    let active = 0;
    let mostActive = 0;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    for (const [name, scheduler] of [['a', a!], ['b', b!]] as const) {
      await scheduler.add({
        name: 'test-every-minute',
        cron: '* * * * *',
        expireInSeconds: 60,
        run: async () => {
          started.push(name);
          mostActive = Math.max(mostActive, ++active);
          await released;
          active--;
        },
      });
    }
    await until(() => started.length > 0);
    // Asked again by both while the run is under way: one run waits (`stately`), none starts.
    const asked = await Promise.all([a!.runSoon('test-every-minute'), b!.runSoon('test-every-minute')]);
    expect(asked.filter(Boolean).length).toBeLessThanOrEqual(1);
    // Both processes look for due schedules and jobs every second: for 4 s neither starts a
    // second run while the first is under way.
    await sleep(4_000);
    expect(started).toHaveLength(1);
    release();
    // Then the waiting one runs, never beside another.
    await until(() => started.length >= 2);
    expect(mostActive).toBe(1);
  });

  it('a first run asked for by both processes as they start is made once, whenever each asks', async () => {
    const [a, b] = await twoProcesses();
    let runs = 0;
    for (const scheduler of [a!, b!]) {
      await scheduler.add({ name: 'test-yearly', cron: '0 0 1 1 *', expireInSeconds: 60, run: async () => void runs++ });
    }
    // At once, and again once the first run is done: one run per hour across both.
    const sent = await Promise.all([a!.runSoon('test-yearly', { oncePerSeconds: 3600 }), b!.runSoon('test-yearly', { oncePerSeconds: 3600 })]);
    expect(sent.filter(Boolean)).toHaveLength(1);
    await until(() => runs > 0);
    expect(await b!.runSoon('test-yearly', { oncePerSeconds: 3600 })).toBeNull();
    await sleep(2_500);
    expect(runs).toBe(1);
  });

  it('the blacklist regeneration and the purge run once across two processes started together', async () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(chunk.toString());
          done();
        },
      }),
    );
    const snapshotCount = async () =>
      (await s.pool.query<{ n: number }>('select count(*)::int as n from blacklist_snapshots')).rows[0]!.n;
    const before = await snapshotCount();
    const processes = await twoProcesses(logger);
    const config = loadConfig({});
    await Promise.all(
      processes.map(async (scheduler) => {
        await new BlacklistJob(blacklistSnapshots(s.pool, s.clock), 15 * 60_000, logger).start(scheduler);
        await new PurgeJob(s.pool, s.clock, purgeSettingsOf(config), logger).start(scheduler);
      }),
    );
    const said = (message: string) => lines.filter((line) => line.includes(`"msg":"${message}"`)).length;
    await until(async () => (await snapshotCount()) > before && said('account data purged') > 0);
    await sleep(3_000);
    expect(await snapshotCount()).toBe(before + 1);
    expect(said('blacklist regenerated')).toBe(1);
    expect(said('account data purged')).toBe(1);
    // Each run was a pg-boss job of its queue, completed.
    const { rows } = await s.pool.query<{ name: string; state: string }>(
      `select name, state from pgboss.job where name = any($1) and state = 'completed'`,
      [[PURGE_QUEUE]],
    );
    expect(rows).toHaveLength(1);
  });
});
