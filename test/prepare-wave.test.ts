import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import { prepareAgent, prepareWave, preWaveValidate, type PrepareWaveOptions, type PrepareWaveResult } from '../src/engine/prepare-wave.js';
import { readActiveWave } from '../src/engine/isolation-hook.js';
import { detectResumable } from '../src/engine/resume-detect.js';
import { createGit } from '../src/git/git-cli.js';
import { parseImpl } from '../src/protocol/parse-impl.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { runCli } from './support/cli.js';

// Integration tests of prepare-wave on real temporary repositories (DESIGN §6: no mocked git).

interface AgentSpec {
  id: string;
  files: string[];
  task?: string;
}

interface ImplSpec {
  waves: AgentSpec[][];
  gates?: string;
  extra?: string;
  state?: string;
  scaffolds?: string;
  wiring?: string;
  reports?: string;
  /** Extra ownership rows (YAML list items). */
  ownership?: string;
}

function implYaml(spec: ImplSpec): string {
  const rows: string[] = [];
  const waves: string[] = [];
  spec.waves.forEach((agents, index) => {
    const number = index + 1;
    waves.push(`    - number: ${number}\n      agents:`);
    for (const agent of agents) {
      for (const file of agent.files) rows.push(`    - file: ${file}\n      agent: ${agent.id}\n      wave: ${number}\n      action: new`);
      waves.push(`        - id: ${agent.id}\n          task: ${JSON.stringify(agent.task ?? `Implement ${agent.files.join(', ')} for agent ${agent.id}.`)}\n          files:\n${agent.files.map((file) => `            - ${file}`).join('\n')}`);
    }
  });
  return [
    'title: Demo feature',
    'feature_slug: demo',
    'verdict: SUITABLE',
    `state: ${spec.state ?? 'WAVE_PENDING'}`,
    'file_ownership:',
    ...rows,
    ...(spec.ownership ? [spec.ownership] : []),
    'interface_contracts:',
    '    - name: Greeter',
    '      description: Greets people.',
    '      definition: "export interface Greeter { greet(name: string): string }"',
    '      location: src/types.ts',
    '    - name: Counter',
    '      description: Counts things.',
    '      definition: "export interface Counter { count(): number }"',
    '      location: src/counter.ts',
    'waves:',
    ...waves,
    ...(spec.gates ? ['quality_gates:', '    level: standard', '    gates:', spec.gates] : []),
    ...(spec.scaffolds ? ['scaffolds:', spec.scaffolds] : []),
    ...(spec.wiring ? ['wiring:', spec.wiring] : []),
    ...(spec.reports ? ['completion_reports:', spec.reports] : []),
    ...(spec.extra ? [spec.extra] : []),
    '',
  ].join('\n');
}

const implRelative = 'docs/IMPL/IMPL-demo.yaml';
const twoAgents: ImplSpec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }], [{ id: 'C', files: ['src/c.ts'] }]] };

async function setup(spec: ImplSpec = twoAgents, files: Record<string, string> = {}): Promise<{ repo: TestRepo; implPath: string }> {
  const repo = await createTestRepo({ files: { 'src/base.ts': 'export const base = 1;\n', [implRelative]: implYaml(spec), ...files } });
  return { repo, implPath: repo.path(implRelative) };
}

function prepare(repo: TestRepo, implPath: string, wave: number, extra: Partial<PrepareWaveOptions> = {}): Promise<PrepareWaveResult> {
  return prepareWave({ implPath, wave, env: repo.env, gitAt: (directory) => createGit(directory, { env: repo.env }), now: () => new Date('2026-05-12T10:00:00Z'), ...extra });
}

function step(result: PrepareWaveResult, name: string) {
  return result.steps.find((item) => item.step === name);
}

function failedStep(result: PrepareWaveResult) {
  return result.steps.find((item) => item.status === 'failed');
}

function wt(repo: TestRepo, agent: string, wave = 1): string {
  return repo.path(`.claude/worktrees/polywave/demo/wave${wave}-agent-${agent}`);
}

function manifestOf(implPath: string) {
  return parseImpl(readFileSync(implPath, 'utf8')).manifest!;
}

async function worktreeCount(repo: TestRepo): Promise<number> {
  return (await repo.git.worktreeList()).length;
}

/** Commits a file inside an agent worktree (through the isolation hook); returns the commit. */
async function agentCommit(repo: TestRepo, agent: string, file: string, text: string, wave = 1): Promise<string> {
  const git = createGit(wt(repo, agent, wave), { env: repo.env });
  writeFileSync(path.join(wt(repo, agent, wave), file), text);
  await git.add([file]);
  return git.commit({ message: `agent ${agent}: ${file}` });
}

