import os from 'node:os';
import path from 'node:path';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    reporters: ['default', './test/support/count-reporter.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Test files at once (vitest's default is cores − 1: one on a 2-core CI box). POLYWAVE_TEST_WORKERS overrides.
    ...(process.env.POLYWAVE_TEST_WORKERS ? { maxWorkers: Number(process.env.POLYWAVE_TEST_WORKERS) } : {}),
    // The commands the tests run record events (issue 14): into a store of this test run, never the
    // user's per-user store. Tests about the store set their own POLYWAVE_EVENTS_DB.
    env: { POLYWAVE_EVENTS_DB: process.env.POLYWAVE_EVENTS_DB ?? path.join(os.tmpdir(), `polywave-test-events-${process.pid}.db`) },
  },
});
