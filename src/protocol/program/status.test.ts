import { describe, expect, it } from 'vitest';
import { programModel } from '../schema/program-schema.js';
import { formatProgramStatus, implStateToProgramStatus, programStatus } from './status.js';

/** The E32 example: my-program, tiers of 3, 4 and 2 IMPLs. */
const manifest = programModel.manifest.parse({
  title: 'My program',
  program_slug: 'my-program',
  state: 'TIER_EXECUTING',
  program_contracts: [
    { name: 'Core', definition: 'x', location: 'pkg/core.go', freeze_at: 'Tier 1 completion' },
    { name: 'Api', definition: 'x', location: 'pkg/api.go', freeze_at: 'feature-a' },
    { name: 'Loose', definition: 'x', location: 'pkg/loose.go' },
  ],
  impls: [
    { slug: 'base-a', title: 'Base A', tier: 1, status: 'complete' },
    { slug: 'base-b', title: 'Base B', tier: 1, status: 'complete' },
    { slug: 'base-c', title: 'Base C', tier: 1, status: 'executing' },
    { slug: 'feature-a', title: 'Feature A', tier: 2, status: 'complete' },
    { slug: 'feature-b', title: 'Feature B', tier: 2, status: 'complete' },
    { slug: 'feature-c', title: 'Feature C', tier: 2, status: 'executing' },
    { slug: 'feature-d', title: 'Feature D', tier: 2, status: 'reviewed' },
    { slug: 'final-a', title: 'Final A', tier: 3, status: 'pending' },
    { slug: 'final-b', title: 'Final B', tier: 3, status: 'pending' },
  ],
  tiers: [
    { number: 1, impls: ['base-a', 'base-b', 'base-c'], description: 'Foundation' },
    { number: 2, impls: ['feature-a', 'feature-b', 'feature-c', 'feature-d'] },
    { number: 3, impls: ['final-a', 'final-b'] },
  ],
  completion: { tiers_complete: 0, tiers_total: 3, impls_complete: 4, impls_total: 9, total_agents: 20, total_waves: 11 },
});

/** IMPL doc states as found on disk: base-c finished, feature-d started its waves. */
const diskStates = new Map<string, string | undefined>([
  ['base-a', 'COMPLETE'],
  ['base-c', 'COMPLETE'],
  ['feature-c', 'WAVE_EXECUTING'],
  ['feature-d', 'WAVE_MERGING'],
  ['final-a', undefined],
]);

describe('implStateToProgramStatus (E32 mapping)', () => {
  it.each([
    ['COMPLETE', 'complete'],
    ['WAVE_PENDING', 'executing'],
    ['WAVE_EXECUTING', 'executing'],
    ['WAVE_MERGING', 'executing'],
    ['WAVE_VERIFIED', 'executing'],
    ['REVIEWED', 'reviewed'],
    ['SCAFFOLD_PENDING', 'reviewed'],
    ['SCOUT_COMPLETE', 'reviewed'],
    ['SCOUT_PENDING', 'scouting'],
    ['SCOUT_VALIDATING', 'scouting'],
    ['SCOUTING', 'scouting'],
    ['INTERVIEWING', 'scouting'],
    ['BLOCKED', 'blocked'],
    ['NOT_SUITABLE', 'not-suitable'],
  ])('%s → %s', (state, status) => {
    expect(implStateToProgramStatus(state)).toBe(status);
  });

  it('unknown or empty states do not map', () => {
    expect(implStateToProgramStatus('')).toBeUndefined();
    expect(implStateToProgramStatus(undefined)).toBeUndefined();
    expect(implStateToProgramStatus('DONE')).toBeUndefined();
  });
});