describe('prepare-wave: success path', () => {
  it('creates the worktrees from HEAD, writes briefs/ownership/env/journals, records the freeze, arms the guard', async () => {
    const { repo, implPath } = await setup({
      ...twoAgents,
      gates: '        - type: build\n          command: "true"\n          required: true\n        - type: lint\n          command: "echo lint-ok"\n          required: false',
      wiring: '    - symbol: registerA\n      defined_in: src/a.ts\n      must_be_called_from: src/b.ts\n      agent: A\n      wave: 1\n      integration_pattern: register',
      scaffolds: '    - file_path: src/types.ts\n      contents: "export interface Greeter {}"\n      import_path: ./types\n      status: committed\n      commit: abc1234',
    });
    const head = await repo.git.headCommit();
    const events: PolywaveEvent[] = [];
    const bus = new EventBus();
    bus.subscribe((event) => events.push(event));
    const result = await prepare(repo, implPath, 1, { events: bus });

    expect(failedStep(result), JSON.stringify(result.steps, null, 2)).toBeUndefined();
    expect(result.success).toBe(true);
    expect(result.wave).toBe(1);
    expect(result.original_branch).toBe('main');
    expect(result.worktrees).toEqual([
      { agent: 'A', path: wt(repo, 'A'), branch: 'polywave/demo/wave1-agent-A' },
      { agent: 'B', path: wt(repo, 'B'), branch: 'polywave/demo/wave1-agent-B' },
    ]);
    // Go key set of the JSON, in steps order.
    expect(result.steps.map((item) => item.step)).toEqual([
      'resume_detection', 'load_manifest', 'state_check', 'repo_match', 'config_trust', 'i1_disjoint', 'critic_verdict', 'scaffold_validation', 'wiring_ownership', 'type_collision',
      'freeze_check', 'tamper_check', 'working_dir_check', 'stale_cleanup', 'baseline_gates', 'install_hooks', 'freeze_record', 'create_worktrees', 'verify_worktrees',
      'verify_hooks', 'workspace_setup', 'extract_briefs', 'activate_wave', 'record_tamper',
    ]);
    for (const item of result.steps) expect(Object.keys(item).filter((key) => !['step', 'status', 'detail', 'data', 'duration_ms'].includes(key))).toEqual([]);

    // Branches start at the base; the worktrees are registered exactly once.
    for (const agent of ['A', 'B']) {
      expect((await repo.run(['rev-parse', `polywave/demo/wave1-agent-${agent}`])).trim()).toBe(head);
    }
    expect(await worktreeCount(repo)).toBe(3);

    // E2: one edit recorded the freeze and the base commit.
    const manifest = manifestOf(implPath);
    expect(manifest.worktrees_created_at).toBe('2026-05-12T10:00:00Z');
    expect(manifest.frozen_contracts_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(manifest.frozen_scaffolds_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(manifest.waves?.[0]?.base_commit).toBe(head);

    // E23 brief: own task and files, ALL contracts, full ownership table, scaffolds, gates, wiring, IMPL path.
    const briefA = readFileSync(path.join(wt(repo, 'A'), '.polywave-agent-brief.md'), 'utf8');
    expect(result.agent_briefs[0]).toMatchObject({ agent: 'A', brief_path: path.join(wt(repo, 'A'), '.polywave-agent-brief.md'), brief_length: Buffer.byteLength(briefA), files_owned: 1, journal_dir: repo.path('.polywave-state/demo/wave1/agent-A') });
    expect(briefA).toContain(`**IMPL Doc:** ${implPath}`);
    expect(briefA).toContain('## Task\n\nImplement src/a.ts for agent A.');
    expect(briefA).not.toContain('Implement src/b.ts for agent B.');
    expect(briefA).toContain('- `src/a.ts` (new)');
    expect(briefA).toContain('### Greeter');
    expect(briefA).toContain('### Counter');
    expect(briefA).toContain('| src/b.ts | B | 1 | new |');
    expect(briefA).toContain('| src/c.ts | C | 2 | new |');
    expect(briefA).toContain('## Scaffolds');
    expect(briefA).toContain('src/types.ts');
    expect(briefA).toContain('- **build**: `true` (required: true)');
    expect(briefA).toContain('## Wiring Obligations (E35)');
    expect(briefA).toContain('| registerA | src/a.ts | src/b.ts | register |');
    expect(briefA).not.toContain('## Merge Target');
    const briefB = readFileSync(path.join(wt(repo, 'B'), '.polywave-agent-brief.md'), 'utf8');
    expect(briefB).not.toContain('## Wiring Obligations');

    expect(JSON.parse(readFileSync(path.join(wt(repo, 'A'), '.polywave-ownership.json'), 'utf8'))).toMatchObject({ agent: 'A', wave: 1, impl_doc: implPath, owned_files: ['src/a.ts'], repo_root: repo.dir });
    const env = readFileSync(path.join(wt(repo, 'A'), '.polywave-worktree-env'), 'utf8');
    expect(env).toBe(`POLYWAVE_WORKTREE_ROOT=${wt(repo, 'A')}\nPOLYWAVE_AGENT_ID=A\nPOLYWAVE_WAVE=1\nPOLYWAVE_IMPL=${implPath}\nPOLYWAVE_BRANCH=polywave/demo/wave1-agent-A\n`);
    for (const file of ['cursor.json', 'index.jsonl', 'recent.json', 'tool-results']) expect(existsSync(repo.path(`.polywave-state/demo/wave1/agent-A/${file}`))).toBe(true);
    expect(JSON.parse(readFileSync(repo.path('.polywave-state/demo/wave1/agent-A/cursor.json'), 'utf8'))).toEqual({ session_file: '', offset: 0 });
    expect(readFileSync(repo.path('.polywave-state/active-impl'), 'utf8').trim()).toBe(implPath);
    expect(await readActiveWave(repo.dir)).toMatchObject({ slug: 'demo', wave: 1, target_branch: 'main', impl: implPath, base_commit: head });

    // The agent files never show up in the worktree (common info/exclude), the main checkout only has the IMPL edit.
    expect(await createGit(wt(repo, 'A'), { env: repo.env }).status()).toEqual([]);
    expect((await repo.git.status()).map((entry) => entry.path)).toEqual([implRelative]);

    // Baseline gates ran (E21A), events were emitted.
    expect(step(result, 'baseline_gates')?.status).toBe('success');
    expect(events.filter((event) => event.type === 'worktree-create').map((event) => (event as { agent: string }).agent).sort()).toEqual(['A', 'B']);
    expect(events[0]).toMatchObject({ type: 'wave-prepare-start', slug: 'demo', wave: 1 });
    expect(events[events.length - 1]).toMatchObject({ type: 'wave-prepare-end', success: true });
    expect(events.filter((event) => event.type === 'step-end')).toHaveLength(result.steps.length);
    expect(existsSync(repo.path('.polywave-state/demo/wave1/prepare-result.json'))).toBe(true);
  });

  it('creates many worktrees in parallel, all from the same base, verified by worktree list', async () => {
    const agents = 'ABCDEFGHIJKL'.split('').map((id) => ({ id, files: [`src/${id.toLowerCase()}.ts`] }));
    const { repo, implPath } = await setup({ waves: [agents], extra: 'critic_report:\n    verdict: PASS\n    summary: ok' });
    const result = await prepare(repo, implPath, 1, { concurrency: 6 });
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect(result.worktrees).toHaveLength(12);
    const head = await repo.git.headCommit();
    const list = await repo.git.worktreeList();
    expect(list).toHaveLength(13);
    for (const agent of agents) {
      const entry = list.find((item) => item.branch === `polywave/demo/wave1-agent-${agent.id}`);
      expect(entry?.path).toBe(wt(repo, agent.id));
      expect(entry?.head).toBe(head);
    }
    expect(step(result, 'verify_worktrees')?.detail).toContain('12/12');
  });

  it('--merge-target: worktrees start at the target tip, gates run on the target without switching the checkout', async () => {
    const { repo, implPath } = await setup({ ...twoAgents, gates: '        - type: test\n          command: "test -f feature.txt"\n          required: true' });
    await repo.run(['checkout', '-q', '-b', 'feature']);
    repo.write('feature.txt', 'on feature\n');
    const featureTip = await repo.commitAll('feature work');
    await repo.run(['checkout', '-q', 'main']);
    const result = await prepare(repo, implPath, 1, { mergeTarget: 'feature' });
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect((await repo.run(['rev-parse', 'polywave/demo/wave1-agent-A'])).trim()).toBe(featureTip);
    expect(await repo.git.currentBranch()).toBe('main');
    expect(result.original_branch).toBe('main');
    expect(result.agent_briefs[0]?.merge_target).toBe('feature');
    expect(readFileSync(result.agent_briefs[0]!.brief_path, 'utf8')).toContain('## Merge Target');
    expect((await readActiveWave(repo.dir))?.target_branch).toBe('feature');
    expect(manifestOf(implPath).waves?.[0]?.base_commit).toBe(featureTip);
    // The temporary baseline checkout is gone.
    expect(await worktreeCount(repo)).toBe(3);
  });
});

describe('prepare-wave: cross-repository wave', () => {
  it('creates each agent worktree in its own repository (sibling), guarded there too', async () => {
    const spec: ImplSpec = {
      waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['lib/b.ts'] }]],
      extra: 'critic_report:\n    verdict: PASS',
    };
    const yaml = implYaml(spec).replace('      agent: A\n      wave: 1\n      action: new', '      agent: A\n      wave: 1\n      action: new\n      repo: repo').replace('      agent: B\n      wave: 1\n      action: new', '      agent: B\n      wave: 1\n      action: new\n      repo: other');
    const repo = await createTestRepo({ files: { [implRelative]: yaml } });
    const other = repo.sibling('other');
    const otherGit = createGit(repo.root, { env: repo.env });
    await otherGit.run(['init', '--quiet', '--initial-branch', 'main', other]);
    const gitOther = createGit(other, { env: repo.env });
    await gitOther.run(['config', 'user.name', 'T']);
    await gitOther.run(['config', 'user.email', 't@t.invalid']);
    writeFileSync(path.join(other, 'README.md'), 'other\n');
    await gitOther.add(['README.md']);
    const otherHead = await gitOther.commit({ message: 'init', noVerify: true });

    const result = await prepare(repo, repo.path(implRelative), 1);
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    const worktreeB = path.join(other, '.claude/worktrees/polywave/demo/wave1-agent-B');
    expect(result.worktrees).toEqual([
      { agent: 'A', path: wt(repo, 'A'), branch: 'polywave/demo/wave1-agent-A' },
      { agent: 'B', path: worktreeB, branch: 'polywave/demo/wave1-agent-B', repo: 'other' },
    ]);
    expect((await gitOther.run(['rev-parse', 'polywave/demo/wave1-agent-B'])).stdout.trim()).toBe(otherHead);
    expect(result.agent_briefs[1]).toMatchObject({ agent: 'B', repo: 'other', journal_dir: path.join(other, '.polywave-state/demo/wave1/agent-B') });
    expect((await readActiveWave(other))?.target_branch).toBe('main');
    writeFileSync(path.join(other, 'x.txt'), 'x\n');
    await gitOther.add(['x.txt']);
    // The guard is for the user's and the agents' own git (polywave's host git runs no hook at all).
    expect(() => execFileSync('git', ['commit', '-q', '-m', 'on main of other'], { cwd: other, env: { ...process.env, ...repo.env }, stdio: 'pipe' })).toThrow(/commit refused/);
  });
});

