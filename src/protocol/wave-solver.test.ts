import { describe, expect, it } from 'vitest';
import { parseImpl } from './parse-impl.js';
import { solveWaves, solverFindings } from './wave-solver.js';

const manifest = (waves: string) => parseImpl(`title: t\nfeature_slug: t\nverdict: SUITABLE\ntest_command: x\nlint_command: y\nfile_ownership: []\nwaves:\n${waves}`).manifest!;

describe('solveWaves / solverFindings (validate --solver)', () => {
  it('places each agent one wave after its latest dependency', () => {
    const solution = solveWaves(manifest('  - number: 1\n    agents: [{id: A, task: a}, {id: B, task: b}]\n  - number: 2\n    agents: [{id: C, task: c, dependencies: [A, B]}]\n'));
    expect(solution).toEqual({
      valid: true,
      assignments: [
        { agent: 'A', declared_wave: 1, computed_wave: 1 },
        { agent: 'B', declared_wave: 1, computed_wave: 1 },
        { agent: 'C', declared_wave: 2, computed_wave: 2 },
      ],
      wave_count: 2,
      errors: [],
    });
  });

  it('too early is an error, later than needed a warning, extra waves SOLVER_OVER_SEQUENCED', () => {
    const early = solverFindings(manifest('  - number: 1\n    agents: [{id: A, task: a}, {id: B, task: b, dependencies: [A]}]\n'));
    expect(early.map((finding) => [finding.code, finding.severity])).toEqual([['SOLVER_WAVE_MISMATCH', 'error']]);
    const late = solverFindings(manifest('  - number: 1\n    agents: [{id: A, task: a}]\n  - number: 2\n    agents: [{id: B, task: b}]\n'));
    expect(late.map((finding) => [finding.code, finding.severity])).toEqual([
      ['SOLVER_WAVE_MISMATCH', 'warning'],
      ['SOLVER_OVER_SEQUENCED', 'warning'],
    ]);
  });

  it('unknown dependencies and cycles', () => {
    expect(solverFindings(manifest('  - number: 1\n    agents: [{id: A, task: a, dependencies: [Z]}]\n')).map((finding) => finding.code)).toEqual(['SOLVER_MISSING_DEP']);
    expect(solverFindings(manifest('  - number: 1\n    agents: [{id: A, task: a, dependencies: [B]}, {id: B, task: b, dependencies: [A]}]\n'))).toEqual([
      { code: 'SOLVER_CYCLE', message: 'dependency cycle: agents A, B depend on each other (I6)', severity: 'error', field: 'waves' },
    ]);
  });
});
