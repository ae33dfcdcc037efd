import { describe, expect, it } from 'vitest';
import { implModel } from '../schema/impl-schema.js';
import { programModel, type ProgramManifest } from '../schema/program-schema.js';
import { frozenProgramContracts, isHeldForHuman, partitionImplsByStatus, validateProgramImport, type ProgramImplDoc } from './import-mode.js';

function program(overrides: { statuses?: Record<string, string>; freezeAt?: string } = {}): ProgramManifest {
  const status = (slug: string, fallback: string) => overrides.statuses?.[slug] ?? fallback;
  return programModel.manifest.parse({
    title: 'Dashboard v2',
    program_slug: 'dashboard-v2',
    state: 'TIER_EXECUTING',
    program_contracts: [
      { name: 'UserSession', definition: 'type UserSession struct{}', location: 'pkg/types/session.go', freeze_at: overrides.freezeAt ?? 'tier-1' },
    ],
    impls: [
      { slug: 'auth', title: 'Auth', tier: 1, status: status('auth', 'complete') },
      { slug: 'data-model', title: 'Data', tier: 1, status: status('data-model', 'complete') },
      { slug: 'views', title: 'Views', tier: 2, depends_on: ['auth'], status: status('views', 'reviewed') },
      { slug: 'widgets', title: 'Widgets', tier: 2, depends_on: ['auth'], status: status('widgets', 'pending') },
    ],
    tiers: [
      { number: 1, impls: ['auth', 'data-model'] },
      { number: 2, impls: ['views', 'widgets'] },
    ],
    completion: { tiers_complete: 1, tiers_total: 2, impls_complete: 2, impls_total: 4, total_agents: 0, total_waves: 0 },
  });
}

function doc(
  path: string,
  state: string,
  files: Array<{ file: string; repo?: string; wave?: number }>,
  contracts: string[] = [],
  repository?: string,
): ProgramImplDoc {
  return {
    path,
    manifest: implModel.manifest.parse({
      title: path,
      feature_slug: path.replace(/^.*IMPL-|\.yaml$/g, ''),
      verdict: 'SUITABLE',
      state,
      repository,
      file_ownership: files.map((row) => ({ agent: 'A', wave: 1, ...row })),
      interface_contracts: contracts.map((name) => ({ name, definition: 'x', location: 'y' })),
    }),
  };
}

function docs(entries: Record<string, ProgramImplDoc>): Map<string, ProgramImplDoc> {
  return new Map(Object.entries(entries));
}

const healthy = () => ({
  auth: doc('docs/IMPL/complete/IMPL-auth.yaml', 'COMPLETE', [{ file: 'pkg/auth/auth.go' }, { file: 'pkg/types/session.go' }], ['UserSession']),
  'data-model': doc('docs/IMPL/complete/IMPL-data-model.yaml', 'COMPLETE', [{ file: 'pkg/models/user.go' }]),
  views: doc('docs/IMPL/IMPL-views.yaml', 'REVIEWED', [{ file: 'web/views.tsx' }, { file: 'web/views.tsx', wave: 2 }]),
});

function compact(findings: ReturnType<typeof validateProgramImport>) {
  return findings.map(({ code, message, field, file }) => ({ code, message, field, file }));
}