describe('prepare-wave: pre-flight failures', () => {
  it('dirty working tree: fails listing the files, creates nothing', async () => {
    const { repo, implPath } = await setup();
    repo.write('src/base.ts', 'export const base = 2;\n');
    repo.write('notes/todo.md', 'scratch\n');
    const result = await prepare(repo, implPath, 1);
    expect(result.success).toBe(false);
    const failed = failedStep(result)!;
    expect(failed.step).toBe('working_dir_check');
    expect(failed.detail).toContain('src/base.ts');
    expect(failed.detail).toContain('notes/todo.md');
    expect((failed.data as { files: string[] }).files).toEqual(['notes/todo.md', 'src/base.ts']);
    expect(result.steps[result.steps.length - 1]?.step).toBe('working_dir_check');
    expect(await worktreeCount(repo)).toBe(1);
    expect(manifestOf(implPath).worktrees_created_at).toBeUndefined();
  });

  it('Polywave-owned dirty files are committed with commit-state (default) and block without it', async () => {
    const { repo, implPath } = await setup();
    repo.write('docs/CONTEXT.md', '# context\n');
    writeFileSync(implPath, readFileSync(implPath, 'utf8').replace('title: Demo feature', 'title: Demo feature (edited)'));

    const refused = await prepare(repo, implPath, 1, { commitState: false });
    expect(failedStep(refused)?.step).toBe('working_dir_check');
    expect(failedStep(refused)?.detail).toContain('docs/CONTEXT.md');
    expect(failedStep(refused)?.detail).toContain('--commit-state');

    const before = await repo.git.headCommit();
    const result = await prepare(repo, implPath, 1);
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    expect(step(result, 'working_dir_check')?.detail).toContain('committed Polywave state');
    const committed = (await repo.run(['show', '--name-only', '--format=%s', 'HEAD'])).trim().split('\n');
    expect(committed[0]).toBe('chore: update Polywave state for wave 1 preparation');
    expect(committed.slice(1).filter((line) => line !== '').sort()).toEqual(['docs/CONTEXT.md', implRelative]);
    expect((await repo.run(['rev-parse', 'HEAD~1'])).trim()).toBe(before);
    // The worktrees start from the state commit.
    expect((await repo.run(['rev-parse', 'polywave/demo/wave1-agent-A'])).trim()).toBe(await repo.git.headCommit());
  });

  it('failing baseline gate: baseline_verification_failed with every failing command and its output', async () => {
    const { repo, implPath } = await setup({
      ...twoAgents,
      gates: [
        '        - type: build\n          command: "echo build-broken; exit 3"\n          required: true\n          parallel_group: checks',
        '        - type: test\n          command: "echo tests-broken >&2; exit 1"\n          required: true\n          parallel_group: checks',
        '        - type: lint\n          command: "true"\n          required: true',
      ].join('\n'),
    });
    const result = await prepare(repo, implPath, 1, { noCache: true });
    const failed = failedStep(result)!;
    expect(failed.step).toBe('baseline_gates');
    expect(failed.detail).toContain('baseline_verification_failed');
    const data = failed.data as { reason: string; passed: boolean; failing: Array<{ command: string; exit_code: number; output: string }>; gate_results: unknown[] };
    expect(data.reason).toBe('baseline_verification_failed');
    expect(data.passed).toBe(false);
    expect(data.failing.map((gate) => gate.command)).toEqual(['echo build-broken; exit 3', 'echo tests-broken >&2; exit 1']);
    expect(data.failing[0]?.exit_code).toBe(3);
    expect(data.failing[0]?.output).toContain('build-broken');
    expect(data.failing[1]?.output).toContain('tests-broken');
    expect(data.gate_results).toHaveLength(3);
    expect(await worktreeCount(repo)).toBe(1);
  });

  it('a solo wave is exempt from the baseline gates', async () => {
    const { repo, implPath } = await setup({ waves: [[{ id: 'A', files: ['src/a.ts', 'src/a2.ts'] }]], gates: '        - type: build\n          command: "exit 1"\n          required: true' });
    const result = await prepare(repo, implPath, 1);
    expect(step(result, 'baseline_gates')?.status).toBe('skipped');
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
  });

  it('I1 overlap: two agents of the wave own one file', async () => {
    const { repo, implPath } = await setup({
      waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]],
      ownership: '    - file: src/shared.ts\n      agent: A\n      wave: 1\n    - file: src/shared.ts\n      agent: B\n      wave: 1',
    });
    const result = await prepare(repo, implPath, 1);
    const failed = failedStep(result)!;
    // validateImpl (V002) or the explicit I1 step refuses it; either way nothing is created.
    expect(['load_manifest', 'i1_disjoint']).toContain(failed.step);
    expect(failed.detail).toContain('src/shared.ts');
    expect(await worktreeCount(repo)).toBe(1);
  });

  it('I3: wave 2 refused while wave 1 is incomplete, or complete but not merged; accepted once merged', async () => {
    const { repo, implPath } = await setup();
    const wave1 = await prepare(repo, implPath, 1);
    expect(wave1.success).toBe(true);
    const commitA = await agentCommit(repo, 'A', 'src/a.ts', 'export const a = 1;\n');
    const commitB = await agentCommit(repo, 'B', 'src/b.ts', 'export const b = 1;\n');

    const incomplete = await prepare(repo, implPath, 2);
    expect(failedStep(incomplete)?.step).toBe('wave_sequencing');
    expect(failedStep(incomplete)?.detail).toContain('agent A has no completion report');

    const reports = `completion_reports:\n    A:\n        status: complete\n        commit: ${commitA}\n        branch: polywave/demo/wave1-agent-A\n        files_created:\n            - src/a.ts\n        verification: PASS\n    B:\n        status: complete\n        commit: ${commitB}\n        branch: polywave/demo/wave1-agent-B\n        files_created:\n            - src/b.ts\n        verification: PASS\n`;
    writeFileSync(implPath, readFileSync(implPath, 'utf8') + reports);
    const unmerged = await prepare(repo, implPath, 2);
    expect(failedStep(unmerged)?.step).toBe('wave_sequencing');
    expect(failedStep(unmerged)?.detail).toMatch(/branch polywave\/demo\/wave1-agent-A is not merged into HEAD/);

    // Merge A; delete B's branch after merging it (the report's commit is then used).
    const allow = { POLYWAVE_ALLOW_MAIN_COMMIT: '1' };
    await repo.git.mergeNoFf('polywave/demo/wave1-agent-A', { message: 'merge A', env: allow });
    const stillB = await prepare(repo, implPath, 2);
    expect(failedStep(stillB)?.detail).toContain('wave1-agent-B is not merged');
    expect(failedStep(stillB)?.detail).not.toContain('agent A');
    await repo.git.mergeNoFf('polywave/demo/wave1-agent-B', { message: 'merge B', env: allow });
    await repo.run(['worktree', 'remove', wt(repo, 'B')]);
    await repo.git.deleteMergedBranch('polywave/demo/wave1-agent-B');

    const merged = await prepare(repo, implPath, 2);
    expect(merged.success, JSON.stringify(failedStep(merged))).toBe(true);
    expect(step(merged, 'wave_sequencing')?.status).toBe('success');
    // E4a: wave 1's leftover worktree A (merged into the base) was cleaned; C was created.
    expect(step(merged, 'stale_cleanup')?.detail).toContain('merged_previous_wave');
    expect(existsSync(wt(repo, 'A'))).toBe(false);
    expect(merged.worktrees.map((item) => item.agent)).toEqual(['C']);
  });

  it('I3: a report commit that never reached the base blocks even when the branch is gone', async () => {
    const { repo, implPath } = await setup();
    await repo.run(['branch', 'side']);
    await repo.run(['checkout', '-q', 'side']);
    repo.write('side.txt', 'x\n');
    const lost = await repo.commitAll('side work');
    await repo.run(['checkout', '-q', 'main']);
    const reports = `completion_reports:\n    A:\n        status: complete\n        commit: ${lost}\n    B:\n        status: complete\n        commit: ${await repo.git.headCommit()}\n`;
    writeFileSync(implPath, readFileSync(implPath, 'utf8') + reports);
    await repo.commitAll('reports');
    const result = await prepare(repo, implPath, 2);
    expect(failedStep(result)?.step).toBe('wave_sequencing');
    expect(failedStep(result)?.detail).toContain(`commit ${lost.slice(0, 12)} is not merged`);
  });

  it('E37: a large wave needs a critic verdict; --skip-critic writes the synthetic PASS', async () => {
    const spec: ImplSpec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }]] };
    const { repo, implPath } = await setup(spec);
    const refused = await prepare(repo, implPath, 1);
    expect(failedStep(refused)?.step).toBe('critic_verdict');
    expect(failedStep(refused)?.detail).toContain('--skip-critic');

    const result = await prepare(repo, implPath, 1, { skipCritic: true });
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    const report = manifestOf(implPath).critic_report!;
    expect(report).toMatchObject({ verdict: 'PASS', summary: 'Skipped by operator (--skip-critic)', reviewed_at: '2026-05-12T10:00:00Z', issue_count: 0, agent_reviews: {} });
    // The synthetic report was committed as Polywave state before the worktrees branched.
    expect(await repo.run(['show', 'polywave/demo/wave1-agent-A:docs/IMPL/IMPL-demo.yaml'])).toContain('Skipped by operator (--skip-critic)');
  });

  it('I2: uncommitted scaffolds block', async () => {
    const { repo, implPath } = await setup({ ...twoAgents, scaffolds: '    - file_path: src/types.ts\n      contents: "export interface Greeter {}"\n      status: pending' });
    const result = await prepare(repo, implPath, 1);
    expect(failedStep(result)?.step).toBe('scaffold_validation');
    expect(failedStep(result)?.detail).toContain('src/types.ts');
  });

  it('E35 Layer 3A: a wiring caller nobody in the wave owns blocks', async () => {
    const { repo, implPath } = await setup({ ...twoAgents, wiring: '    - symbol: registerA\n      defined_in: src/a.ts\n      must_be_called_from: src/main.ts\n      agent: A\n      wave: 1\n      integration_pattern: register' });
    const result = await prepare(repo, implPath, 1);
    expect(failedStep(result)?.step).toBe('wiring_ownership');
    expect(failedStep(result)?.detail).toContain('src/main.ts');
  });

  it('state COMPLETE and validation errors block before anything is touched', async () => {
    const { repo, implPath } = await setup({ ...twoAgents, state: 'COMPLETE' });
    const complete = await prepare(repo, implPath, 1);
    expect(failedStep(complete)?.step).toBe('state_check');
    writeFileSync(implPath, readFileSync(implPath, 'utf8').replace('state: COMPLETE', 'state: WAVE_PENDING\nunknown_field: 1'));
    await repo.commitAll('bad manifest');
    const invalid = await prepare(repo, implPath, 1);
    expect(failedStep(invalid)?.step).toBe('load_manifest');
    expect(failedStep(invalid)?.detail).toContain('unknown_field');
    expect(await worktreeCount(repo)).toBe(1);
  });
});

