import { describe, expect, it } from 'vitest';
import { checkImplConflicts } from './impl-conflicts.js';
import { parseImpl } from './parse-impl.js';

const impl = (rows: string) => parseImpl(`title: t\nfeature_slug: t\nverdict: SUITABLE\ntest_command: x\nlint_command: y\nfile_ownership:\n${rows}waves: []\n`).manifest!;

describe('checkImplConflicts (P1 across IMPLs)', () => {
  it('per repository: the same path in two repositories is not a conflict', () => {
    const report = checkImplConflicts([
      { slug: 'a', manifest: impl('  - {file: x.ts, agent: A, wave: 1, repo: api}\n  - {file: y.ts, agent: A, wave: 1}\n') },
      { slug: 'b', manifest: impl('  - {file: x.ts, agent: A, wave: 1, repo: web}\n  - {file: y.ts, agent: B, wave: 2}\n') },
      { slug: 'c', manifest: impl('  - {file: x.ts, agent: A, wave: 1, repo: /abs/api}\n') },
    ]);
    expect(report).toEqual({
      conflicts: [
        { file: 'x.ts', impls: ['a', 'c'], repos: ['api'] },
        { file: 'y.ts', impls: ['a', 'b'] },
      ],
      disjoint_sets: [['a', 'b', 'c']],
      tier_suggestion: { a: 1, b: 2, c: 2 },
    });
  });
});