describe('programStatus', () => {
  const status = programStatus(manifest, diskStates);

  it('cross-checks every IMPL against its doc state', () => {
    expect(status.tier_statuses[0]).toEqual({
      number: 1,
      description: 'Foundation',
      complete: true,
      impl_statuses: [
        { slug: 'base-a', title: 'Base A', manifest_status: 'complete', disk_state: 'COMPLETE', status: 'complete', mismatch: false },
        { slug: 'base-b', title: 'Base B', manifest_status: 'complete', disk_state: null, status: 'complete', mismatch: false },
        { slug: 'base-c', title: 'Base C', manifest_status: 'executing', disk_state: 'COMPLETE', status: 'complete', mismatch: true },
      ],
    });
    expect(status.tier_statuses[1]!.impl_statuses.map((entry) => [entry.slug, entry.status, entry.mismatch])).toEqual([
      ['feature-a', 'complete', false],
      ['feature-b', 'complete', false],
      ['feature-c', 'executing', false],
      ['feature-d', 'executing', true],
    ]);
    expect(status.tier_statuses[2]!.complete).toBe(false);
  });

  it('recomputes completion and the current tier', () => {
    expect(status.program_slug).toBe('my-program');
    expect(status.state).toBe('TIER_EXECUTING');
    expect(status.current_tier).toBe(2);
    expect(status.completion).toEqual({ tiers_complete: 1, tiers_total: 3, impls_complete: 5, impls_total: 9, total_agents: 20, total_waves: 11 });
  });

  it('contract freeze states from the normalised freeze_at', () => {
    expect(status.contract_statuses).toEqual([
      { name: 'Core', location: 'pkg/core.go', freeze_at: 'Tier 1 completion', freeze_tier: 1, frozen: true, frozen_at_tier: 1 },
      { name: 'Api', location: 'pkg/api.go', freeze_at: 'feature-a', freeze_tier: 2, frozen: false },
      { name: 'Loose', location: 'pkg/loose.go', freeze_at: '', freeze_tier: null, frozen: false },
    ]);
  });

  it('all tiers complete: current tier is the last one', () => {
    const done = new Map(manifest.impls.map((impl) => [impl.slug!, 'COMPLETE']));
    const finished = programStatus(manifest, done);
    expect(finished.current_tier).toBe(3);
    expect(finished.completion.tiers_complete).toBe(3);
    expect(finished.contract_statuses.every((contract) => contract.frozen || contract.freeze_tier === null)).toBe(true);
  });

  it('an unknown slug in a tier counts as pending', () => {
    const odd = programModel.manifest.parse({ ...manifest, tiers: [{ number: 1, impls: ['ghost'] }] });
    expect(programStatus(odd, new Map()).tier_statuses[0]!.impl_statuses).toEqual([
      { slug: 'ghost', title: '', manifest_status: '', disk_state: null, status: 'pending', mismatch: false },
    ]);
  });
});

describe('formatProgramStatus (E32 layout)', () => {
  it('renders the E32 example layout', () => {
    const example = programStatus(manifest, new Map([['base-c', 'COMPLETE']]));
    expect(formatProgramStatus({ ...example, contract_statuses: [] })).toBe(
      [
        'PROGRAM: my-program (Tier 2 of 3)',
        '  Tier 1: 3/3 complete ✓',
        '  Tier 2: 2/4 complete (IMPL-feature-a, IMPL-feature-b complete; IMPL-feature-c in progress; IMPL-feature-d reviewed)',
        '  Tier 3: 0/2 pending',
        'Overall: 5/9 IMPLs complete (56%)',
        'Manifest out of date (P4):',
        '  IMPL-base-c: manifest says executing, IMPL doc state COMPLETE → complete',
      ].join('\n'),
    );
  });

  it('shows the live wave progress of running IMPLs (and keeps it in the JSON)', () => {
    const progress = new Map([
      ['feature-c', { total: 3, complete: 1 }],
      ['feature-a', { total: 2, complete: 2 }],
    ]);
    const status = programStatus(manifest, new Map([['base-c', 'COMPLETE']]), progress);
    expect(formatProgramStatus({ ...status, contract_statuses: [] }).split('\n')[2]).toBe('  Tier 2: 2/4 complete (IMPL-feature-a, IMPL-feature-b complete; IMPL-feature-c (wave 1/3 done) in progress; IMPL-feature-d reviewed)');
    const featureC = status.tier_statuses[1]!.impl_statuses.find((entry) => entry.slug === 'feature-c')!;
    expect(featureC.waves).toEqual({ total: 3, complete: 1 });
    expect(status.tier_statuses[2]!.impl_statuses[0]!.waves).toBeUndefined();
  });

  it('lists contracts and stale IMPLs when present', () => {
    expect(formatProgramStatus(programStatus(manifest, diskStates))).toBe(
      [
        'PROGRAM: my-program (Tier 2 of 3)',
        '  Tier 1: 3/3 complete ✓',
        '  Tier 2: 2/4 complete (IMPL-feature-a, IMPL-feature-b complete; IMPL-feature-c, IMPL-feature-d in progress)',
        '  Tier 3: 0/2 pending',
        'Overall: 5/9 IMPLs complete (56%)',
        'Contracts:',
        '  Core (pkg/core.go): frozen at tier 1',
        '  Api (pkg/api.go): freezes after tier 2',
        '  Loose (pkg/loose.go): no freeze point',
        'Manifest out of date (P4):',
        '  IMPL-base-c: manifest says executing, IMPL doc state COMPLETE → complete',
        '  IMPL-feature-d: manifest says reviewed, IMPL doc state WAVE_MERGING → executing',
      ].join('\n'),
    );
  });

  it('a program without tiers', () => {
    const empty = programModel.manifest.parse({ title: 'E', program_slug: 'e', state: 'NOT_SUITABLE' });
    expect(formatProgramStatus(programStatus(empty, new Map()))).toBe(['PROGRAM: e (no tiers)', 'Overall: 0/0 IMPLs complete (0%)'].join('\n'));
  });
});
