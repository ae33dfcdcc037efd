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
    // Test files at once: vitest's default (cores − 1) is ONE on a 2-core CI box. Most tests wait on
    // chains of short child processes (git, the CLI), so a file keeps well under a core busy: measured on
    // 2 cores (process accounting over the whole suite), two files at once left ~30% of the CPU idle;
    // three finish the suite ~5% sooner (1473 s against 1536–1650 s). POLYWAVE_TEST_WORKERS overrides.
    maxWorkers: Number(process.env.POLYWAVE_TEST_WORKERS) || Math.max(3, os.availableParallelism() - 1),
    // The commands the tests run record events (issue 14): into a store of this test run, never the
    // user's per-user store. Tests about the store set their own POLYWAVE_EVENTS_DB.
    env: { POLYWAVE_EVENTS_DB: process.env.POLYWAVE_EVENTS_DB ?? path.join(os.tmpdir(), `polywave-test-events-${process.pid}.db`) },
  },
});
