import path from 'node:path';
import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints the closing line CI reads: `N passed, N failed[, N skipped]`.
 * Vitest's own summary is coloured and not recognised, so we count ourselves.
 */
export default class CountReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const durations: Array<[string, number]> = [];
    for (const testModule of testModules) {
      durations.push([testModule.moduleId, testModule.diagnostic().duration]);
      let failedHere = 0;
      for (const testCase of testModule.children.allTests()) {
        const state = testCase.result().state;
        if (state === 'passed') passed += 1;
        else if (state === 'failed') failedHere += 1;
        else skipped += 1;
      }
      // A module that failed with no failed test — it did not load, or a beforeAll/afterAll hook threw
      // (test/support/shared-process-guard.ts) — must count as a failure too.
      failed += failedHere > 0 ? failedHere : testModule.state() === 'failed' ? 1 : 0;
    }
    failed += unhandledErrors.length;
    // The suite must stay within CI's 30 minutes: the slowest files, so a CI log says where the time went.
    const slowest = durations.sort((a, b) => b[1] - a[1]).slice(0, 25);
    const total = durations.reduce((sum, [, ms]) => sum + ms, 0);
    process.stdout.write(`\nslowest test files (of ${durations.length}, ${(total / 1000).toFixed(0)} s in all):\n`);
    for (const [file, ms] of slowest) process.stdout.write(`  ${(ms / 1000).toFixed(1).padStart(7)} s  ${path.relative(process.cwd(), file)}\n`);
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\n${passed} passed, ${failed} failed${tail}\n`);
  }
}
