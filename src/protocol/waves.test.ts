import { describe, expect, it } from 'vitest';
import type { Finding } from '../errors/finding.js';
import { implModel, type ImplManifest } from './schema/impl-schema.js';
import {
  agentsOfWave,
  criticGatePasses,
  currentWave,
  e37Required,
  findAgent,
  findWave,
  isFinalWave,
  isScaffoldCommitted,
  isSoloWave,
  isWaveComplete,
  isWaveFinished,
  manifestRepos,
  preWaveGate,
  repoKey,
  waveBaseCommit,
} from './waves.js';

function manifest(raw: Record<string, unknown>): ImplManifest {
  return implModel.manifest.parse(raw);
}

const twoWaves = {
  waves: [
    { number: 1, agents: [{ id: 'A', task: 't' }, { id: 'B', task: 't' }], base_commit: ' abc123 ' },
    { number: 2, agents: [{ id: 'C', task: 't' }] },
  ],
};

describe('wave lookups', () => {
  const impl = manifest(twoWaves);

  it('finds waves by number and agents by ID', () => {
    expect(findWave(impl, 2)?.agents.map((agent) => agent.id)).toEqual(['C']);
    expect(findWave(impl, 3)).toBeUndefined();
    expect(agentsOfWave(impl, 1).map((agent) => agent.id)).toEqual(['A', 'B']);
    expect(agentsOfWave(impl, 9)).toEqual([]);
    const found = findAgent(impl, 'B');
    expect(found?.agent.id).toBe('B');
    expect(found?.wave.number).toBe(1);
    expect(findAgent(impl, 'Z')).toBeUndefined();
  });

  it('takes the first occurrence of a duplicated agent ID', () => {
    const duplicated = manifest({ waves: [{ number: 1, agents: [{ id: 'A', task: 'first' }] }, { number: 2, agents: [{ id: 'A', task: 'second' }] }] });
    expect(findAgent(duplicated, 'A')?.wave.number).toBe(1);
  });

  it('knows solo and final waves', () => {
    expect(isSoloWave(impl, 1)).toBe(false);
    expect(isSoloWave(impl, 2)).toBe(true);
    expect(isSoloWave(impl, 3)).toBe(false);
    expect(isFinalWave(impl, 2)).toBe(true);
    expect(isFinalWave(impl, 1)).toBe(false);
    expect(isFinalWave(manifest({}), 1)).toBe(false);
    // highest number, not the count of waves
    const gapped = manifest({ waves: [{ number: 1, agents: [] }, { number: 3, agents: [] }] });
    expect(isFinalWave(gapped, 3)).toBe(true);
    expect(isFinalWave(gapped, 2)).toBe(false);
  });

  it('reads the base commit of a wave', () => {
    expect(waveBaseCommit(impl, 1)).toBe('abc123');
    expect(waveBaseCommit(impl, 2)).toBeUndefined();
    expect(waveBaseCommit(impl, 7)).toBeUndefined();
  });
});

// reference §10.25
describe('currentWave / isWaveComplete', () => {
  it('is wave 1 when there are no reports', () => {
    expect(currentWave(manifest(twoWaves))?.number).toBe(1);
  });

  it('counts partial and blocked as incomplete', () => {
    const impl = manifest({
      ...twoWaves,
      completion_reports: { A: { status: 'complete', commit: 'a' }, B: { status: 'partial', failure_type: 'fixable' } },
    });
    expect(isWaveComplete(impl, 1)).toBe(false);
    expect(currentWave(impl)?.number).toBe(1);
  });

  it('moves on when a wave is complete and ends with undefined', () => {
    const halfway = manifest({ ...twoWaves, completion_reports: { A: { status: 'complete' }, B: { status: 'complete' } } });
    expect(isWaveComplete(halfway, 1)).toBe(true);
    expect(currentWave(halfway)?.number).toBe(2);
    const done = manifest({ ...twoWaves, completion_reports: { A: { status: 'complete' }, B: { status: 'complete' }, C: { status: 'complete' } } });
    expect(currentWave(done)).toBeUndefined();
  });

  it('treats an empty wave as complete and an unknown wave as not complete', () => {
    const impl = manifest({ waves: [{ number: 1, agents: [] }] });
    expect(isWaveComplete(impl, 1)).toBe(true);
    expect(isWaveComplete(impl, 2)).toBe(false);
    expect(currentWave(impl)).toBeUndefined();
    expect(currentWave(manifest({}))).toBeUndefined();
  });
});

