import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../cli/main.js';
import type { CommandIo } from '../cli/io.js';
import { timeoutRetryNote } from '../protocol/e19.js';
import type { ImplManifest } from '../protocol/schema/impl-schema.js';
import { parseImpl } from '../protocol/parse-impl.js';
import { buildRetryContext, classifyError, maxExcerptLength, suggestFixes, type ErrorClass, type ErrorLanguage } from './retry-context.js';

/** One error output per class and language, in the shapes the real tools print. */
const samples: Array<{ errorClass: ErrorClass; language: ErrorLanguage; output: string }> = [
  // import
  { errorClass: 'import_error', language: 'go', output: 'pkg/api/server.go:5:2: could not import github.com/acme/store (no required module provides package "github.com/acme/store")' },
  { errorClass: 'import_error', language: 'typescript', output: "src/app.ts(3,21): error TS2307: Cannot find module './store' or its corresponding type declarations." },
  { errorClass: 'import_error', language: 'python', output: 'Traceback (most recent call last):\n  File "src/app.py", line 1, in <module>\n    import store\nModuleNotFoundError: No module named \'store\'' },
  { errorClass: 'import_error', language: 'rust', output: 'error[E0432]: unresolved import `crate::store`\n --> src/main.rs:3:5' },
  // type
  { errorClass: 'type_error', language: 'go', output: './server.go:12:15: cannot use s (variable of type *Store) as Repository value in argument to New' },
  { errorClass: 'type_error', language: 'typescript', output: "src/app.ts(10,7): error TS2322: Type 'string' is not assignable to type 'number'." },
  { errorClass: 'type_error', language: 'python', output: 'src/app.py:10: error: Argument 1 to "save" has incompatible type "str"; expected "int"  [arg-type]' },
  { errorClass: 'type_error', language: 'rust', output: 'error[E0308]: mismatched types\n --> src/lib.rs:10:5\n  |\n10 |     "x"\n  |     ^^^ expected `u32`, found `&str`' },
  // test
  { errorClass: 'test_failure', language: 'go', output: '--- FAIL: TestServer (0.00s)\n    server_test.go:20: got 1, want 2\nFAIL\tgithub.com/acme/api\t0.012s' },
  { errorClass: 'test_failure', language: 'typescript', output: ' FAIL  src/app.test.ts > adds\nAssertionError: expected 2 to be 3\n Test Files  1 failed (1)' },
  { errorClass: 'test_failure', language: 'python', output: 'FAILED tests/test_app.py::test_add - assert 2 == 3\n==== 1 failed, 3 passed in 0.12s ====' },
  { errorClass: 'test_failure', language: 'rust', output: "---- tests::adds stdout ----\nthread 'tests::adds' panicked at src/lib.rs:10:9:\nassertion failed\ntest result: FAILED. 0 passed; 1 failed" },
  // build
  { errorClass: 'build_error', language: 'go', output: './main.go:10:2: syntax error: unexpected newline, expected comma or }' },
  { errorClass: 'build_error', language: 'typescript', output: "src/app.ts(4,1): error TS1005: ';' expected." },
  { errorClass: 'build_error', language: 'python', output: '  File "src/app.py", line 3\n    def f(:\n          ^\nSyntaxError: invalid syntax' },
  { errorClass: 'build_error', language: 'rust', output: 'error: expected one of `!` or `::`, found `fn`\n --> src/lib.rs:3:1\nerror: could not compile `app` due to 1 previous error' },
  // lint
  { errorClass: 'lint_error', language: 'go', output: 'go vet ./...\n./server.go:10:2: printf: fmt.Sprintf format %d has arg s of wrong type string' },
  { errorClass: 'lint_error', language: 'typescript', output: "/repo/src/app.ts\n  3:7  error  'x' is assigned a value but never used  @typescript-eslint/no-unused-vars\n\n✖ 1 problem (1 error, 0 warnings)" },
  { errorClass: 'lint_error', language: 'python', output: 'src/app.py:1:8: F401 [*] `os` imported but unused\nFound 1 error.' },
  { errorClass: 'lint_error', language: 'rust', output: 'cargo clippy -- -D warnings\nerror: this `if` has identical blocks\n --> src/lib.rs:4:5' },
];

function manifestWith(report: Record<string, unknown> | undefined, extra: Partial<ImplManifest> = {}): ImplManifest {
  return {
    title: 'Retry',
    feature_slug: 'retry',
    verdict: 'SUITABLE',
    quality_gates: { gates: [{ type: 'build', command: 'go build ./...' }, { type: 'test', command: 'go test ./...' }] },
    ...(report ? { completion_reports: { A: report } } : {}),
    ...extra,
  } as ImplManifest;
}

