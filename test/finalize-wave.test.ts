import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import type { FinalizeWaveResult } from '../src/engine/finalize-wave.js';
import { writeActiveWave } from '../src/engine/isolation-hook.js';
import { journalPaths } from '../src/engine/journal.js';
import { runCli } from './support/cli.js';
import { createWaveFixture, mergeCommits, type FixtureSpec, type WaveFixture } from './support/wave-fixture.js';

// finalize-wave on real temporary repositories (DESIGN §6: real git, real worktrees, real merges,
// real shell gates). Every failure must leave everything recoverable: the target where it was,
// every branch at its tip, every worktree registered.

const threeAgents: FixtureSpec = {
  waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }]],
  testCommand: 'test -f src/a.ts && test -f src/b.ts && test -f src/c.ts',
  lintCommand: 'true',
};

function step(result: FinalizeWaveResult, name: string) {
  return result.steps.find((item) => item.step === name);
}

function failedStep(result: FinalizeWaveResult) {
  return result.steps.find((item) => item.status === 'failed');
}

/** Branch tips and registered worktrees of the wave's agents. */
async function waveSnapshot(fixture: WaveFixture, agents: string[]) {
  const tips = await Promise.all(agents.map((agent) => fixture.repo.git.tryRevParse(`refs/heads/${fixture.branch(agent)}`)));
  const worktrees = new Set((await fixture.repo.git.worktreeList()).map((entry) => entry.branch));
  return { head: await fixture.head(), tips, worktrees: agents.map((agent) => worktrees.has(fixture.branch(agent))) };
}

/** Asserts nothing was merged and every branch and worktree is as it was. */
async function expectRecoverable(fixture: WaveFixture, before: Awaited<ReturnType<typeof waveSnapshot>>, agents: string[]) {
  const after = await waveSnapshot(fixture, agents);
  expect(after.head).toBe(before.head);
  expect(after.tips).toEqual(before.tips);
  expect(after.tips.every((tip) => tip !== undefined)).toBe(true);
  expect(after.worktrees.every(Boolean)).toBe(true);
  expect(await mergeCommits(fixture.repo)).toHaveLength(0);
  expect((await fixture.repo.git.status()).filter((entry) => !entry.path.startsWith('docs/IMPL/'))).toEqual([]);
}