describe('prepare-wave: freeze (E2), stale worktrees (E4a) and re-entry (E9)', () => {
  it('refuses a re-run after an interface contract was edited', async () => {
    const { repo, implPath } = await setup();
    expect((await prepare(repo, implPath, 1)).success).toBe(true);
    writeFileSync(implPath, readFileSync(implPath, 'utf8').replace('greet(name: string): string', 'greet(name: string, loud: boolean): string'));
    const result = await prepare(repo, implPath, 1);
    const failed = failedStep(result)!;
    expect(failed.step).toBe('freeze_check');
    expect(failed.detail).toContain('Interface contracts have been modified after freeze');
    // Refused before touching anything: the edit is still uncommitted, worktrees untouched.
    expect((await repo.git.status()).map((entry) => entry.path)).toEqual([implRelative]);
    expect(await worktreeCount(repo)).toBe(3);
  });

  it('cleans a stale worktree of this IMPL (branch deleted) before creating, and never one holding work', async () => {
    const { repo, implPath } = await setup();
    const head = await repo.git.headCommit();
    // A leftover of a crashed run: A's worktree, detached, its branch deleted (clean, reachable → stale).
    await repo.git.worktreeAdd({ path: wt(repo, 'A'), branch: 'polywave/demo/wave1-agent-A', base: head, createBranch: true });
    await createGit(wt(repo, 'A'), { env: repo.env }).run(['checkout', '-q', '--detach']);
    await repo.run(['branch', '-D', 'polywave/demo/wave1-agent-A']);
    // B's leftover holds uncommitted work: it must survive.
    await repo.git.worktreeAdd({ path: wt(repo, 'B'), branch: 'polywave/demo/wave1-agent-B', base: head, createBranch: true });
    await createGit(wt(repo, 'B'), { env: repo.env }).run(['checkout', '-q', '--detach']);
    await repo.run(['branch', '-D', 'polywave/demo/wave1-agent-B']);
    writeFileSync(path.join(wt(repo, 'B'), 'precious.txt'), 'unsaved work\n');

    const result = await prepare(repo, implPath, 1);
    const stale = step(result, 'stale_cleanup')!;
    expect(stale.status).toBe('warning');
    const data = stale.data as { cleaned: Array<{ worktree_path: string; reason: string }>; skipped: Array<{ worktree_path: string; detail: string }> };
    expect(data.cleaned).toEqual([expect.objectContaining({ worktree_path: wt(repo, 'A'), reason: 'branch_deleted' })]);
    expect(data.skipped).toEqual([expect.objectContaining({ worktree_path: wt(repo, 'B') })]);
    expect(data.skipped[0]?.detail).toContain('precious.txt');
    // B's work is untouched; prepare refuses to put B's worktree over it (nothing destroyed).
    expect(readFileSync(path.join(wt(repo, 'B'), 'precious.txt'), 'utf8')).toBe('unsaved work\n');
    expect(result.success).toBe(false);
    expect(failedStep(result)?.step).toBe('create_worktrees');
    expect(failedStep(result)?.detail).toContain('agent B');
    // A was recreated from the base on its branch.
    expect(result.worktrees.map((item) => item.agent)).toEqual(['A']);
    expect((await createGit(wt(repo, 'A'), { env: repo.env }).currentBranch())).toBe('polywave/demo/wave1-agent-A');
  });

  it('a stale worktree whose commits are not in the base is kept', async () => {
    const { repo, implPath } = await setup();
    await repo.git.worktreeAdd({ path: wt(repo, 'A'), branch: 'polywave/demo/wave1-agent-A', base: 'HEAD', createBranch: true });
    const git = createGit(wt(repo, 'A'), { env: repo.env });
    await git.run(['checkout', '-q', '--detach']);
    writeFileSync(path.join(wt(repo, 'A'), 'work.txt'), 'committed but unreachable\n');
    await git.add(['work.txt']);
    const orphanCommit = await git.commit({ message: 'detached work' });
    await repo.run(['branch', '-D', 'polywave/demo/wave1-agent-A']);
    const result = await prepare(repo, implPath, 1);
    const data = step(result, 'stale_cleanup')!.data as { skipped: Array<{ detail: string }> };
    expect(data.skipped[0]?.detail).toContain('not reachable');
    expect(existsSync(path.join(wt(repo, 'A'), 'work.txt'))).toBe(true);
    expect((await git.headCommit())).toBe(orphanCommit);
  });

  it('re-running after a crash reuses worktrees, keeps commits and uncommitted work, recreates only what is missing', async () => {
    const spec: ImplSpec = { waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }, { id: 'C', files: ['src/c.ts'] }, { id: 'D', files: ['src/d.ts'] }]], extra: 'critic_report:\n    verdict: PASS' };
    const { repo, implPath } = await setup(spec);
    const first = await prepare(repo, implPath, 1);
    expect(first.success, JSON.stringify(failedStep(first))).toBe(true);
    const base = await repo.git.headCommit();

    // The "crash": A committed; B has uncommitted work; C's worktree never got created (branch
    // gone too); D's worktree is gone but its branch has a commit.
    const commitA = await agentCommit(repo, 'A', 'src/a.ts', 'export const a = 1;\n');
    writeFileSync(path.join(wt(repo, 'B'), 'src/b.ts'), 'export const b = "draft";\n');
    await repo.run(['worktree', 'remove', wt(repo, 'C')]);
    await repo.run(['branch', '-D', 'polywave/demo/wave1-agent-C']);
    const commitD = await agentCommit(repo, 'D', 'src/d.ts', 'export const d = 1;\n');
    await repo.run(['worktree', 'remove', wt(repo, 'D')]);

    const second = await prepare(repo, implPath, 1);
    expect(second.success, JSON.stringify(failedStep(second))).toBe(true);
    expect(step(second, 'create_worktrees')?.data).toMatchObject({ created: ['C'], reused: ['A', 'B'], attached: ['D'] });
    expect(step(second, 'repo_match')?.detail).toContain('E9 re-entry');
    expect(step(second, 'freeze_check')?.status).toBe('success');
    // Nothing lost, nothing duplicated.
    expect((await repo.run(['rev-parse', 'polywave/demo/wave1-agent-A'])).trim()).toBe(commitA);
    expect((await repo.run(['rev-parse', 'polywave/demo/wave1-agent-D'])).trim()).toBe(commitD);
    expect(readFileSync(path.join(wt(repo, 'D'), 'src/d.ts'), 'utf8')).toBe('export const d = 1;\n');
    expect(readFileSync(path.join(wt(repo, 'B'), 'src/b.ts'), 'utf8')).toBe('export const b = "draft";\n');
    expect((await repo.run(['rev-parse', 'polywave/demo/wave1-agent-C'])).trim()).toBe(base);
    const list = await repo.git.worktreeList();
    expect(list).toHaveLength(5);
    expect(new Set(list.map((entry) => entry.branch)).size).toBe(5);
    expect(second.worktrees.map((item) => item.agent)).toEqual(['A', 'B', 'C', 'D']);
  });
});

