import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { classifyCallerCascade, verifyBuild, verifyBuildCommands } from './verify-build.js';

const ownership = {
  file_ownership: [
    { file: 'src/a.ts', agent: 'A', wave: 1 },
    { file: 'src/old.ts', agent: 'Z', wave: 0 },
    { file: 'src/later.ts', agent: 'C', wave: 2 },
    { file: 'cmd/later.go', agent: 'D', wave: 3 },
  ],
} as never;

describe('classifyCallerCascade (E47)', () => {
  it('errors only in later-wave or unowned files are a caller cascade', () => {
    const output = [
      'src/later.ts(12,5): error TS2554: Expected 2 arguments, but got 1.',
      './cmd/later.go:7:2: undefined: oldName',
      '/repo/src/untracked.ts:3:1 - error: gone',
      'FAIL some test',
    ].join('\n');
    const result = classifyCallerCascade({ output, manifest: ownership, wave: 1, repoDir: '/repo' });
    expect(result.errors.map((error) => [error.file, error.line, error.owner])).toEqual([
      ['src/later.ts', 12, 'later-wave'],
      ['cmd/later.go', 7, 'later-wave'],
      ['src/untracked.ts', 3, 'unowned'],
    ]);
    expect(result.caller_cascade_only).toBe(true);
    expect(result.mixed_errors).toBe(false);
    expect(result.files).toEqual(['cmd/later.go', 'src/later.ts', 'src/untracked.ts']);
  });

  it('an error in this wave or an earlier one is genuine; no located error is not classified', () => {
    const mixed = classifyCallerCascade({ output: 'src/a.ts:1:1: boom\nsrc/later.ts:2:2: boom', manifest: ownership, wave: 1, repoDir: '/repo' });
    expect(mixed).toMatchObject({ caller_cascade_only: false, mixed_errors: true });
    const earlier = classifyCallerCascade({ output: '  --> src/old.ts:4:9', manifest: ownership, wave: 1, repoDir: '/repo' });
    expect(earlier.errors[0]?.owner).toBe('earlier-wave');
    expect(earlier.caller_cascade_only).toBe(false);
    expect(classifyCallerCascade({ output: '\u001b[31msrc/later.ts:5:1\u001b[0m: error', manifest: ownership, wave: 1, repoDir: '/repo' }).errors[0]).toMatchObject({ file: 'src/later.ts', line: 5 });
    expect(classifyCallerCascade({ output: 'npm ERR! something failed', manifest: ownership, wave: 1, repoDir: '/repo' })).toMatchObject({ caller_cascade_only: false, errors: [] });
    expect(classifyCallerCascade({ output: '  File "src/later.ts", line 9, in <module>', manifest: ownership, wave: 1, repoDir: '/repo' }).errors[0]).toMatchObject({ file: 'src/later.ts', line: 9 });
  });
});

describe('verifyBuild (E10/E13)', () => {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'polywave-verify-')));

  it('runs test then lint in the directory; no-op commands pass without running', async () => {
    const data = await verifyBuild({ repoDir: dir, testCommand: 'echo tested; pwd', lintCommand: 'none' });
    expect(data).toMatchObject({ test_passed: true, lint_passed: true, test_exit_code: 0 });
    expect(data.test_output).toBe(`tested\n${dir}\n`);
    expect(data.lint_exit_code).toBeUndefined();
  });

  it('reports failures with output, and a timeout as a failure', async () => {
    const failed = await verifyBuild({ repoDir: dir, testCommand: 'echo broken >&2; exit 3', lintCommand: 'sleep 5', timeoutMs: 300 });
    expect(failed).toMatchObject({ test_passed: false, test_exit_code: 3, lint_passed: false });
    expect(failed.test_output).toContain('broken');
    expect(failed.lint_error).toMatch(/timed out/);
  });

  it('takes test_command/lint_command, else the first test/lint gate', () => {
    expect(verifyBuildCommands({ test_command: 'npm test', quality_gates: { gates: [{ type: 'lint', command: 'eslint .' }] } })).toEqual({ testCommand: 'npm test', lintCommand: 'eslint .' });
    expect(verifyBuildCommands({})).toEqual({ testCommand: '', lintCommand: '' });
  });
});