async function threeAgentWave(spec: FixtureSpec = threeAgents): Promise<WaveFixture> {
  const fixture = await createWaveFixture(spec);
  await fixture.startWave(1);
  for (const id of ['A', 'B', 'C']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
  return fixture;
}

describe('finalize-wave: the whole pipeline', () => {
  it('merges each agent with one --no-ff merge in wave order, verifies, marks WAVE_VERIFIED, cleans up', async () => {
    const fixture = await threeAgentWave();
    const base = await fixture.head();
    await writeActiveWave(fixture.repo.dir, { slug: 'demo', wave: 1, target_branch: 'main', impl: fixture.implPath }, new Date());
    const events: PolywaveEvent[] = [];
    const bus = new EventBus();
    bus.subscribe((event) => events.push(event));
    const seen: string[] = [];
    const result = await fixture.finalize(1, { events: bus, onStep: (item) => seen.push(item.step) });

    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect(result.steps.map((item) => item.step)).toEqual([
      'check-git-config',
      'load-manifest',
      'check-tamper',
      'verify-commits',
      'verify-completion-reports',
      'check-agent-statuses',
      'check-jail-denials',
      'predict-conflicts',
      'check-attributes',
      'check-type-collisions',
      'scan-stubs',
      'run-gates',
      'validate-integration',
      'check-wiring-declarations',
      'merge-agents',
      'check-config-change',
      'populate-integration-checklist',
      'verify-build',
      'run-post-merge-gates',
      'mark-wave-verified',
      'cleanup',
      'commit-state',
    ]);
    expect(seen).toEqual(result.steps.map((item) => item.step));
    expect(events.filter((event) => event.type === 'step-end')).toHaveLength(result.steps.length);
    // One --no-ff merge per agent, in wave declaration order, each with the agent's tip as second parent.
    const merges = await mergeCommits(fixture.repo);
    expect(merges.reverse()).toEqual(['A', 'B', 'C'].map((id) => `Merge polywave/demo/wave1-agent-${id}: Implement src/${id.toLowerCase()}.ts.`));
    // 3 agent commits + 3 merges + the state commit (issue 13: the tree is left clean).
    expect(await fixture.repo.run(['rev-list', '--count', `${base}..HEAD`])).toBe('7\n');
    expect(await fixture.repo.git.status()).toEqual([]);
    for (const id of ['a', 'b', 'c']) expect(fixture.repo.read(`src/${id}.ts`)).toBe(`export const ${id} = 1;\n`);
    // State and protocol records.
    const manifest = fixture.manifest();
    expect(manifest.state).toBe('WAVE_VERIFIED');
    expect(manifest.merge_state).toBe('completed');
    expect(manifest.stub_reports?.wave1?.hits).toEqual([]);
    expect(manifest.integration_reports?.wave1?.valid).toBe(true);
    expect(result.state).toBe('WAVE_VERIFIED');
    expect(result.final_wave).toBe(true);
    expect(result.complete_ready).toBe(true);
    expect(result.build_passed).toBe(true);
    expect(result.verify_commits['.']?.agents.map((agent) => agent.commit_count)).toEqual([1, 1, 1]);
    // The manifest edits kept its comment (format-preserving writer).
    expect(readFileSync(fixture.implPath, 'utf8')).toContain('# Demo IMPL for finalize-wave tests');
    // Merge log, guard disarmed, nothing left behind.
    const log = JSON.parse(readFileSync(fixture.repo.path('.polywave-state/demo/wave1/merge-log.json'), 'utf8')) as { merges: Array<{ agent: string; merge_sha: string }> };
    expect(log.merges.map((entry) => entry.agent)).toEqual(['A', 'B', 'C']);
    expect(existsSync(fixture.repo.path('.polywave-state/active-wave'))).toBe(false);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(1);
    expect(await fixture.repo.git.listBranches('polywave/')).toEqual([]);
    expect(existsSync(fixture.repo.path('.claude/worktrees/polywave/demo'))).toBe(false);
    expect(result.cleanup_result['.']?.agents.every((agent) => agent.worktree_removed && agent.branch_deleted)).toBe(true);
  });

  it('a re-run after success finds every branch gone and the work in the target (E9) and stays verified', async () => {
    const fixture = await threeAgentWave();
    expect((await fixture.finalize(1)).success).toBe(true);
    const again = await fixture.finalize(1);
    expect(again.success, JSON.stringify(failedStep(again))).toBe(true);
    expect(again.mode).toBe('already-merged');
    expect(step(again, 'check-absent-branches')?.status).toBe('success');
    expect(await mergeCommits(fixture.repo)).toHaveLength(3);
  });

  it('--dry-run runs the checks and writes nothing', async () => {
    const fixture = await threeAgentWave();
    const manifestBefore = readFileSync(fixture.implPath, 'utf8');
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1, { dryRun: true });
    expect(result.success).toBe(true);
    expect(step(result, 'predict-conflicts')?.status).toBe('success');
    expect(step(result, 'merge-agents')?.status).toBe('skipped');
    expect(step(result, 'merge-agents')?.detail).toContain('would merge 3');
    expect(readFileSync(fixture.implPath, 'utf8')).toBe(manifestBefore);
    expect(await waveSnapshot(fixture, ['A', 'B', 'C'])).toEqual(before);
  });

  it('merges into --merge-target without switching the user checkout (scratch target worktree)', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.repo.git.createBranch('feature', 'HEAD');
    await fixture.startWave(1);
    for (const id of ['A', 'B', 'C']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    const mainBefore = await fixture.head();
    const result = await fixture.finalize(1, { mergeTarget: 'feature' });
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect(await fixture.repo.git.currentBranch()).toBe('main');
    expect(await fixture.head()).toBe(mainBefore);
    expect(await mergeCommits(fixture.repo, 'feature')).toHaveLength(3);
    expect(await fixture.repo.git.worktreeList(), JSON.stringify(result.cleanup_result)).toHaveLength(1);
    expect(await fixture.repo.git.listBranches('polywave/'), JSON.stringify(result.cleanup_result)).toEqual([]);
  });

  it('--skip-merge (E11a) verifies a wave merged by hand, and refuses one that is not', async () => {
    const fixture = await threeAgentWave();
    const refused = await fixture.finalize(1, { skipMerge: true });
    expect(refused.success).toBe(false);
    expect(failedStep(refused)?.step).toBe('verify-manual-merge');
    await fixture.repo.run(['merge', '--no-ff', '-q', '-m', 'manual octopus', fixture.branch('A'), fixture.branch('B'), fixture.branch('C')]);
    const result = await fixture.finalize(1, { skipMerge: true });
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect(result.steps.map((item) => item.step)).toEqual(['check-git-config', 'load-manifest', 'check-tamper', 'check-agent-statuses', 'verify-manual-merge', 'check-config-change', 'populate-integration-checklist', 'verify-build', 'run-post-merge-gates', 'mark-wave-verified', 'cleanup', 'commit-state']);
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');
    expect(await fixture.repo.git.listBranches('polywave/')).toEqual([]);
  });

  it('A21-06: a complete report whose dispatched attempt never ended in an orchestrator (run-wave killed) is not final: nothing merged', async () => {
    const fixture = await threeAgentWave();
    // As run-wave records a dispatched attempt (attempt.json) until its job's outcome was taken: left open by a killed run.
    const journal = journalPaths(fixture.repo.dir, fixture.manifest().feature_slug ?? '', 1, 'A');
    mkdirSync(journal.dir, { recursive: true });
    writeFileSync(path.join(journal.dir, 'attempt.json'), `${JSON.stringify({ attempt: 1, dispatched: { dispatcher: 'redis', flags: '--dispatch redis://127.0.0.1:6399 --dispatch-remote file:///srv/shared.git' } })}\n`);
    const result = await fixture.finalize(1);
    // Before the fix: WAVE_VERIFIED, A's early report and commit merged while its job still ran.
    expect(result.success).toBe(false);
    expect(failedStep(result)?.step).toBe('check-agent-statuses');
    expect(failedStep(result)?.detail).toContain("agent A's report came from attempt 1, a job on a worker (--dispatch redis://127.0.0.1:6399 --dispatch-remote file:///srv/shared.git)");
    expect(failedStep(result)?.detail).toContain('re-run `polywave run-wave');
    expect(await mergeCommits(fixture.repo)).toHaveLength(0);
    expect((await fixture.repo.git.run(['log', '--format=%H', '-1', '--', 'src/a.ts'])).stdout.trim()).toBe('');
    // merge-agents refuses it too.
    const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const merged = await runCli(['merge-agents', fixture.implPath, '--wave', '1'], { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    expect(merged.code, merged.stdout).toBe(1);
    expect(await mergeCommits(fixture.repo)).toHaveLength(0);
    // A22-07: the refusal blocks nothing — the run-wave re-run it names must be able to prepare the wave (its
    // prepare-wave refuses a BLOCKED IMPL): before the fix the state was BLOCKED here and the named re-run refused.
    expect(fixture.manifest().state).toBe('WAVE_EXECUTING');
    expect(step(result, 'mark-blocked')).toBeUndefined();
    // resume-detect and retry name the same re-run (before: "finalize the wave" — the command that refused —, and
    // "nothing to retry (finalize-wave merges it)").
    const detect = await runCli(['resume-detect'], { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    expect(detect.code, detect.stderr).toBe(0);
    const candidate = (JSON.parse(detect.stdout) as Array<{ resume_command: string; suggested_action: string }>)[0]!;
    expect(candidate.resume_command).toBe(`polywave run-wave ${fixture.implPath} --wave 1 --dispatch redis://127.0.0.1:6399 --dispatch-remote file:///srv/shared.git`);
    expect(candidate.suggested_action).toContain('agent(s) A ran on a worker and their results were never collected');
    const retry = await runCli(['retry', fixture.implPath, '--wave', '1', '--model', 'script:/bin/true'], { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    expect(retry.code, retry.stderr).toBe(1);
    expect(retry.stderr).toContain('R001_NOTHING_TO_RETRY');
    expect(retry.stderr).toContain('re-run `polywave run-wave');
    expect(retry.stderr).toContain('--dispatch redis://127.0.0.1:6399');
  });

  it('A24-05a: an agent WITHOUT a report whose dispatched attempt never ended in an orchestrator: finalize-wave and resume-detect name the run-wave re-run with its dispatch flags and --model', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    for (const id of ['B', 'C']) await fixture.complete(id, { [`src/${id.toLowerCase()}.ts`]: `export const ${id.toLowerCase()} = 1;\n` });
    // run-wave killed while A's job ran, before any early report: its attempt record is left open (A20-49, A23-04's --model)
    const flags = '--dispatch redis://127.0.0.1:6399 --dispatch-remote file:///srv/shared.git --model script:/srv/agents.yaml';
    const journal = journalPaths(fixture.repo.dir, fixture.manifest().feature_slug ?? '', 1, 'A');
    mkdirSync(journal.dir, { recursive: true });
    writeFileSync(path.join(journal.dir, 'attempt.json'), `${JSON.stringify({ attempt: 1, dispatched: { dispatcher: 'redis', flags } })}\n`);
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    expect(failedStep(result)?.step).toBe('verify-completion-reports');
    // Before the fix: only "missing completion reports … agents must call polywave-tools set-completion" — no dispatch, no model.
    expect(failedStep(result)?.detail).toContain(`agent(s) A ran as job(s) on a worker (${flags}) whose result no orchestrator collected — re-run \`polywave run-wave ${fixture.implPath} --wave 1 ${flags}\``);
    expect(await mergeCommits(fixture.repo)).toHaveLength(0);
    const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const detect = await runCli(['resume-detect'], { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    expect(detect.code, detect.stderr).toBe(0);
    const candidate = (JSON.parse(detect.stdout) as Array<{ resume_command: string; suggested_action: string }>)[0]!;
    // Before the fix: `polywave prepare-wave … --wave 1` ("relaunch those agents": in-process, a second run of A's job).
    expect(candidate.resume_command).toBe(`polywave run-wave ${fixture.implPath} --wave 1 ${flags}`);
    expect(candidate.suggested_action).toContain('agent(s) A have no report, but their attempt(s) ran as job(s) on a worker');
  });

  it('A21-30: merge-agents and --skip-merge refuse an agent whose report is not complete (a withdrawn report: its commits stay unmerged)', async () => {
    const fixture = await threeAgentWave();
    // B's report withdrawn (as the dispatcher withdraws an early report whose job failed): blocked, at the base.
    const base = await fixture.head();
    await fixture.report('B', { status: 'blocked', failure_type: 'transient', commit: base, branch: fixture.branch('B'), worktree: fixture.worktree('B'), notes: 'withdrawn by the orchestrator' });
    const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const merged = await runCli(['merge-agents', fixture.implPath, '--wave', '1'], { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    // Before the fix: exit 0, "merged 3 agent branch(es)", B's commits on main while its report said blocked.
    expect(merged.code, merged.stdout).toBe(1);
    expect(merged.stdout).toContain('agent B has status blocked');
    expect(await mergeCommits(fixture.repo)).toHaveLength(0);
    expect(await fixture.head()).toBe(base);
    // The pair's second half (E11a, a merge made by hand): refused as well.
    const manual = await threeAgentWave();
    await manual.report('B', { status: 'blocked', failure_type: 'transient', commit: await manual.head(), branch: manual.branch('B'), worktree: manual.worktree('B'), notes: 'withdrawn by the orchestrator' });
    await manual.repo.run(['merge', '--no-ff', '-q', '-m', 'manual octopus', manual.branch('A'), manual.branch('B'), manual.branch('C')]);
    const skipped = await manual.finalize(1, { skipMerge: true });
    expect(skipped.success).toBe(false);
    expect(failedStep(skipped)?.step).toBe('check-agent-statuses');
    expect(manual.manifest().state).not.toBe('WAVE_VERIFIED');
  });
});

describe('finalize-wave: failures leave everything recoverable', () => {
  it('an agent editing a file it does not own (I1 undeclared modification) blocks before any merge', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n', 'src/base.ts': 'export const base = 2;\n' }, { created: ['src/a.ts'] });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    expect(failedStep(result)?.step).toBe('predict-conflicts');
    expect(failedStep(result)?.detail).toContain('agent A changed src/base.ts (owned by no agent of this wave)');
    const report = result.conflict_report as { undeclared_modifications: unknown[] };
    expect(report.undeclared_modifications).toEqual([{ agent: 'A', file: 'src/base.ts', owners: [] }]);
    expect(step(result, 'merge-agents')).toBeUndefined();
    expect(step(result, 'mark-blocked')?.status).toBe('success');
    expect(fixture.manifest().state).toBe('BLOCKED');
    expect(fixture.manifest().merge_state).toBe('idle');
    await expectRecoverable(fixture, before, ['A', 'B', 'C']);
  });

  it('two agents editing the same file: reported with the agents and the predicted textual conflict', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n', 'src/a.ts': 'export const a = 2;\n' }, { created: ['src/b.ts', 'src/a.ts'] });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1);
    expect(failedStep(result)?.step).toBe('predict-conflicts');
    const report = result.conflict_report as { conflicts_detected: number; blocking_findings: number; conflicts: unknown[]; textual_conflicts: Array<{ between: string[]; paths: string[] }> };
    expect(report.conflicts).toEqual([{ file: 'src/a.ts', agents: ['A', 'B'] }]);
    // Go's number: the conflicts (outside attack X6, N8); ours counts every blocking finding (one conflict, B's undeclared edit, one textual conflict).
    expect(report.conflicts_detected).toBe(1);
    expect(report.blocking_findings).toBe(3);
    expect(report.textual_conflicts).toEqual([expect.objectContaining({ between: ['A', 'B'], paths: ['src/a.ts'] })]);
    expect(failedStep(result)?.detail).toContain('src/a.ts (A, B)');
    await expectRecoverable(fixture, before, ['A', 'B', 'C']);
    expect(fixture.manifest().state).toBe('BLOCKED');
  });

  it('byte-identical edits by two agents are allowed (I1 amendment) and merge cleanly', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n', 'README.md': '# shared\n' }, { created: ['src/a.ts'] });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n', 'README.md': '# shared\n' }, { created: ['src/b.ts'] });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    const report = result.conflict_report as { identical_edits: Array<{ file: string; agents: string[] }> };
    expect(report.identical_edits).toEqual([expect.objectContaining({ file: 'README.md', agents: ['A', 'B'] })]);
    expect(step(result, 'predict-conflicts')?.status).toBe('warning');
    expect(fixture.repo.read('README.md')).toBe('# shared\n');
  });

  it('a report whose files differ from its diff blocks before any merge', async () => {
    const fixture = await createWaveFixture({ ...threeAgents, waves: [[{ id: 'A', files: ['src/a.ts', 'src/a2.ts'] }, { id: 'B', files: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }]] });
    await fixture.startWave(1);
    const commit = await fixture.work('A', { 'src/a.ts': 'export const a = 1;\n', 'src/a2.ts': 'export const a2 = 1;\n' });
    await fixture.report('A', { status: 'complete', commit, files_created: ['src/a.ts', 'src/a-missing.ts'], verification: 'PASS' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1);
    expect(failedStep(result)?.step).toBe('predict-conflicts');
    const report = result.conflict_report as { report_mismatches: unknown[] };
    expect(report.report_mismatches).toEqual([{ agent: 'A', missing_from_report: ['src/a2.ts'], not_in_diff: ['src/a-missing.ts'] }]);
    expect(failedStep(result)?.detail).toContain("agent A's report does not match its branch");
    await expectRecoverable(fixture, before, ['A', 'B', 'C']);
  });

  it('a stub left behind is reported (stub_reports + E20 table) and does not block', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export function a(): number {\n  // TODO: real implementation\n  throw new Error("not implemented");\n}\n' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    const result = await fixture.finalize(1);
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect(step(result, 'scan-stubs')?.status).toBe('warning');
    expect(result.stub_report?.hits).toEqual([
      expect.objectContaining({ file: 'src/a.ts', line: 2, agent_id: 'A' }),
      expect.objectContaining({ file: 'src/a.ts', line: 3, agent_id: 'A' }),
    ]);
    expect(result.stub_table).toContain('| src/a.ts | 2 |');
    const stored = fixture.manifest().stub_reports?.wave1?.hits ?? [];
    expect(stored.map((hit) => [hit.file, hit.line])).toEqual([['src/a.ts', 2], ['src/a.ts', 3]]);
    expect(await mergeCommits(fixture.repo)).toHaveLength(3);
  });

  it('stubs block with requireNoStubs', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': '// FIXME: later\nexport const a = 1;\n' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1, { requireNoStubs: true });
    expect(failedStep(result)?.step).toBe('scan-stubs');
    await expectRecoverable(fixture, before, ['A', 'B', 'C']);
  });

  it('a failing pre-merge gate runs in the agent worktree and names the agent and the command; nothing merges', async () => {
    const fixture = await threeAgentWave({
      ...threeAgents,
      gates: ['        - type: test', '          command: "! grep -rq BROKEN src"', '          required: true', '        - type: lint', '          command: "exit 3"', '          required: false'].join('\n'),
    });
    await fixture.work('B', { 'src/b.ts': 'export const b = 1; // BROKEN\n' });
    await fixture.report('B', { status: 'complete', commit: await fixture.repo.git.revParse(fixture.branch('B')), files_created: ['src/b.ts'], verification: 'PASS' });
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1);
    expect(failedStep(result)?.step).toBe('run-gates');
    expect(failedStep(result)?.detail).toContain('agent B: test gate `! grep -rq BROKEN src` exited 1');
    expect(failedStep(result)?.detail).not.toContain('agent A:');
    const gates = result.gate_results['.'] ?? [];
    expect(gates.map((gate) => [gate.agent, gate.type, gate.passed])).toEqual([
      ['A', 'test', true],
      ['A', 'lint', false],
      ['B', 'test', false],
      ['B', 'lint', false],
      ['C', 'test', true],
      ['C', 'lint', false],
    ]);
    expect(gates[0]?.cwd).toBe(fixture.worktree('A'));
    await expectRecoverable(fixture, before, ['A', 'B', 'C']);
    expect(fixture.manifest().state).toBe('BLOCKED');
    // Fixed on the branch: the re-run passes (BLOCKED → WAVE_MERGING → WAVE_VERIFIED).
    await fixture.work('B', { 'src/b.ts': 'export const b = 1;\n' });
    const again = await fixture.finalize(1);
    expect(again.success, JSON.stringify(failedStep(again))).toBe(true);
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');
  });

  it('a branch that moves after the checks is merged at the checked tip; the late commit is kept, unmerged', async () => {
    // The pre-merge gate of agent B commits on B's branch: the checks judged the tip before it.
    // (A sandboxed gate cannot commit — .git is read-only inside — so the gate runs unsandboxed
    // here: it stands in for anything outside the checks that moves a branch, e.g. a late agent.)
    const late = 'case "$PWD" in *agent-B) git -c user.name=late -c user.email=late@example.invalid commit -q --no-verify --allow-empty -m late ;; esac';
    const fixture = await threeAgentWave({ ...threeAgents, gates: ['        - type: test', `          command: '${late}'`, '          required: true'].join('\n') });
    const checked = await fixture.repo.git.revParse(fixture.branch('B'));
    const result = await fixture.finalize(1, { env: { ...fixture.repo.env, POLYWAVE_SANDBOX: 'off' } });
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    const moved = await fixture.repo.git.revParse(fixture.branch('B'));
    expect(moved).not.toBe(checked);
    const merges = await mergeCommits(fixture.repo);
    expect(merges).toHaveLength(3);
    expect(await fixture.repo.git.isAncestor(checked, 'main')).toBe(true);
    expect(await fixture.repo.git.isAncestor(moved, 'main')).toBe(false);
    const mergedB = (result.merge_result['.'] as { merges: Array<{ agent: string; tip?: string }> }).merges.find((item) => item.agent === 'B');
    expect(mergedB?.tip).toBe(checked);
    // Cleanup keeps what is not in the target: B's branch and worktree stay, with the reason.
    const cleanup = result.cleanup_result['.'];
    expect(cleanup?.agents.find((line) => line.agent === 'B')?.kept).toContain('not reachable from main');
    expect(existsSync(fixture.worktree('B'))).toBe(true);
    expect(existsSync(fixture.worktree('A'))).toBe(false);
  });

  it('a blocked agent: nothing merges, the E19 decision is shown, the IMPL goes to BLOCKED', async () => {
    const fixture = await createWaveFixture({ ...threeAgents, extra: 'reactions:\n    fixable:\n        action: pause' });
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    await fixture.report('B', { status: 'blocked', failure_type: 'transient', notes: 'npm registry timed out' });
    const commitC = await fixture.work('C', { 'src/c.ts': 'export const c = 1;\n' });
    await fixture.report('C', { status: 'partial', failure_type: 'fixable', commit: commitC, notes: 'needs a dependency' });
    const before = { head: await fixture.head() };
    const result = await fixture.finalize(1);
    expect(result.success).toBe(false);
    // B never committed: the empty branch is E7's business, not an isolation failure.
    expect(step(result, 'verify-commits')?.status).toBe('success');
    expect(failedStep(result)?.step).toBe('check-agent-statuses');
    expect(result.blocked_agents?.map((agent) => [agent.agent, agent.status, agent.decision.action])).toEqual([
      ['B', 'blocked', 'retry'],
      ['C', 'partial', 'pause'],
    ]);
    expect(failedStep(result)?.detail).toContain('agent B has status blocked (transient → E19: retry');
    expect(failedStep(result)?.detail).toContain('agent C has status partial (fixable → E19: pause');
    expect(await fixture.head()).toBe(before.head);
    expect(fixture.manifest().state).toBe('BLOCKED');
    expect(await fixture.repo.git.listBranches('polywave/')).toHaveLength(3);
  });

  it('an empty agent branch is a hard stop with the isolation-failure explanation (I5)', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    // C "committed" on the main checkout instead of its worktree.
    fixture.repo.write('src/c.ts', 'export const c = 1;\n');
    const stray = await fixture.repo.commitAll('C worked in the wrong checkout');
    await fixture.report('C', { status: 'complete', commit: stray, files_created: ['src/c.ts'], verification: 'PASS' });
    const result = await fixture.finalize(1);
    expect(failedStep(result)?.step).toBe('verify-commits');
    expect(failedStep(result)?.detail).toMatch(/I5: 1 agent branch\(es\) have no commits beyond the wave base: C .*worktree isolation failed \(E4\)/);
    expect(await mergeCommits(fixture.repo)).toHaveLength(0);
  });

  it('a textual conflict with the target (changed meanwhile) is predicted by merge-tree: target unchanged', async () => {
    const fixture = await createWaveFixture({ ...threeAgents, waves: [[{ id: 'A', files: ['src/base.ts', 'src/a.ts'], modify: ['src/base.ts'] }, { id: 'B', files: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }]] });
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n', 'src/base.ts': 'export const base = 2;\n' }, { created: ['src/a.ts'] });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    await fixture.complete('C', { 'src/c.ts': 'export const c = 1;\n' });
    fixture.repo.write('src/base.ts', 'export const base = 3;\n');
    await fixture.repo.run(['commit', '-q', '--no-verify', '-m', 'someone changed base on main', '--', 'src/base.ts']);
    const before = await waveSnapshot(fixture, ['A', 'B', 'C']);
    const result = await fixture.finalize(1);
    expect(failedStep(result)?.step).toBe('predict-conflicts');
    const report = result.conflict_report as { textual_conflicts: Array<{ between: string[]; paths: string[] }> };
    expect(report.textual_conflicts).toEqual([expect.objectContaining({ between: ['target', 'A'], paths: ['src/base.ts'] })]);
    await expectRecoverable(fixture, before, ['A', 'B', 'C']);
    expect(fixture.repo.read('src/base.ts')).toBe('export const base = 3;\n');
  });

  it('a failing post-merge verification is classified (E47) and blocks with the merges kept, branches intact', async () => {
    const fixture = await createWaveFixture({
      waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }], [{ id: 'C', files: ['src/later.ts'] }]],
      testCommand: 'echo "src/later.ts:3:5: error: undefined: oldName"; exit 1',
    });
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    await fixture.complete('B', { 'src/b.ts': 'export const b = 1;\n' });
    const result = await fixture.finalize(1);
    expect(failedStep(result)?.step).toBe('verify-build');
    expect(result.caller_cascade_only).toBe(true);
    expect(result.caller_cascade_errors).toEqual([{ file: 'src/later.ts', line: 3, message: 'error: undefined: oldName', owner: 'later-wave', owners: ['C'] }]);
    expect(step(result, 'apply-cascade-hotfix')?.data).toMatchObject({ files: ['src/later.ts'], error_count: 1 });
    expect(fixture.manifest().state).toBe('BLOCKED');
    expect(fixture.manifest().merge_state).toBe('failed');
    expect(await mergeCommits(fixture.repo)).toHaveLength(2);
    expect(await fixture.repo.git.listBranches('polywave/')).toHaveLength(2);
    expect(await fixture.repo.git.worktreeList()).toHaveLength(3);
    // Fixed on the target (E47: a commit on the merge target; the identity change is harmless).
    await fixture.repo.run(['config', 'user.name', 'Fixer']);
    writeFileSync(path.join(fixture.repo.dir, 'fix.txt'), 'fixed\n');
    await fixture.repo.commitAll('fix the callers');
    // The test command is changed too: the tamper check refuses that (the manifest is not as the
    // orchestrator left it) until the caller accepts it as their own.
    const implText = readFileSync(fixture.implPath, 'utf8').replace(/^test_command: .*$/m, 'test_command: "true"');
    writeFileSync(fixture.implPath, implText);
    const refused = await fixture.finalize(1);
    expect(refused.failed_step?.code).toBe('TAMPER_DETECTED');
    expect(refused.failed_step?.detail).toContain('manifest field test_command: changed');
    expect(refused.failed_step?.detail).not.toContain('user.name');
    expect(readFileSync(fixture.implPath, 'utf8')).toBe(implText);
    // The re-run skips the merges (E9), accepts the fix commit on top of them, and finishes the wave.
    const again = await fixture.finalize(1, { acceptChanges: true });
    expect(again.success, JSON.stringify(failedStep(again))).toBe(true);
    expect(again.steps.find((item) => item.step === 'check-tamper')?.detail).toContain('accepted as the caller');
    expect((again.merge_result['.'] as { skipped_count: number }).skipped_count).toBe(2);
    expect(await mergeCommits(fixture.repo)).toHaveLength(2);
    expect(again.complete_ready).toBe(false);
    expect(fixture.manifest().state).toBe('WAVE_VERIFIED');
  });
});

describe('finalize-wave CLI', () => {
  it('prints the result JSON on failure too (never null), exit 1, progress on stderr', async () => {
    const fixture = await createWaveFixture(threeAgents);
    await fixture.startWave(1);
    await fixture.complete('A', { 'src/a.ts': 'export const a = 1;\n' });
    const cli = await runCli(['finalize-wave', fixture.implPath, '--wave', '1'], { cwd: fixture.repo.dir, env: { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' }, timeoutMs: 60_000 });
    expect(cli.code, cli.stderr).toBe(1);
    const result = JSON.parse(cli.stdout) as FinalizeWaveResult;
    expect(result.success).toBe(false);
    expect(result.failed_step?.step).toBe('verify-completion-reports');
    expect(result.failed_step?.detail).toContain('missing completion reports for agents: [B, C]');
    expect(cli.stderr).toContain('finalize-wave: [verify-commits]');
  });

  it('single-purpose commands: predict-conflicts, verify-commits, check-type-collisions, scan-stubs, merge-agents, validate-integration, verify-build, cleanup', async () => {
    const fixture = await threeAgentWave();
    const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };
    const cli = (...args: string[]) => runCli(args, { cwd: fixture.repo.dir, env, timeoutMs: 60_000 });
    const predicted = await cli('predict-conflicts', fixture.implPath, '--wave', '1');
    expect(predicted.code, predicted.stderr).toBe(0);
    expect(JSON.parse(predicted.stdout)).toMatchObject({ conflicts_detected: 0, conflicts: [] });
    const commits = await cli('verify-commits', fixture.implPath, '--wave', '1');
    expect(commits.code, commits.stderr).toBe(0);
    expect(JSON.parse(commits.stdout).agents.map((agent: { has_commits: boolean }) => agent.has_commits)).toEqual([true, true, true]);
    const collisions = await cli('check-type-collisions', fixture.implPath, '--wave', '1');
    expect(JSON.parse(collisions.stdout)).toEqual({ collisions: [], valid: true });
    const stubs = await cli('scan-stubs', '--append-impl', fixture.implPath, '--wave', '1');
    expect(JSON.parse(stubs.stdout)).toEqual({ hits: [] });
    const integration = await cli('validate-integration', fixture.implPath, '--wave', '1');
    expect(integration.code, integration.stdout).toBe(0);
    expect(JSON.parse(integration.stdout).heuristic_report.valid).toBe(true);
    const merged = await cli('merge-agents', fixture.implPath, '--wave', '1');
    expect(merged.code, merged.stderr).toBe(0);
    const mergeData = JSON.parse(merged.stdout);
    expect(mergeData.merges.map((item: { agent: string; success: boolean }) => [item.agent, item.success])).toEqual([['A', true], ['B', true], ['C', true]]);
    expect(mergeData.next_state).toBe('WAVE_MERGING');
    const build = await cli('verify-build', fixture.implPath);
    expect(build.code, build.stdout).toBe(0);
    expect(JSON.parse(build.stdout)).toMatchObject({ test_passed: true, lint_passed: true });
    const cleaned = await cli('cleanup', fixture.implPath, '--wave', '1');
    expect(cleaned.code, cleaned.stdout).toBe(0);
    expect(JSON.parse(cleaned.stdout).agents.map((agent: { worktree_removed: boolean; branch_deleted: boolean }) => agent.worktree_removed && agent.branch_deleted)).toEqual([true, true, true]);
    const files = await cli('scan-stubs', 'src/a.ts');
    expect(JSON.parse(files.stdout)).toEqual({ hits: [] });
  });
});
