import { readFileSync, writeFileSync } from 'node:fs';
import { createTestRepo } from '../../test/support/git-repo.js';
import { describe, expect, it } from 'vitest';
import { parseImpl } from '../protocol/parse-impl.js';
import { agentBranch, createFinishedRepo, createFixtureRepo, doAgentWork, mergeBranch, runPolywave, type Fixture } from '../../test/support/closing-fixture.js';
import { deriveImplState, reconcileState, type AgentObservation } from './reconcile-state.js';

function stateOf(fixture: Fixture): string | undefined {
  return parseImpl(readFileSync(fixture.manifest, 'utf8')).manifest?.state;
}

async function reconcile(fixture: Fixture) {
  return reconcileState({ implPath: fixture.manifest, env: fixture.repo.env });
}

describe('reconcile-state (E49) on real repositories', () => {
  it('no evidence: leaves the state alone (Go would regress REVIEWED to SCOUT_PENDING)', async () => {
    const fixture = await createFixtureRepo({ state: 'REVIEWED' });
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ previous_state: 'REVIEWED', derived_state: 'REVIEWED', state_changed: false });
    expect(result.agent_summary.map((row) => row.id)).toEqual(['A', 'B', 'C']);
    expect(result.agent_summary[0]).toEqual({ id: 'A', wave: 1, branch_exists: false, branch_merged: false, has_report: false, commit_reachable: false, branch: agentBranch(1, 'A') });
  });

  it('critic report moves SCOUT_PENDING to REVIEWED', async () => {
    const fixture = await createFixtureRepo({ state: 'SCOUT_PENDING', critic: true });
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ derived_state: 'REVIEWED', state_changed: true });
    expect(result.evidence).toContain('critic report present with verdict: PASS');
    expect(stateOf(fixture)).toBe('REVIEWED');
  });

  it('branches of wave 1 without reports → WAVE_EXECUTING (written, not committed)', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_PENDING' });
    await doAgentWork(fixture.repo, { wave: 1, id: 'A', file: 'src/a.ts' });
    const head = await fixture.repo.run(['rev-parse', 'HEAD']);
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ previous_state: 'WAVE_PENDING', derived_state: 'WAVE_EXECUTING', state_changed: true });
    expect(result.recommended_action).toContain('waiting for agent(s) A, B');
    expect(result.agent_summary[0]).toMatchObject({ branch_exists: true, branch_merged: false, has_report: false });
    expect(stateOf(fixture)).toBe('WAVE_EXECUTING');
    expect(await fixture.repo.run(['rev-parse', 'HEAD'])).toBe(head);
    expect((await fixture.repo.run(['status', '--porcelain'])).trim()).toBe('M docs/IMPL/IMPL-closing-test.yaml');
  });

  it('an interrupted wave 1 of a 2-wave IMPL is seen (Go only looks at the highest wave)', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const a = await doAgentWork(fixture.repo, { wave: 1, id: 'A', file: 'src/a.ts' });
    const b = await doAgentWork(fixture.repo, { wave: 1, id: 'B', file: 'src/b.ts' });
    fixture.writeManifest({ state: 'WAVE_EXECUTING', reports: { A: { status: 'complete', commit: a }, B: { status: 'complete', commit: b } } });
    const result = await reconcile(fixture);
    expect(result.derived_state).toBe('WAVE_EXECUTING');
    expect(result.recommended_action).toContain('finalize-wave');
    expect(result.recommended_action).toContain('--wave 1');
    expect(result.agent_summary.slice(0, 2).every((row) => row.has_report && !row.commit_reachable)).toBe(true);
  });

  it('wave 1 merged with wave 2 still to run: WAVE_VERIFIED from WAVE_EXECUTING, WAVE_PENDING kept', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const base = (await fixture.repo.run(['rev-parse', 'HEAD'])).trim();
    const a = await doAgentWork(fixture.repo, { wave: 1, id: 'A', file: 'src/a.ts' });
    const b = await doAgentWork(fixture.repo, { wave: 1, id: 'B', file: 'src/b.ts' });
    await mergeBranch(fixture.repo, agentBranch(1, 'A'));
    await mergeBranch(fixture.repo, agentBranch(1, 'B'));
    const reports = { A: { status: 'complete' as const, commit: a }, B: { status: 'complete' as const, commit: b } };
    fixture.writeManifest({ state: 'WAVE_EXECUTING', bases: { 1: base }, reports });
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ derived_state: 'WAVE_VERIFIED', state_changed: true });
    expect(result.recommended_action).toContain('prepare-wave');
    expect(result.recommended_action).toContain('--wave 2');
    expect(result.agent_summary[0]).toMatchObject({ branch_merged: true, commit_reachable: true });

    fixture.writeManifest({ state: 'WAVE_PENDING', bases: { 1: base }, reports });
    expect(await reconcile(fixture)).toMatchObject({ derived_state: 'WAVE_PENDING', state_changed: false });
  });

  it('everything merged: WAVE_VERIFIED and close-impl is next', async () => {
    const fixture = await createFinishedRepo();
    fixture.writeManifest({ state: 'WAVE_EXECUTING', reports: Object.fromEntries(Object.entries(fixture.commits).map(([id, commit]) => [id, { status: 'complete', commit }])) });
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ previous_state: 'WAVE_EXECUTING', derived_state: 'WAVE_VERIFIED', state_changed: true });
    expect(result.recommended_action).toContain('close-impl');
  });

  it('a partial report in the last wave is not WAVE_VERIFIED (Go counts any report)', async () => {
    const fixture = await createFinishedRepo();
    const { commits } = fixture;
    fixture.writeManifest({ state: 'WAVE_EXECUTING', reports: { A: { status: 'complete', commit: commits.A! }, B: { status: 'complete', commit: commits.B! }, C: { status: 'partial', commit: commits.C!, failure_type: 'fixable' } } });
    const result = await reconcile(fixture);
    expect(result.derived_state).toBe('WAVE_EXECUTING');
    expect(result.recommended_action).toContain('C of wave 2 reported partial/blocked');
  });

  it('an illegal transition is reported, not written', async () => {
    const fixture = await createFinishedRepo();
    fixture.writeManifest({ state: 'REVIEWED', reports: Object.fromEntries(Object.entries(fixture.commits).map(([id, commit]) => [id, { status: 'complete', commit }])) });
    const before = readFileSync(fixture.manifest, 'utf8');
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ previous_state: 'REVIEWED', derived_state: 'WAVE_VERIFIED', state_changed: false });
    expect(result.evidence.some((line) => line.startsWith('warning: transition REVIEWED -> WAVE_VERIFIED is not allowed'))).toBe(true);
    expect(readFileSync(fixture.manifest, 'utf8')).toBe(before);
  });

  it('merge_state in_progress with every report complete → WAVE_MERGING', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_EXECUTING' });
    const a = await doAgentWork(fixture.repo, { wave: 1, id: 'A', file: 'src/a.ts' });
    const b = await doAgentWork(fixture.repo, { wave: 1, id: 'B', file: 'src/b.ts' });
    await mergeBranch(fixture.repo, agentBranch(1, 'A'));
    fixture.writeManifest({ state: 'WAVE_EXECUTING', mergeState: 'in_progress', reports: { A: { status: 'complete', commit: a }, B: { status: 'complete', commit: b } } });
    const result = await reconcile(fixture);
    expect(result).toMatchObject({ derived_state: 'WAVE_MERGING', state_changed: true });
    expect(result.evidence).toContain('merge_state: in_progress');
  });

  it('finds legacy branch names', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_PENDING' });
    await doAgentWork(fixture.repo, { wave: 1, id: 'B', file: 'src/b.ts', branch: 'wave1-agent-B' });
    const result = await reconcile(fixture);
    expect(result.agent_summary[1]).toMatchObject({ id: 'B', branch_exists: true, branch: 'wave1-agent-B' });
  });

  it('is cross-repo aware: a `repo:` is resolved through polywave.config.json', async () => {
    const fixture = await createFixtureRepo({ state: 'WAVE_PENDING' });
    const service = await createTestRepo();
    await doAgentWork(service, { wave: 1, id: 'B', file: 'src/b.ts' });
    writeFileSync(fixture.manifest, readFileSync(fixture.manifest, 'utf8').replace('      agent: B\n      wave: 1\n', '      agent: B\n      wave: 1\n      repo: service\n'));
    writeFileSync(fixture.repo.path('polywave.config.json'), JSON.stringify({ repos: [{ name: 'closing', path: '.' }, { name: 'service', path: service.dir }] }));
    // `repos` decides where polywave works: read from the config as committed only (issue 11, X10 N6).
    await fixture.repo.run(['add', 'polywave.config.json']);
    await fixture.repo.run(['commit', '-q', '-m', 'config']);
    const result = await reconcile(fixture);
    expect(result.agent_summary.map((row) => [row.id, row.branch_exists])).toEqual([['A', false], ['B', true], ['C', false]]);
    expect(result).toMatchObject({ derived_state: 'WAVE_EXECUTING', state_changed: true });
  });

  it('COMPLETE is a no-op; the CLI prints the JSON and exits 0', async () => {
    const fixture = await createFixtureRepo({ state: 'COMPLETE', completionDate: '2026-05-01' });
    const run = await runPolywave(['reconcile-state', fixture.manifest], { cwd: fixture.repo.dir, env: fixture.repo.env });
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({
      previous_state: 'COMPLETE',
      derived_state: 'COMPLETE',
      state_changed: false,
      evidence: ['state is COMPLETE (terminal)'],
      recommended_action: 'no action needed',
      agent_summary: [],
    });
  });
});

describe('deriveImplState (pure)', () => {
  const manifest = parseImpl(`title: T
feature_slug: t
verdict: SUITABLE
waves:
    - number: 1
      agents:
        - id: A
          task: a
`).manifest!;
  const observation = (overrides: Partial<AgentObservation>): AgentObservation => ({
    id: 'A',
    wave: 1,
    branch_exists: false,
    branch_merged: false,
    has_report: false,
    commit_reachable: false,
    branch: 'polywave/t/wave1-agent-A',
    commit_count: 0,
    repo_path: '/r',
    ...overrides,
  });

  it('keeps BLOCKED while the blocker is still reported', () => {
    const derived = deriveImplState({ manifest, previous: 'BLOCKED', observations: [observation({ has_report: true, report_status: 'blocked', branch_exists: true })], implArg: 'x' });
    expect(derived.state).toBe('BLOCKED');
  });

  it('a merged branch without a report is not verified', () => {
    const derived = deriveImplState({ manifest, previous: 'WAVE_EXECUTING', observations: [observation({ branch_exists: true, branch_merged: true })], implArg: 'x' });
    expect(derived.state).toBe('WAVE_EXECUTING');
  });
});
