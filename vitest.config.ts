import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Sample projects the analysis tests copy into temporary repositories (their tests are data).
    exclude: ['**/node_modules/**', 'test/fixtures/**'],
    reporters: ['default', './test/support/count-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files at once: vitest's default (cores − 1) is ONE on a 2-core CI box, where most tests wait
    // on child processes (git, the CLI) and one file keeps ~1.5 cores busy; two files at once use both.
    // POLYWAVE_TEST_WORKERS overrides.
    maxWorkers: Number(process.env.POLYWAVE_TEST_WORKERS) || Math.max(2, os.availableParallelism() - 1),
    // The commands the tests run record events (issue 14): into a store of this test run, never the
    // user's per-user store. Tests about the store set their own POLYWAVE_EVENTS_DB.
    env: { POLYWAVE_EVENTS_DB: process.env.POLYWAVE_EVENTS_DB ?? path.join(os.tmpdir(), `polywave-test-events-${process.pid}.db`) },
  },
});
