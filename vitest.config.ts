import { defineConfig } from 'vitest/config';

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
 * - `system` (test/system): real processes (the server, the supervisor, a private PostgreSQL,
 *   the CLI's binary), Chromium, network namespaces, fail2ban and the CrowdSec bouncers, the code
 *   samples and contrib recipes, and the files whose measure depends on having the machine to
 *   themselves (relay-outage's delivery race against a provider that stops, data-growth's bytes
 *   of bloat under its own concurrency); one file at a time, and after the other two projects
 *   are done, so their drains, restarts and timings never share the machine with another file.
 *
 * Vitest runs one `sequence.groupOrder` group at a time, lowest first: `unit` and `component`
 * together (3 files at a time on the 2-core CI machine: the component files mostly wait on
 * PostgreSQL and sockets), then `system` alone.
 */
export default defineConfig({
  test: {
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
          globalSetup: ['test/support/global-setup.ts'],
          pool: 'forks',
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
