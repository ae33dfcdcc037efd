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
    for (const testModule of testModules) {
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
    const tail = skipped > 0 ? `, ${skipped} skipped` : '';
    process.stdout.write(`\n${passed} passed, ${failed} failed${tail}\n`);
  }
}