describe('isWaveFinished (issue 13)', () => {
  const reports = { A: { status: 'complete', commit: 'a' }, B: { status: 'complete', commit: 'b' } };
  it('is true once the wave is merged and verified, or a later wave has started', () => {
    expect(isWaveFinished(manifest({ ...twoWaves, state: 'WAVE_VERIFIED', merge_state: 'completed', completion_reports: reports }), 1)).toBe(true);
    const later = { waves: [twoWaves.waves[0], { number: 2, agents: [{ id: 'C', task: 't' }], base_commit: 'def' }] };
    expect(isWaveFinished(manifest({ ...later, state: 'WAVE_EXECUTING', merge_state: 'idle', completion_reports: reports }), 1)).toBe(true);
  });
  it('is false while the merge is not verified (E9 re-entry) or an agent is not complete', () => {
    expect(isWaveFinished(manifest({ ...twoWaves, state: 'WAVE_EXECUTING', completion_reports: reports }), 1)).toBe(false);
    expect(isWaveFinished(manifest({ ...twoWaves, state: 'WAVE_MERGING', merge_state: 'in_progress', completion_reports: reports }), 1)).toBe(false);
    expect(isWaveFinished(manifest({ ...twoWaves, state: 'WAVE_VERIFIED', merge_state: 'completed', completion_reports: { A: reports.A } }), 1)).toBe(false);
    expect(isWaveFinished(manifest({ ...twoWaves, state: 'WAVE_VERIFIED', merge_state: 'completed', completion_reports: reports }), 2)).toBe(false);
    expect(isWaveFinished(manifest({ ...twoWaves, state: 'WAVE_VERIFIED', merge_state: 'completed', completion_reports: reports }), 3)).toBe(false);
  });
});

describe('repositories', () => {
  it('compares repositories by their last path segment', () => {
    expect(repoKey('/Users/x/code/app/')).toBe('app');
    expect(repoKey('app')).toBe('app');
    expect(repoKey(undefined)).toBe('');
    const impl = manifest({ repositories: ['/abs/app'], file_ownership: [{ file: 'a.ts', agent: 'A', wave: 1, repo: 'app' }] });
    expect(manifestRepos(impl)).toEqual(['app']);
  });
});

describe('E37', () => {
  const threeAgents = { waves: [{ number: 1, agents: [{ id: 'A', task: 't' }, { id: 'B', task: 't' }, { id: 'C', task: 't' }] }] };

  it('is required for 3+ agents in wave 1 or 2+ repositories', () => {
    expect(e37Required(manifest(threeAgents))).toBe(true);
    expect(e37Required(manifest(twoWaves))).toBe(false);
    expect(
      e37Required(
        manifest({
          ...twoWaves,
          file_ownership: [
            { file: 'a', agent: 'A', wave: 1, repo: 'web' },
            { file: 'b', agent: 'B', wave: 1, repo: 'api' },
          ],
        }),
      ),
    ).toBe(true);
    // one repository spelled two ways is still one repository
    expect(e37Required(manifest({ ...twoWaves, repositories: ['/abs/api'], file_ownership: [{ file: 'a', agent: 'A', wave: 1, repo: 'api' }] }))).toBe(false);
  });

  const issues = (severity: 'error' | 'warning') => ({
    verdict: 'ISSUES',
    agent_reviews: { A: { agent_id: 'A', verdict: 'ISSUES', issues: [{ check: 'file_existence', severity, description: 'x' }] } },
    issue_count: 1,
  });

  it('critic gate: no report blocks, PASS and SKIPPED pass, errors block, warnings pass only in auto mode', () => {
    expect(criticGatePasses(manifest(threeAgents), { auto: true })).toBe(false);
    expect(criticGatePasses(manifest({ critic_report: { verdict: 'PASS' } }), { auto: false })).toBe(true);
    expect(criticGatePasses(manifest({ critic_report: { verdict: 'SKIPPED' } }), { auto: false })).toBe(true);
    expect(criticGatePasses(manifest({ critic_report: issues('error') }), { auto: true })).toBe(false);
    expect(criticGatePasses(manifest({ critic_report: issues('warning') }), { auto: true })).toBe(true);
    expect(criticGatePasses(manifest({ critic_report: issues('warning') }), { auto: false })).toBe(false);
    expect(criticGatePasses(manifest({ critic_report: { verdict: 'MAYBE' } }), { auto: true })).toBe(false);
  });
});

