import { describe, expect, it } from 'vitest';
import { implModel, type ImplManifest } from './schema/impl-schema.js';
import {
  checkConflicts,
  isProtocolOwnedPath,
  normalizeReportedPath,
  ownershipConflictsInWave,
  preMergeOwnershipFindings,
  reportConflicts,
} from './conflicts.js';

function manifest(raw: Record<string, unknown>): ImplManifest {
  return implModel.manifest.parse(raw);
}

const base = {
  waves: [
    { number: 1, agents: [{ id: 'A', task: 't' }, { id: 'B', task: 't' }] },
    { number: 2, agents: [{ id: 'C', task: 't' }] },
  ],
  file_ownership: [
    { file: 'src/a.ts', agent: 'A', wave: 1 },
    { file: 'src/b.ts', agent: 'B', wave: 1 },
    { file: 'src/c.ts', agent: 'C', wave: 2 },
    { file: 'src/a.ts', agent: 'C', wave: 2, action: 'modify' },
  ],
};

function withReports(reports: Record<string, unknown>, extra: Record<string, unknown> = {}): ImplManifest {
  return manifest({ ...base, ...extra, completion_reports: reports });
}

describe('protocol-owned paths (E11)', () => {
  it.each(['docs/IMPL/IMPL-x.yaml', '/docs/IMPL/complete/IMPL-x.yaml', './.polywave-state/wave1/A', '.polywave-state/archive/x'])('ignores %s', (path) => {
    expect(isProtocolOwnedPath(path)).toBe(true);
  });

  it.each(['docs/IMPLEMENTATION.md', 'docs/IMPL', 'docs/impl/x', 'src/docs/IMPL/x', '.polywave-statefile'])('does not ignore %s', (path) => {
    expect(isProtocolOwnedPath(path)).toBe(false);
  });

  it('normalizes reported paths', () => {
    expect(normalizeReportedPath(' ./src/a.ts ')).toBe('src/a.ts');
    expect(normalizeReportedPath('/src/a.ts')).toBe('src/a.ts');
  });
});

describe('reportConflicts', () => {
  it('finds nothing when every agent touches only its own files', () => {
    const impl = withReports({
      A: { status: 'complete', files_changed: ['src/a.ts'] },
      B: { status: 'complete', files_created: ['src/b.ts'] },
      C: { status: 'complete', files_changed: ['src/a.ts', 'src/c.ts'] },
    });
    // reference §10.28: the same file in different waves is fine
    expect(checkConflicts(impl)).toEqual({ conflict_count: 0, conflicts: [] });
  });

  it('reports a file claimed by two agents of a wave, and the non-owner (reference §10.28)', () => {
    const impl = withReports({
      A: { status: 'complete', files_changed: ['src/a.ts'] },
      B: { status: 'complete', files_changed: ['src/b.ts', 'src/a.ts'] },
    });
    expect(reportConflicts(impl)).toEqual([
      { file: 'src/a.ts', agents: ['A', 'B'], wave: 1, wave_number: 1, kind: 'multiple_agents' },
      { file: 'src/a.ts', agents: ['B'], wave: 1, wave_number: 1, kind: 'undeclared_modification', owners: ['A', 'C'] },
    ]);
  });

  it('reports B touching A\'s file even when A did not list it', () => {
    const impl = withReports({ A: { status: 'complete', files_changed: [] }, B: { status: 'complete', files_changed: ['src/a.ts'] } });
    const conflicts = reportConflicts(impl);
    expect(conflicts).toHaveLength(1);
    expect(conflicts[0]).toMatchObject({ file: 'src/a.ts', agents: ['B'], kind: 'undeclared_modification', owners: ['A', 'C'] });
    expect([...conflicts[0]!.agents, ...conflicts[0]!.owners!]).toEqual(expect.arrayContaining(['A', 'B']));
  });

  it('flags an undeclared modification when the owner is in another wave (Go ignores it)', () => {
    const impl = withReports({ C: { status: 'complete', files_changed: ['src/b.ts'] } });
    expect(reportConflicts(impl)).toEqual([
      { file: 'src/b.ts', agents: ['C'], wave: 2, wave_number: 2, kind: 'undeclared_modification', owners: ['B'] },
    ]);
  });

  it('flags a file nobody owns', () => {
    const impl = withReports({ A: { status: 'complete', files_created: ['src/new.ts'] } });
    expect(reportConflicts(impl)).toEqual([
      { file: 'src/new.ts', agents: ['A'], wave: 1, wave_number: 1, kind: 'undeclared_modification', owners: [] },
    ]);
  });

  it('does not report an agent against itself for a file in both of its lists', () => {
    const impl = withReports({ A: { status: 'complete', files_changed: ['src/a.ts', './src/a.ts'], files_created: ['src/a.ts'] } });
    expect(reportConflicts(impl)).toEqual([]);
  });

  it('ignores protocol-owned paths but not look-alikes', () => {
    const impl = withReports({
      A: { status: 'complete', files_changed: ['docs/IMPL/IMPL-x.yaml', '.polywave-state/wave1/A', 'docs/IMPLEMENTATION.md'] },
      B: { status: 'complete', files_changed: ['docs/IMPL/IMPL-x.yaml'] },
    });
    expect(reportConflicts(impl).map((conflict) => [conflict.file, conflict.kind])).toEqual([['docs/IMPLEMENTATION.md', 'undeclared_modification']]);
  });

  it('skips agents without reports and handles a manifest without reports', () => {
    expect(reportConflicts(manifest(base))).toEqual([]);
    expect(reportConflicts(manifest({}))).toEqual([]);
    expect(reportConflicts(withReports({ Z: { status: 'complete', files_changed: ['x'] } }))).toEqual([]);
  });

  it('restricts to one wave; an unknown wave gives nothing', () => {
    const impl = withReports({
      A: { status: 'complete', files_changed: ['x.ts'] },
      C: { status: 'complete', files_changed: ['y.ts'] },
    });
    expect(reportConflicts(impl, 2).map((conflict) => conflict.file)).toEqual(['y.ts']);
    expect(reportConflicts(impl, 7)).toEqual([]);
    expect(checkConflicts(impl).conflict_count).toBe(2);
  });

  it('sorts by file, then agents', () => {
    const impl = withReports({
      A: { status: 'complete', files_changed: ['z.ts', 'm.ts'] },
      B: { status: 'complete', files_changed: ['m.ts', 'a.ts'] },
    });
    expect(reportConflicts(impl).map((conflict) => `${conflict.file}:${conflict.agents.join(',')}:${conflict.kind}`)).toEqual([
      'a.ts:B:undeclared_modification',
      'm.ts:A,B:multiple_agents',
      'm.ts:A,B:undeclared_modification',
      'z.ts:A:undeclared_modification',
    ]);
  });

  it('compares per repository in multi-repo IMPLs', () => {
    const multi = {
      waves: [{ number: 1, agents: [{ id: 'A', task: 't' }, { id: 'B', task: 't' }] }],
      file_ownership: [
        { file: 'README.md', agent: 'A', wave: 1, repo: 'web' },
        { file: 'README.md', agent: 'B', wave: 1, repo: 'api' },
      ],
    };
    const clean = manifest({
      ...multi,
      completion_reports: {
        A: { status: 'complete', repo: '/Users/x/code/web', files_changed: ['README.md'] },
        B: { status: 'complete', repo: 'api', files_changed: ['README.md'] },
      },
    });
    expect(reportConflicts(clean)).toEqual([]);
    const clash = manifest({
      ...multi,
      completion_reports: {
        A: { status: 'complete', repo: 'web', files_changed: ['README.md'] },
        B: { status: 'complete', repo: '/abs/web/', files_changed: ['README.md'] },
      },
    });
    expect(reportConflicts(clash)).toEqual([
      { file: 'README.md', agents: ['A', 'B'], wave: 1, wave_number: 1, repo: 'web', kind: 'multiple_agents' },
      { file: 'README.md', agents: ['B'], wave: 1, wave_number: 1, repo: 'web', kind: 'undeclared_modification', owners: ['A'] },
    ]);
    // without report repos, the owners' repositories decide
    const inferred = manifest({
      ...multi,
      completion_reports: { A: { status: 'complete', files_changed: ['README.md'] }, B: { status: 'complete', files_changed: ['README.md'] } },
    });
    expect(reportConflicts(inferred)).toEqual([]);
  });

  it('serializes keys in the documented order', () => {
    const impl = withReports({ A: { status: 'complete', repo: 'r', files_created: ['n.ts'] } });
    expect(Object.keys(reportConflicts(impl)[0]!)).toEqual(['file', 'agents', 'wave', 'wave_number', 'repo', 'kind', 'owners']);
  });
});

