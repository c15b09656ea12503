import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Three projects, shaped by what their files cost (docs/testing.md):
 *
 * - `unit` (test/unit): pure code, no server, no database; in parallel.
 * - `component` (test/integration, test/security, test/clients): the in-process test server over
 *   a database clone of the file's own; I/O-bound, so more files at once than there are cores.
 *   Not isolated: a worker imports the server's modules once and runs its files one after
 *   another on them (each file still starts its own server on its own database). Importing the
 *   whole graph again for each file had cost ~4 s of CPU a file: the project took 403 s and
 *   672 CPU-seconds isolated, 229 s and 349 CPU-seconds not (66 files, the same run). What
 *   that asks of a component file: no `vi.mock` of the server's modules (a module is loaded once
 *   per worker; count through what the code exposes, as reset-confirm.test.ts reads
 *   `hashActivity`), no settings through `process.env`, and no assertion on a process-wide
 *   high-water mark.
 * - `system` (test/system): real processes (the server, a private PostgreSQL and its replica,
 *   the CLI's binary, PgBouncer, rbldnsd and Postfix), Chromium, network namespaces, fail2ban and
 *   the CrowdSec bouncers, the code samples and contrib recipes, a build of the project in a
 *   folder of its own, the fifteen simulated months of the growth test. Each file has its own
 *   ports, databases, folders and namespaces, and none measures time or the machine's load: two
 *   files at a time, after the first two projects (they mostly wait on the processes they start).
 * - `system-alone` (the files in ALONE): what depends on having the machine to itself: the drains
 *   and stops under load, whose clients must see no failed request (zero-loss, shutdown,
 *   workers-stop, relay-processes), the outages (relay-outage's delivery race against a provider
 *   that stops, faults, failover), the hashing gate's peak (password-hashing) and data-growth's
 *   bytes of bloat under its own concurrency; one file at a time, last.
 *
 * Vitest runs one `sequence.groupOrder` group at a time, lowest first: `unit` and `component`
 * together (3 files at a time on the 2-core CI machine: the component files mostly wait on
 * PostgreSQL and sockets), then `system`, then `system-alone`. Its 26 files took 279 s one at a
 * time, 229 s split so (same machine, no coverage).
 */
const ALONE = [
  'zero-loss',
  'shutdown',
  'workers-stop',
  'relay-processes',
  'relay-outage',
  'faults',
  'failover',
  'password-hashing',
  'data-growth',
].map((name) => `test/system/${name}.test.ts`);

/**
 * The longest files of their projects (seconds on a quiet 2-core machine, without coverage),
 * started first. Vitest orders a project's files by its own record of their times, which a clean
 * clone (CI) does not have: it then starts the largest files first, and steady-state, 117 lines
 * and 40 s, would start last and run alone at the end while the other worker idles.
 */
const LONGEST = ['system/steady-state', 'system/first-hour-signals', 'security/accounts-web', 'integration/fuzz'].map((name) => `/test/${name}.test.ts`);

/** Vitest's order, with LONGEST moved to the front of their projects. */
class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (file: TestSpecification) => {
      const at = LONGEST.findIndex((name) => file.moduleId.endsWith(name));
      return at === -1 ? LONGEST.length : at;
    };
    // Vitest's order keeps each project's files together; each run of one project is reordered.
    const runs: TestSpecification[][] = [];
    for (const file of sorted) {
      const last = runs.at(-1);
      if (last && last[0]!.project.name === file.project.name) last.push(file);
      else runs.push([file]);
    }
    return runs.flatMap((run) => run.map((file, i) => ({ file, i })).sort((a, b) => rank(a.file) - rank(b.file) || a.i - b.i).map(({ file }) => file));
  }
}

export default defineConfig({
  test: {
    sequence: { sequencer: LongestFirst },
    // A timeout is there to end a test that hangs, not to time one: CI's Node.js 24 leg shares its
    // two cores with the Dockerfile's recipe, and a component file took 2.5 times as long there as
    // on a quiet machine (a test of 168 sign-ins, 12 s alone, ran past 30 s there). A test that
    // is heavy by design sets its own.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    reporters: ['default'],
    // `vitest run --coverage` (npm test does) reports the coverage of src/; the code that child
    // processes run (real server processes, the CLI's binary) is covered by what they do, not counted.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          pool: 'forks',
          // The same group as `component` (Vitest runs one group at a time, with one maxWorkers).
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'component',
          include: ['test/integration/**/*.test.ts', 'test/security/**/*.test.ts', 'test/clients/**/*.test.ts'],
          globalSetup: ['test/support/global-setup.ts'],
          pool: 'forks',
          isolate: false,
          maxWorkers: 3,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'system',
          include: ['test/system/**/*.test.ts'],
          exclude: ALONE,
          globalSetup: ['test/support/global-setup.ts'],
          pool: 'forks',
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'system-alone',
          include: ALONE,
          globalSetup: ['test/support/global-setup.ts'],
          pool: 'forks',
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
        },
      },
    ],
  },
});
