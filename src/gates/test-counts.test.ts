import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { addTestCounts, parseTestCounts } from './test-counts.js';

describe('parseTestCounts: the summary lines of common test runners', () => {
  it('node:test (run for real here): # pass / # fail', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-test-counts-'));
    writeFileSync(path.join(dir, 'a.test.mjs'), "import test from 'node:test';\ntest('a', () => {});\ntest('b', () => {});\ntest('c', () => { throw new Error('x'); });\n");
    const run = spawnSync(process.execPath, ['--test', '--test-reporter=tap', dir], { encoding: 'utf8' });
    expect(parseTestCounts(run.stdout + run.stderr)).toEqual({ passed: 2, failed: 1 });
  });

  it('captured outputs of Vitest, Jest, pytest (plain and -q), cargo test (two binaries), Mocha and go test -v, with colour codes', () => {
    expect(parseTestCounts(' Test Files  1 failed | 159 passed (160)\n      Tests  2 failed | 2262 passed | 1 expected fail | 1 skipped (2266)\n   Start at  04:07:07\n')).toEqual({ passed: 2262, failed: 2 });
    expect(parseTestCounts('\u001b[1m      Tests \u001b[22m \u001b[1m\u001b[32m14 passed\u001b[39m\u001b[22m\u001b[90m (14)\u001b[39m\n')).toEqual({ passed: 14, failed: 0 });
    expect(parseTestCounts('Test Suites: 1 failed, 2 passed, 3 total\nTests:       1 failed, 1 skipped, 7 passed, 9 total\nSnapshots:   0 total\n')).toEqual({ passed: 7, failed: 1 });
    expect(parseTestCounts('FAILED test_x.py::test_c - assert 0\n========================= 1 failed, 2 passed in 1.49s ==========================\n')).toEqual({ passed: 2, failed: 1 });
    expect(parseTestCounts('FAILED test_x.py::test_c - assert 0\n1 failed, 2 passed in 2.62s\n')).toEqual({ passed: 2, failed: 1 });
    expect(parseTestCounts('running 3 tests\ntest result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.78s\nrunning 1 test\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n')).toEqual({ passed: 3, failed: 1 });
    expect(parseTestCounts('  greet\n    ✔ says hello\n\n  4 passing (12ms)\n  1 failing\n\n  1) greet\n')).toEqual({ passed: 4, failed: 1 });
    expect(parseTestCounts('=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    --- PASS: TestB/sub (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\texample.com/x\t0.002s\n')).toEqual({ passed: 2, failed: 1 });
  });

  it('no summary → undefined (never a guessed 0); a summary of zero tests is 0/0; parts add up', () => {
    expect(parseTestCounts('tsc --noEmit\n')).toBeUndefined();
    expect(parseTestCounts('ok  \texample.com/x\t0.002s\n')).toBeUndefined();
    expect(parseTestCounts('# pass 0\n# fail 0\n')).toEqual({ passed: 0, failed: 0 });
    expect(addTestCounts([undefined, { passed: 2, failed: 1 }, { passed: 3, failed: 0 }])).toEqual({ passed: 5, failed: 1 });
    expect(addTestCounts([undefined, undefined])).toBeUndefined();
  });

  it('pytest for real when it is installed', () => {
    const pytest = spawnSync('python3', ['-c', 'import pytest'], { encoding: 'utf8' });
    if (pytest.status !== 0) return;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'polywave-test-counts-py-'));
    writeFileSync(path.join(dir, 'test_x.py'), 'def test_a():\n    assert 1\n\ndef test_b():\n    assert 0\n');
    let output: string;
    try {
      output = execFileSync('python3', ['-m', 'pytest', '-p', 'no:cacheprovider', dir], { encoding: 'utf8', cwd: dir });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? '');
    }
    expect(parseTestCounts(output)).toEqual({ passed: 1, failed: 1 });
  });
});