describe('validateProgramImport (E28A, §13.4)', () => {
  it('accepts consistent pre-existing IMPLs; the producer of a frozen contract is not a redefinition', () => {
    expect(validateProgramImport(program(), docs(healthy()))).toEqual([]);
  });

  it('V031: a reviewed/complete IMPL without a doc (pending ones need none)', () => {
    const entries = healthy() as Record<string, ProgramImplDoc>;
    delete entries.views;
    expect(compact(validateProgramImport(program(), docs(entries)))).toEqual([
      {
        code: 'V031_IMPL_FILE_MISSING',
        message: 'IMPL "views" has status "reviewed" but IMPL-views.yaml not found in docs/IMPL/ or docs/IMPL/complete/',
        field: 'impls[2]',
        file: undefined,
      },
    ]);
  });

  it('V031: a doc that does not parse', () => {
    const entries = { ...healthy(), views: { path: 'docs/IMPL/IMPL-views.yaml', manifest: null, parseError: 'line 3: bad indentation' } };
    expect(validateProgramImport(program(), docs(entries)).map((finding) => finding.message)).toEqual([
      'IMPL "views": failed to parse docs/IMPL/IMPL-views.yaml: line 3: bad indentation',
    ]);
  });

  it('V032: state mismatches for reviewed and complete', () => {
    const entries = {
      ...healthy(),
      'data-model': doc('docs/IMPL/IMPL-data-model.yaml', 'WAVE_EXECUTING', [{ file: 'pkg/models/user.go' }]),
      views: doc('docs/IMPL/IMPL-views.yaml', 'SCOUT_PENDING', [{ file: 'web/views.tsx' }]),
    };
    expect(compact(validateProgramImport(program(), docs(entries)))).toEqual([
      {
        code: 'V032_IMPL_STATE_MISMATCH',
        message: 'IMPL "data-model" has program status "complete" but IMPL doc state is "WAVE_EXECUTING" (expected COMPLETE)',
        field: 'impls[1].status',
        file: undefined,
      },
      {
        code: 'V032_IMPL_STATE_MISMATCH',
        message: 'IMPL "views" has program status "reviewed" but IMPL doc state is "SCOUT_PENDING" (expected REVIEWED or later)',
        field: 'impls[2].status',
        file: undefined,
      },
    ]);
  });

  it('reviewed accepts every REVIEWED-or-later state and the spec SCOUT_COMPLETE', () => {
    for (const state of ['SCOUT_COMPLETE', 'REVIEWED', 'SCAFFOLD_PENDING', 'WAVE_PENDING', 'WAVE_EXECUTING', 'WAVE_MERGING', 'WAVE_VERIFIED', 'COMPLETE']) {
      const entries = { ...healthy(), views: doc('docs/IMPL/IMPL-views.yaml', state, [{ file: 'web/views.tsx' }]) };
      expect(validateProgramImport(program(), docs(entries))).toEqual([]);
    }
  });

  it('P2 (V030): a later-tier IMPL redefining a frozen contract', () => {
    const entries = { ...healthy(), views: doc('docs/IMPL/IMPL-views.yaml', 'REVIEWED', [{ file: 'web/views.tsx' }], ['ViewModel', 'UserSession']) };
    expect(compact(validateProgramImport(program(), docs(entries)))).toEqual([
      {
        code: 'V030_P2_CONTRACT_REDEFINITION',
        message: 'IMPL "views" redefines frozen program contract "UserSession"',
        field: 'interface_contracts[1].name',
        file: 'docs/IMPL/IMPL-views.yaml',
      },
    ]);
  });

  it('P2 by ownership: a later-tier IMPL owning the file of a frozen contract whose location carries a #Symbol or :line suffix', () => {
    for (const location of ['pkg/types/session.go#UserSession', './pkg/types/session.go:12']) {
      const manifest = program();
      manifest.program_contracts[0]!.location = location;
      const entries = { ...healthy(), views: doc('docs/IMPL/IMPL-views.yaml', 'REVIEWED', [{ file: 'web/views.tsx' }, { file: 'pkg/types/session.go' }]) };
      const findings = validateProgramImport(manifest, docs(entries));
      expect(findings.map((finding) => [finding.code, finding.field]), location).toEqual([['V030_P2_CONTRACT_REDEFINITION', 'file_ownership[1].file']]);
      expect(findings[0]!.message).toContain('owns pkg/types/session.go');
    }
  });

  it('P2 also applies to IMPLs that are not pre-existing, when their doc is passed', () => {
    const entries = { ...healthy(), widgets: doc('docs/IMPL/IMPL-widgets.yaml', 'SCOUT_PENDING', [{ file: 'web/w.tsx' }], ['UserSession']) };
    expect(validateProgramImport(program(), docs(entries)).map((finding) => finding.code)).toEqual(['V030_P2_CONTRACT_REDEFINITION']);
  });

  it('P2: no redefinition while the freeze tier is incomplete, or with freeze_at spelled "Tier 1 completion"', () => {
    const entries = { ...healthy(), views: doc('docs/IMPL/IMPL-views.yaml', 'REVIEWED', [{ file: 'web/views.tsx' }], ['UserSession']) };
    const incomplete = { ...entries, auth: doc('docs/IMPL/IMPL-auth.yaml', 'REVIEWED', [{ file: 'pkg/auth/auth.go' }]) };
    expect(validateProgramImport(program({ statuses: { auth: 'reviewed' } }), docs(incomplete))).toEqual([]);
    expect(frozenProgramContracts(program({ freezeAt: 'Tier 1 completion' }))).toEqual(new Map([['UserSession', 1]]));
    expect(frozenProgramContracts(program({ freezeAt: 'tier-2' }))).toEqual(new Map());
    expect(validateProgramImport(program({ freezeAt: 'Tier 1 completion' }), docs(entries)).map((finding) => finding.code)).toEqual([
      'V030_P2_CONTRACT_REDEFINITION',
    ]);
  });

  it('P1 (V029): two IMPLs of one tier own the same file; one IMPL listing a file twice is fine', () => {
    const entries = {
      ...healthy(),
      widgets: doc('docs/IMPL/IMPL-widgets.yaml', 'SCOUT_PENDING', [{ file: 'web/app.tsx' }, { file: './web/views.tsx' }]),
    };
    expect(compact(validateProgramImport(program(), docs(entries)))).toEqual([
      {
        code: 'V029_P1_FILE_OVERLAP',
        message: 'File web/views.tsx owned by both views and widgets in tier 2 (violates P1 disjoint ownership)',
        field: 'file_ownership[1].file',
        file: 'docs/IMPL/IMPL-widgets.yaml',
      },
    ]);
  });

  it('P1 is per repository: the same path in two repos is no conflict; an unknown repo conflicts with any', () => {
    const twoRepos = {
      ...healthy(),
      views: doc('docs/IMPL/IMPL-views.yaml', 'REVIEWED', [{ file: 'src/index.ts', repo: 'web' }]),
      widgets: doc('docs/IMPL/IMPL-widgets.yaml', 'REVIEWED', [{ file: 'src/index.ts' }], [], '/home/me/code/api'),
    };
    expect(validateProgramImport(program(), docs(twoRepos))).toEqual([]);
    const unknownRepo = { ...twoRepos, widgets: doc('docs/IMPL/IMPL-widgets.yaml', 'REVIEWED', [{ file: 'src/index.ts' }]) };
    expect(validateProgramImport(program(), docs(unknownRepo)).map((finding) => finding.message)).toEqual([
      'File src/index.ts (repo "web") owned by both views and widgets in tier 2 (violates P1 disjoint ownership)',
    ]);
    const sameRepo = { ...twoRepos, widgets: doc('docs/IMPL/IMPL-widgets.yaml', 'REVIEWED', [{ file: 'src/index.ts', repo: '/srv/web/' }]) };
    expect(validateProgramImport(program(), docs(sameRepo)).map((finding) => finding.code)).toEqual(['V029_P1_FILE_OVERLAP']);
  });

  it('P1 does not compare IMPLs of different tiers', () => {
    const entries = { ...healthy(), views: doc('docs/IMPL/IMPL-views.yaml', 'REVIEWED', [{ file: 'pkg/auth/auth.go' }]) };
    expect(validateProgramImport(program(), docs(entries))).toEqual([]);
  });
});