describe('ownershipConflictsInWave (I1 / E3)', () => {
  it('reports a file owned by two agents of the wave', () => {
    const impl = manifest({
      ...base,
      file_ownership: [...base.file_ownership, { file: 'src/a.ts', agent: 'B', wave: 1 }, { file: 'src/b.ts', agent: 'B', wave: 1 }],
    });
    expect(ownershipConflictsInWave(impl, 1)).toEqual([{ file: 'src/a.ts', agents: ['A', 'B'], wave: 1, wave_number: 1, kind: 'multiple_agents' }]);
    // same file in different waves is fine; one agent twice is not a conflict
    expect(ownershipConflictsInWave(impl, 2)).toEqual([]);
    expect(ownershipConflictsInWave(impl, 5)).toEqual([]);
  });

  it('is per repository', () => {
    const impl = manifest({
      file_ownership: [
        { file: 'go.mod', agent: 'A', wave: 1, repo: 'web' },
        { file: 'go.mod', agent: 'B', wave: 1, repo: 'api' },
        { file: 'x', agent: 'A', wave: 1, repo: 'api' },
        { file: 'x', agent: 'B', wave: 1, repo: '/abs/api' },
      ],
    });
    expect(ownershipConflictsInWave(impl, 1)).toEqual([{ file: 'x', agents: ['A', 'B'], wave: 1, wave_number: 1, repo: 'api', kind: 'multiple_agents' }]);
  });
});

describe('preMergeOwnershipFindings (§8.5)', () => {
  it('reports a missing wave', () => {
    expect(preMergeOwnershipFindings(manifest(base), 9)).toEqual([
      { code: 'P011_WAVE_NOT_FOUND', severity: 'error', field: 'waves', message: 'wave 9 not found in manifest' },
    ]);
  });

  it('reports unknown agents and duplicate owners', () => {
    const impl = manifest({
      ...base,
      file_ownership: [...base.file_ownership, { file: 'src/b.ts', agent: 'A', wave: 1 }, { file: 'src/z.ts', agent: 'Q', wave: 1 }],
    });
    expect(preMergeOwnershipFindings(impl, 1)).toEqual([
      {
        code: 'V002_DISJOINT_OWNERSHIP',
        severity: 'error',
        field: 'file_ownership[4]',
        message: 'file "src/b.ts" is owned by both agent "B" and agent "A" in wave 1 (I1 violation)',
      },
      {
        code: 'P012_UNKNOWN_AGENT_IN_OWNERSHIP',
        severity: 'error',
        field: 'file_ownership[5].agent',
        message: 'file_ownership entry for wave 1 references unknown agent "Q" (file: src/z.ts)',
      },
    ]);
    expect(preMergeOwnershipFindings(manifest(base), 2)).toEqual([]);
  });
});
