import { describe, expect, it } from 'vitest';
import { diagnoseBuildFailure } from './build-diagnosis.js';

describe('diagnoseBuildFailure', () => {
  it('the earliest matching line wins, with the package filled into the fix', () => {
    const log = 'src/x.ts(1,1): error TS2307: Cannot find module \'./missing\' or its corresponding type declarations.\nError: Cannot find module \'zod\'';
    expect(diagnoseBuildFailure(log, 'typescript')).toMatchObject({ diagnosis: 'import_path_invalid', auto_fixable: false });
    expect(diagnoseBuildFailure("Error: Cannot find module 'zod'\nsomething else", 'javascript')).toMatchObject({ diagnosis: 'module_not_found', fix: 'npm install zod', auto_fixable: true, evidence: "Error: Cannot find module 'zod'" });
  });

  it.each([
    ['go', 'main.go:3:2: no required module provides package github.com/google/uuid; to add it:', 'missing_module', 'go get github.com/google/uuid && go mod tidy'],
    ['go', './a.go:9:14: not enough arguments in call to store.Save', 'signature_mismatch', undefined],
    ['rust', "error[E0432]: unresolved import `serde`", 'unresolved_import', 'cargo add serde'],
    ['python', "E   ImportError: cannot import name 'Thing' from 'pkg.mod'", 'import_name_missing', undefined],
    ['python', '  File "a.py", line 3\n    def f(:\nSyntaxError: invalid syntax', 'syntax_error', undefined],
  ] as const)('%s: %s → %s', (language, log, diagnosis, fix) => {
    const result = diagnoseBuildFailure(log, language);
    expect(result.diagnosis).toBe(diagnosis);
    if (fix) expect(result.fix).toContain(fix);
  });

  it('nothing known → unknown with confidence 0 and no evidence', () => {
    expect(diagnoseBuildFailure('all good?\n', 'rust')).toEqual({ diagnosis: 'unknown', confidence: 0, fix: 'Manual investigation required', rationale: 'No known pattern matched this error', auto_fixable: false });
  });
});