describe('preWaveGate', () => {
  const warning: Finding = { code: 'W001_AGENT_SCOPE_LARGE', message: 'agent A owns 9 files', severity: 'warning' };
  const error: Finding = { code: 'V002_DISJOINT_OWNERSHIP', message: 'file "x" owned by multiple agents', severity: 'error' };

  it('passes a clean manifest with four checks in order', () => {
    const result = preWaveGate(manifest({ ...twoWaves, state: 'REVIEWED' }), []);
    expect(result).toEqual({
      ready: true,
      checks: [
        { name: 'validation', status: 'pass', message: 'manifest is valid' },
        { name: 'critic_review', status: 'pass', message: 'critic review not required (threshold not met)' },
        { name: 'scaffolds', status: 'pass', message: 'no scaffolds required' },
        { name: 'state', status: 'pass', message: 'state is acceptable for wave execution' },
      ],
    });
  });

  it('warns on warnings only and fails on errors', () => {
    const impl = manifest(twoWaves);
    const warned = preWaveGate(impl, [warning, { ...warning, severity: 'info', message: 'fyi' }]);
    expect(warned.ready).toBe(true);
    expect(warned.checks[0]).toEqual({ name: 'validation', status: 'warn', message: 'agent A owns 9 files; fyi' });
    const failed = preWaveGate(impl, [warning, error, { ...error, message: 'second' }]);
    expect(failed.ready).toBe(false);
    expect(failed.checks[0]).toEqual({ name: 'validation', status: 'fail', message: 'file "x" owned by multiple agents; second' });
  });

  it('fails E37 when a critic review is required but missing, and on ISSUES', () => {
    const impl = manifest({ waves: [{ number: 1, agents: [{ id: 'A', task: 't' }, { id: 'B', task: 't' }, { id: 'C', task: 't' }] }] });
    const result = preWaveGate(impl, []);
    expect(result.ready).toBe(false);
    expect(result.checks[1]).toEqual({
      name: 'critic_review',
      status: 'fail',
      message: 'E37: critic review required (wave 1 has 3 agents, 0 repos) but not run. Run critic or use --no-critic to skip.',
    });
    const issues = manifest({
      critic_report: { verdict: 'ISSUES', agent_reviews: { A: { issues: [{ severity: 'error', description: 'a' }, { severity: 'warning', description: 'b' }] } } },
    });
    expect(preWaveGate(issues, []).checks[1]).toEqual({ name: 'critic_review', status: 'fail', message: 'critic review failed with 2 issue(s)' });
    expect(preWaveGate(manifest({ critic_report: { verdict: 'SKIPPED' } }), []).checks[1]?.status).toBe('pass');
    expect(preWaveGate(manifest({ critic_report: { verdict: 'PASS' } }), []).checks[1]?.message).toBe('critic review passed');
  });

  it('fails while scaffolds are uncommitted', () => {
    const impl = manifest({
      scaffolds: [
        { file_path: 'pkg/types.go', status: 'committed (abc123)' },
        { file_path: 'pkg/api.go', status: 'pending' },
        { file: 'pkg/legacy.go' },
      ],
    });
    expect(preWaveGate(impl, []).checks[2]).toEqual({ name: 'scaffolds', status: 'fail', message: 'uncommitted scaffolds: pkg/api.go, pkg/legacy.go' });
    const committed = manifest({ scaffolds: [{ file_path: 'a', status: 'committed' }] });
    expect(preWaveGate(committed, []).checks[2]).toEqual({ name: 'scaffolds', status: 'pass', message: 'all scaffolds committed' });
    expect(isScaffoldCommitted('FAILED: build')).toBe(false);
  });

  it.each(['COMPLETE', 'BLOCKED', 'NOT_SUITABLE'])('fails in state %s', (state) => {
    const result = preWaveGate(manifest({ state }), []);
    expect(result.ready).toBe(false);
    expect(result.checks[3]).toEqual({ name: 'state', status: 'fail', message: `IMPL state is ${state}, cannot proceed` });
  });

  it('passes an empty state', () => {
    expect(preWaveGate(manifest({}), []).ready).toBe(true);
  });
});