describe('prepare-wave: sub-commands', () => {
  it('pre-wave-validate reports every check and writes nothing', async () => {
    const { repo, implPath } = await setup({
      waves: [[{ id: 'A', files: ['src/a.ts'] }, { id: 'B', files: ['src/b.ts'] }]],
      wiring: '    - symbol: x\n      defined_in: src/a.ts\n      must_be_called_from: src/main.ts\n      agent: A\n      wave: 1',
    });
    repo.write('src/base.ts', 'changed\n');
    const before = readFileSync(implPath, 'utf8');
    const result = await preWaveValidate({ implPath, wave: 1, env: repo.env, gitAt: (directory) => createGit(directory, { env: repo.env }) });
    expect(result.ready).toBe(false);
    expect(result.validation.valid).toBe(true);
    expect(result.e35_gaps.passed).toBe(false);
    const statuses = Object.fromEntries(result.checks.map((check) => [check.name, check.status]));
    expect(statuses).toMatchObject({ load_manifest: 'success', wiring_ownership: 'failed', working_dir_check: 'failed', i1_disjoint: 'success' });
    expect(readFileSync(implPath, 'utf8')).toBe(before);
    expect(existsSync(repo.path('.polywave-state'))).toBe(false);
  });

  it('prepare-agent --no-worktree writes the solo brief into the journal directory', async () => {
    const { repo, implPath } = await setup({ waves: [[{ id: 'A', files: ['src/a.ts', 'src/a2.ts'] }]] });
    const result = await prepareAgent({ implPath, wave: 1, agent: 'A', noWorktree: true, env: repo.env, gitAt: (directory) => createGit(directory, { env: repo.env }) });
    expect(result.success, JSON.stringify(result.steps)).toBe(true);
    expect(result.brief_path).toBe(repo.path('.polywave-state/demo/wave1/agent-A/brief.md'));
    expect(readFileSync(result.brief_path, 'utf8')).toContain('# Agent A Brief - Wave 1');
    expect(result).toMatchObject({ agent_id: 'A', wave: 1, files_owned: 2, context_source: 'prepared-brief', journal_context_available: false });
    expect(existsSync(result.index_path)).toBe(true);
    expect(manifestOf(implPath).waves?.[0]?.agents?.[0]?.context_source).toBe('prepared-brief');
    expect(await worktreeCount(repo)).toBe(1);
  });

  it('E23A: a journal with history is summarized into context.md and the brief', async () => {
    const { repo, implPath } = await setup();
    const journal = repo.path('.polywave-state/demo/wave1/agent-A');
    repo.write('.polywave-state/demo/wave1/agent-A/index.jsonl', [
      JSON.stringify({ ts: '2026-01-01T00:00:00Z', kind: 'tool_use', tool_name: 'Write', tool_use_id: 't1', input: { file_path: '/x/src/a.ts' } }),
      JSON.stringify({ ts: '2026-01-01T00:00:01Z', kind: 'tool_use', tool_name: 'Bash', tool_use_id: 't2', input: { command: 'npm test' } }),
      JSON.stringify({ ts: '2026-01-01T00:00:02Z', kind: 'tool_result', tool_use_id: 't2', preview: 'Tests 3 passed' }),
      '',
    ].join('\n'));
    const result = await prepare(repo, implPath, 1);
    expect(result.success, JSON.stringify(failedStep(result))).toBe(true);
    const info = result.agent_briefs.find((brief) => brief.agent === 'A')!;
    expect(info.journal_context_available).toBe(true);
    expect(info.journal_context_file).toBe(path.join(journal, 'context.md'));
    const brief = readFileSync(info.brief_path, 'utf8');
    expect(brief).toContain('## Session Context (Recovered from Tool Journal)');
    expect(brief).toContain('/x/src/a.ts');
    expect(brief).toContain('`npm test` → Tests 3 passed');
    expect(result.agent_briefs.find((item) => item.agent === 'B')?.journal_context_available).toBeUndefined();
    // The journal itself is never truncated.
    expect(readFileSync(path.join(journal, 'index.jsonl'), 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
  });

  it('resume-detect lists the wave with orphaned worktrees and missing reports', async () => {
    const { repo, implPath } = await setup();
    expect((await prepare(repo, implPath, 1)).success).toBe(true);
    const found = await detectResumable({ git: repo.git, gitAt: (directory) => createGit(directory, { env: repo.env }) });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ impl_path: implPath, slug: 'demo', wave: 1, reports_missing: ['A', 'B'], orphaned_worktrees: [wt(repo, 'A'), wt(repo, 'B')] });
    expect(found[0]?.suggested_action).toContain('prepare-wave');
  });
});

