import { describe, expect, it } from 'vitest';
import { checkImplConflicts } from '../impl-conflicts.js';
import { parseImpl } from '../parse-impl.js';
import { stringify } from 'yaml';
import { parseProgram } from '../parse-program.js';
import type { ImplManifest } from '../schema/impl-schema.js';
import { validateProgram } from './validate-program.js';
import { assignTiersByOverlap, buildProgramFromImpls, completionCounters, overlapsOf, planProgramImport, programStatusOfImpl } from './tier-assignment.js';

function impl(slug: string, state: string, files: string[], waves = 1): ImplManifest {
  const text = [
    `title: ${slug.toUpperCase()}`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    `state: ${state}`,
    'file_ownership:',
    ...files.map((file) => `  - {file: ${file}, agent: A, wave: 1, action: new}`),
    'waves:',
    ...Array.from({ length: waves }, (_, index) => `  - number: ${index + 1}\n    agents:\n      - {id: A, task: t, files: [${files.join(', ')}]}`),
  ].join('\n');
  const parsed = parseImpl(`${text}\n`);
  if (!parsed.manifest) throw new Error(JSON.stringify(parsed.findings));
  return parsed.manifest;
}

describe('programStatusOfImpl (§13.4 mapping)', () => {
  it.each([
    ['REVIEWED', 'reviewed'],
    ['SCOUT_COMPLETE', 'reviewed'],
    ['SCAFFOLD_PENDING', 'reviewed'],
    ['COMPLETE', 'complete'],
    ['WAVE_EXECUTING', 'executing'],
    ['SCOUT_PENDING', 'scouting'],
    ['BLOCKED', 'blocked'],
    ['NOT_SUITABLE', 'not-suitable'],
    ['', 'pending'],
  ])('%s → %s', (state, status) => {
    expect(programStatusOfImpl({ ...impl('x', 'REVIEWED', ['a.ts']), state })).toBe(status);
  });
});

describe('assignTiersByOverlap', () => {
  it('equals checkImplConflicts tier_suggestion without fixed tiers', () => {
    const impls = [
      { slug: 'a', manifest: impl('a', 'REVIEWED', ['x.ts', 'y.ts']) },
      { slug: 'b', manifest: impl('b', 'REVIEWED', ['y.ts']) },
      { slug: 'c', manifest: impl('c', 'REVIEWED', ['z.ts', 'x.ts']) },
      { slug: 'd', manifest: impl('d', 'REVIEWED', ['w.ts']) },
    ];
    const report = checkImplConflicts(impls);
    expect(assignTiersByOverlap(impls.map((entry) => entry.slug), overlapsOf(report))).toEqual(report.tier_suggestion);
    expect(report.tier_suggestion).toEqual({ a: 1, b: 2, c: 2, d: 1 });
  });

  it('places new IMPLs around fixed ones', () => {
    const overlaps = new Map([
      ['new', new Set(['old1'])],
      ['old1', new Set(['new'])],
    ]);
    expect(assignTiersByOverlap(['new'], overlaps, new Map([['old1', 1], ['old2', 2]]))).toEqual({ new: 2 });
    expect(assignTiersByOverlap(['new'], overlaps, new Map([['old1', 2]]))).toEqual({ new: 1 });
  });
});

describe('buildProgramFromImpls', () => {
  it('separates IMPLs sharing a file into tiers, records depends_on and validates', () => {
    const built = buildProgramFromImpls({
      impls: [
        { slug: 'alpha', manifest: impl('alpha', 'REVIEWED', ['src/a.ts', 'src/shared.ts']) },
        { slug: 'beta', manifest: impl('beta', 'COMPLETE', ['src/b.ts', 'src/shared.ts'], 2) },
        { slug: 'gamma', manifest: impl('gamma', 'WAVE_PENDING', ['src/c.ts']) },
      ],
      date: '2026-01-02',
    });
    expect(built.tier_assignments).toEqual({ alpha: 1, beta: 2, gamma: 1 });
    expect(built.manifest.program_slug).toBe('alpha-and-beta-and-gamma');
    expect(built.manifest.title).toBe('Auto-generated PROGRAM: ALPHA, BETA, GAMMA');
    expect(built.manifest.tiers).toEqual([
      { number: 1, impls: ['alpha', 'gamma'] },
      { number: 2, impls: ['beta'] },
    ]);
    expect(built.manifest.impls[1]).toEqual({ slug: 'beta', title: 'BETA', tier: 2, depends_on: ['alpha'], estimated_agents: 2, estimated_waves: 2, status: 'complete' });
    expect(built.manifest.impls.map((entry) => entry.status)).toEqual(['reviewed', 'complete', 'executing']);
    expect(built.manifest.completion).toEqual({ tiers_complete: 1, tiers_total: 2, impls_complete: 1, impls_total: 3, total_agents: 4, total_waves: 4 });
    const parsed = parseProgram(stringify(built.manifest));
    expect(parsed.manifest).not.toBeNull();
    expect(validateProgram(parsed.manifest!, { fileName: 'PROGRAM-alpha-and-beta-and-gamma.yaml' }).filter((finding) => finding.severity === 'error')).toEqual([]);
  });
});

describe('planProgramImport', () => {
  it('skips present slugs and pushes an IMPL overlapping an existing one to a later tier', () => {
    const existing = parseProgram('title: P\nprogram_slug: p\nstate: PLANNING\nimpls:\n  - {slug: alpha, title: A, tier: 1, status: reviewed}\ntiers:\n  - {number: 1, impls: [alpha]}\ncompletion: {tiers_complete: 0, tiers_total: 1, impls_complete: 0, impls_total: 1, total_agents: 0, total_waves: 0}\n').manifest!;
    const plan = planProgramImport({
      existing,
      existingDocs: new Map([['alpha', impl('alpha', 'REVIEWED', ['src/shared.ts'])]]),
      candidates: [
        { slug: 'alpha', manifest: impl('alpha', 'REVIEWED', ['src/shared.ts']) },
        { slug: 'beta', manifest: impl('beta', 'COMPLETE', ['src/shared.ts']) },
        { slug: 'gamma', manifest: impl('gamma', 'SCOUT_PENDING', ['src/c.ts']) },
      ],
    });
    expect(plan.skipped).toEqual(['alpha']);
    expect(plan.tier_assignments).toEqual({ beta: 2, gamma: 1 });
    expect(plan.entries[0]).toMatchObject({ slug: 'beta', tier: 2, depends_on: ['alpha'], status: 'complete' });
    expect(plan.imported).toEqual([
      { slug: 'beta', title: 'BETA', status: 'complete', assigned_tier: 2, agent_count: 1, wave_count: 1 },
      { slug: 'gamma', title: 'GAMMA', status: 'scouting', assigned_tier: 1, agent_count: 1, wave_count: 1 },
    ]);
  });
});

describe('completionCounters', () => {
  it('counts complete IMPLs and complete non-empty tiers', () => {
    expect(
      completionCounters({
        impls: [
          { slug: 'a', status: 'complete', estimated_agents: 2, estimated_waves: 1 },
          { slug: 'b', status: 'pending' },
        ],
        tiers: [
          { number: 1, impls: ['a'] },
          { number: 2, impls: ['b'] },
        ],
      }),
    ).toEqual({ tiers_complete: 1, tiers_total: 2, impls_complete: 1, impls_total: 2, total_agents: 2, total_waves: 1 });
  });
});