describe('classifyError: pattern priority import → type → test → build → lint → unknown, four languages', () => {
  it.each(samples)('$errorClass in $language', ({ errorClass, language, output }) => {
    expect(classifyError(output)).toEqual({ errorClass, language });
    // The same output as a completion report's verification gives the same class and the language's fixes.
    const context = buildRetryContext(manifestWith({ status: 'partial', failure_type: 'fixable', verification: `FAIL (see output)\n${output}`, notes: '' }), 'A');
    expect(context.error_class).toBe(errorClass);
    expect(context.language).toBe(language);
    expect(context.suggested_fixes).toEqual(suggestFixes(errorClass, language));
    expect(context.suggested_fixes.length).toBeGreaterThan(0);
  });

  it('gives every language its own fixes for every class (never the Go ones for TypeScript)', () => {
    for (const sample of samples) {
      if (sample.language === 'go') continue;
      expect(suggestFixes(sample.errorClass, sample.language)).not.toEqual(suggestFixes(sample.errorClass, 'go'));
    }
    expect(suggestFixes('import_error', 'typescript').join(' ')).toMatch(/\.js/);
    expect(suggestFixes('lint_error', 'go')).toEqual(['Add missing documentation comments to exported symbols', 'Fix formatting with gofmt -w', 'Address go vet warnings']);
  });

  it('takes the higher-priority class when an output shows several', () => {
    expect(classifyError("error TS2307: Cannot find module 'x'\nerror TS2322: Type 'a' is not assignable to type 'b'").errorClass).toBe('import_error');
    expect(classifyError('--- FAIL: TestX\n./x.go:3: undefined: Foo').errorClass).toBe('type_error');
    expect(classifyError('2 tests failed\nSyntaxError: Unexpected token').errorClass).toBe('test_failure');
    expect(classifyError('build failed; eslint reported 3 problems').errorClass).toBe('build_error');
  });

  it('does not call every `FAIL (…)` verification a test failure (Go did) and falls back to unknown', () => {
    expect(classifyError('FAIL (the contract cannot be met as written)').errorClass).toBe('unknown');
    expect(classifyError('FAIL (tests failing in src/a.test.ts)').errorClass).toBe('test_failure');
    const context = buildRetryContext(manifestWith({ status: 'blocked', failure_type: 'escalate', verification: 'FAIL (gave up)', notes: 'needs a human' }), 'A');
    expect(context.error_class).toBe('unknown');
    expect(context.suggested_fixes.length).toBeGreaterThan(0);
    expect(context.language).toBeUndefined();
  });
});