describe('partitionImplsByStatus (E28A)', () => {
  it('splits a tier into needsScout / preExisting / held', () => {
    const manifest = program({ statuses: { views: 'executing', widgets: 'pending' } });
    const tier2 = partitionImplsByStatus(manifest, 2);
    expect(tier2.needsScout.map((impl) => impl.slug)).toEqual(['widgets']);
    expect(tier2.preExisting.map((impl) => impl.slug)).toEqual(['views']);
    expect(partitionImplsByStatus(program({ statuses: { auth: 'blocked' } }), 1).held.map((impl) => impl.slug)).toEqual(['auth']);
    expect(partitionImplsByStatus(manifest, 9)).toEqual({ needsScout: [], preExisting: [], held: [] });
  });

  it('holds for a human exactly what the loop\'s own status writes keep (one list: isHeldForHuman)', () => {
    expect(isHeldForHuman('on-hold')).toBe(true);
    expect(isHeldForHuman(undefined)).toBe(true);
    for (const status of ['blocked', 'not-suitable']) {
      expect(isHeldForHuman(status)).toBe(true);
      const manifest = program({ statuses: { auth: status } });
      expect(partitionImplsByStatus(manifest, 1).held.map((impl) => impl.slug)).toEqual(['auth']);
    }
    for (const status of ['pending', 'scouting', 'reviewed', 'executing', 'complete']) expect(isHeldForHuman(status)).toBe(false);
  });
});