describe('prepare-wave CLI', () => {
  it('prints only the result JSON on stdout (progress on stderr), exit 0; exit 1 with JSON on failure; exit 2 on bad input', async () => {
    const { repo } = await setup();
    const env = Object.fromEntries(Object.entries(repo.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
    const ok = await runCli(['prepare-wave', implRelative, '--wave', '1'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    expect(ok.code, ok.stderr).toBe(0);
    const parsed = JSON.parse(ok.stdout) as PrepareWaveResult;
    expect(Object.keys(parsed)).toEqual(['wave', 'worktrees', 'agent_briefs', 'steps', 'success', 'original_branch']);
    expect(parsed.success).toBe(true);
    expect(ok.stderr).toContain('prepare-wave: [create_worktrees] success');

    repo.write('src/base.ts', 'dirty\n');
    const failed = await runCli(['prepare-wave', implRelative, '--wave', '1', '--json-only'], { cwd: repo.dir, env, timeoutMs: 60_000 });
    expect(failed.code).toBe(1);
    expect(failed.stderr).toBe('');
    expect((JSON.parse(failed.stdout) as PrepareWaveResult).success).toBe(false);

    const missingWave = await runCli(['prepare-wave', implRelative], { cwd: repo.dir, env });
    expect(missingWave.code).toBe(2);
    expect(missingWave.stdout).toBe('');

    const both = await runCli(['cleanup-stale', '--slug', 'demo', '--all'], { cwd: repo.dir, env });
    expect(both.code).toBe(2);
    const neither = await runCli(['cleanup-stale'], { cwd: repo.dir, env });
    expect(neither.code).toBe(2);
    const dry = await runCli(['cleanup-stale', '--all', '--dry-run'], { cwd: repo.dir, env });
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toEqual({ detected: 0, cleaned: [], skipped: [], errors: [] });

    const resume = await runCli(['resume-detect'], { cwd: repo.dir, env });
    expect(resume.code).toBe(0);
    expect((JSON.parse(resume.stdout) as Array<{ slug: string }>)[0]?.slug).toBe('demo');

    const hook = await runCli(['verify-hook-installed', wt(repo, 'A')], { cwd: repo.dir, env });
    expect(hook.code).toBe(0);
    expect(JSON.parse(hook.stdout)).toMatchObject({ valid: true, executable: true, has_logic: true });

    const isolation = await runCli(['verify-isolation', '--branch', 'polywave/demo/wave1-agent-A', '--cwd', wt(repo, 'A')], { cwd: repo.dir, env });
    expect(JSON.parse(isolation.stdout)).toEqual({ ok: true, branch: 'polywave/demo/wave1-agent-A' });
    const notIsolated = await runCli(['verify-isolation', '--branch', 'polywave/demo/wave1-agent-A'], { cwd: repo.dir, env });
    expect(notIsolated.code).toBe(1);
    expect((JSON.parse(notIsolated.stdout) as { errors: string[] }).errors.length).toBeGreaterThan(0);
    expect(statSync(repo.path('.git/hooks/pre-commit')).mode & 0o111).not.toBe(0);
  });
});