describe('buildRetryContext', () => {
  it('has the Go keys, the sections in order, and the fix first for a fixable failure', () => {
    const manifest = manifestWith({ status: 'partial', failure_type: 'fixable', notes: 'Install the missing dependency: npm install zod', verification: "FAIL (src/a.ts(1,1): error TS2307: Cannot find module 'zod')" });
    const context = buildRetryContext(manifest, 'A', { attempt: 2 });
    expect(Object.keys(context)).toEqual(['attempt_number', 'agent_id', 'error_class', 'error_excerpt', 'gate_results', 'suggested_fixes', 'prior_notes', 'prompt_text', 'failure_type', 'language']);
    expect(context).toMatchObject({ attempt_number: 2, agent_id: 'A', error_class: 'import_error', failure_type: 'fixable', prior_notes: 'Install the missing dependency: npm install zod', gate_results: ['build: failed', 'test: failed'] });
    expect(context.error_excerpt).toBe(`${manifest.completion_reports!.A!.notes}\n${manifest.completion_reports!.A!.verification}`);
    const headings = context.prompt_text.split('\n').filter((line) => line.startsWith('#'));
    expect(headings).toEqual(['## Fix Required', '## Retry Context (Attempt 2)', '### Error Classification: import_error', '### Error Output', '### Suggested Fixes', '### Prior Attempt Notes']);
    expect(context.prompt_text).toContain('Apply this fix before proceeding with your task.');
    expect(context.prompt_text).not.toContain(timeoutRetryNote);
  });

  it('puts the E19 timeout note in a timeout retry (the Go code forgets it)', () => {
    const context = buildRetryContext(manifestWith({ status: 'partial', failure_type: 'timeout', notes: 'ran out of turns after the parser', verification: 'FAIL (not finished)' }), 'A');
    expect(context.failure_type).toBe('timeout');
    expect(context.prompt_text.startsWith('## Scope Reduction (E19 timeout)')).toBe(true);
    expect(context.prompt_text).toContain(timeoutRetryNote);
    expect(context.prompt_text).not.toContain('## Fix Required');
  });

  it('builds a timeout context without a report when the caller knows the failure type', () => {
    const context = buildRetryContext(manifestWith(undefined), 'A', { failureType: 'timeout', attempt: 2 });
    expect(context).toMatchObject({ agent_id: 'A', attempt_number: 2, failure_type: 'timeout', error_class: 'unknown', prior_notes: '' });
    expect(context.prompt_text).toContain(timeoutRetryNote);
  });

  it('refuses an agent without a report (R002_REPORT_MISSING, exit 1)', () => {
    expect(() => buildRetryContext(manifestWith(undefined), 'B')).toThrowError(expect.objectContaining({ code: 'R002_REPORT_MISSING', exitCode: 1 }));
  });

  it('cuts the excerpt to 2000 characters, fences output holding backticks, defaults attempt to 1', () => {
    const notes = `${'x'.repeat(2500)}`;
    const context = buildRetryContext(manifestWith({ status: 'partial', failure_type: 'transient', notes, verification: '```\nFAIL\n```' }), 'A', { attempt: 0 });
    expect(context.error_excerpt).toHaveLength(maxExcerptLength);
    expect(context.attempt_number).toBe(1);
    expect(context.failure_type).toBe('transient');
    const fenced = buildRetryContext(manifestWith({ status: 'partial', failure_type: 'transient', notes: 'n', verification: '```\nFAIL\n```' }), 'A');
    expect(fenced.prompt_text).toContain('````\nn\n```\nFAIL\n```\n````');
  });

  it('omits failure_type when the report has none and marks gates passed for a complete report', () => {
    const context = buildRetryContext(manifestWith({ status: 'complete', verification: 'PASS', notes: '' }), 'A');
    expect('failure_type' in context).toBe(false);
    expect(context.gate_results).toEqual(['build: passed', 'test: passed']);
  });
});

describe('polywave build-retry-context (CLI, in process)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'pw-retry-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const implPath = path.join(dir, 'IMPL-retry.yaml');
  writeFileSync(
    implPath,
    [
      'title: Retry',
      'feature_slug: retry',
      'verdict: SUITABLE',
      'completion_reports:',
      '    A:',
      '        status: partial',
      '        failure_type: timeout',
      '        verification: "FAIL (--- FAIL: TestParse)"',
      '        notes: "ran out of turns"',
      '',
    ].join('\n'),
  );
  expect(parseImpl(readFileSync(implPath, 'utf8')).manifest).toBeTruthy();

  function io(): CommandIo & { out: string; err: string } {
    const state = { out: '', err: '' };
    return Object.assign(state, {
      cwd: dir,
      env: {},
      now: () => new Date('2026-01-01T00:00:00Z'),
      stdout: (text: string) => void (state.out += text),
      stderr: (text: string) => void (state.err += text),
      readStdin: async () => '',
    });
  }

  it('prints the Go JSON keys', async () => {
    const cli = io();
    expect(await main(['build-retry-context', implPath, '--agent', 'A', '--attempt', '2'], cli)).toBe(0);
    const json = JSON.parse(cli.out) as Record<string, unknown>;
    expect(Object.keys(json)).toEqual(['attempt_number', 'agent_id', 'error_class', 'error_excerpt', 'gate_results', 'suggested_fixes', 'prior_notes', 'prompt_text', 'failure_type', 'language']);
    expect(json).toMatchObject({ attempt_number: 2, agent_id: 'A', error_class: 'test_failure', failure_type: 'timeout', language: 'go', gate_results: [] });
    expect(json.prompt_text).toContain(timeoutRetryNote);
  });

  it('exits 1 with one coded line for an agent without a report, 2 without --agent', async () => {
    const missing = io();
    expect(await main(['build-retry-context', implPath, '--agent', 'Z'], missing)).toBe(1);
    expect(missing.out).toBe('');
    expect(missing.err).toMatch(/^polywave: error\[R002_REPORT_MISSING\]: no completion report found for agent Z\n$/);
    const noAgent = io();
    expect(await main(['build-retry-context', implPath], noAgent)).toBe(2);
    expect(noAgent.err).toMatch(/^polywave: error\[X001_INVALID_INPUT\]/);
  });
});

