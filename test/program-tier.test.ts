import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { CommandIo } from '../src/cli/io.js';
import { main } from '../src/cli/main.js';
import type { CreateProgramWorktreesResult } from '../src/engine/program/tier-worktrees.js';
import type { FinalizeTierResult } from '../src/engine/program/finalize-tier.js';
import type { PrepareTierResult } from '../src/engine/program/prepare-tier.js';
import type { TierGateResult } from '../src/engine/program/tier-gate.js';
import { createGit } from '../src/git/git-cli.js';
import { runCli } from './support/cli.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { rotatingSlice } from './support/rotation.js';

// The tier-level git engine (E28B, E29, E30, E33, P1, P3, P5) on real repositories: real
// branches, worktrees, --no-ff merges, real shell gates, the real CLI (in-process, and spawned
// where a process must be killed).

const programRelative = 'docs/PROGRAM/PROGRAM-suite.yaml';
const fakeCommit = 'a'.repeat(40);

interface ProgramSpec {
  state?: string;
  tiers?: Array<{ number: number; impls: string[] }>;
  statuses?: Record<string, string>;
  gates?: string;
  contracts?: string;
}

function programText(spec: ProgramSpec = {}): string {
  const tiers = spec.tiers ?? [{ number: 1, impls: ['alpha', 'beta'] }];
  const impls = tiers.flatMap((tier) => tier.impls.map((slug) => `  - {slug: ${slug}, title: ${slug}, tier: ${tier.number}, status: ${spec.statuses?.[slug] ?? 'executing'}}`));
  return [
    'title: Suite',
    'program_slug: suite',
    `state: ${spec.state ?? 'TIER_EXECUTING'}`,
    ...(spec.contracts ? [spec.contracts.trimEnd()] : []),
    'impls:',
    ...impls,
    'tiers:',
    ...tiers.map((tier) => `  - {number: ${tier.number}, impls: [${tier.impls.join(', ')}]}`),
    'tier_gates:',
    spec.gates ?? '  - {type: test, command: "test -f src/alpha.ts && test -f src/beta.ts", required: true}',
    'completion:',
    '  tiers_complete: 0',
    `  tiers_total: ${tiers.length}`,
    '  impls_complete: 0',
    `  impls_total: ${impls.length}`,
    '  total_agents: 2',
    '  total_waves: 2',
    '',
  ].join('\n');
}

/** An IMPL doc: one agent per file in wave 1; WAVE_VERIFIED with complete reports, or earlier. */
function implText(slug: string, options: { state?: string; files?: string[]; agents?: number } = {}): string {
  const state = options.state ?? 'WAVE_VERIFIED';
  const agentCount = options.agents ?? 2;
  const ids = ['A', 'B', 'C', 'D'].slice(0, agentCount);
  const files = options.files ?? ids.map((_, index) => `src/${slug}${index === 0 ? '' : index}.ts`);
  const reports = state === 'WAVE_VERIFIED' || state === 'COMPLETE';
  return [
    `title: ${slug} feature`,
    `feature_slug: ${slug}`,
    'verdict: SUITABLE',
    'test_command: "true"',
    'lint_command: "true"',
    `state: ${state}`,
    'file_ownership:',
    ...ids.map((id, index) => `  - {file: ${files[index]}, agent: ${id}, wave: 1, action: new}`),
    'waves:',
    '  - number: 1',
    '    agents:',
    ...ids.map((id, index) => `      - {id: ${id}, task: "Create ${files[index]}.", files: [${files[index]}]}`),
    'quality_gates:',
    '  level: standard',
    '  gates:',
    '    - {type: test, command: "true", required: true}',
    ...(reports ? ['completion_reports:', ...ids.map((id, index) => `  ${id}: {status: complete, commit: ${fakeCommit}, files_changed: [${files[index]}], verification: PASS}`)] : []),
    '',
  ].join('\n');
}

async function tierRepo(options: { program?: ProgramSpec; impls?: Record<string, string> } = {}): Promise<TestRepo> {
  const impls = options.impls ?? { alpha: implText('alpha'), beta: implText('beta') };
  const files: Record<string, string> = { [programRelative]: programText(options.program) };
  for (const [slug, text] of Object.entries(impls)) files[`docs/IMPL/IMPL-${slug}.yaml`] = text;
  return createTestRepo({ files });
}

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function cli(repo: TestRepo, args: string[]): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = { cwd: repo.dir, env: { ...repo.env, HOME: repo.root }, now: () => new Date('2026-03-04T10:00:00Z'), stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), readStdin: async () => '' };
  const code = await main(args, io);
  return { code, stdout, stderr };
}

function json<Value>(outcome: Outcome): Value {
  return JSON.parse(outcome.stdout) as Value;
}

const branchOf = (slug: string, tier = 1) => `polywave/program/suite/tier${tier}-impl-${slug}`;

/** Commits `files` in the IMPL's worktree (as the IMPL's wave merges would); returns the tip. */
async function workOnImpl(repo: TestRepo, worktree: string, files: Record<string, string>, message = 'work'): Promise<string> {
  for (const [file, text] of Object.entries(files)) {
    const target = path.join(worktree, file);
    await import('node:fs').then((fs) => {
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, text);
    });
  }
  const git = createGit(worktree, { env: repo.env });
  await git.run(['add', '-A']);
  return git.commit({ message, noVerify: true });
}

/** `merge → second parent` of every merge commit on main's first-parent line, oldest first. */
async function tierMerges(repo: TestRepo): Promise<Array<{ subject: string; second: string }>> {
  const out = await repo.run(['log', '--first-parent', '--merges', '--reverse', '--format=%P%x09%s', 'main']);
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [parents = '', subject = ''] = line.split('\t');
      return { subject, second: parents.split(' ')[1] ?? '' };
    });
}

function programOf(repo: TestRepo): { state: string; impls: Array<{ slug: string; status: string }> } {
  return parseYaml(repo.read(programRelative)) as { state: string; impls: Array<{ slug: string; status: string }> };
}

/** Tier 1 with both IMPLs worked on in their worktrees; returns their tips. */
async function workedTier(repo: TestRepo): Promise<{ alpha: string; beta: string }> {
  const created = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
  expect(created.code, created.stderr).toBe(0);
  const { worktrees } = json<CreateProgramWorktreesResult>(created);
  const alpha = await workOnImpl(repo, worktrees[0]!.path, { 'src/alpha.ts': "export const alpha = 'alpha';\n" });
  const beta = await workOnImpl(repo, worktrees[1]!.path, { 'src/beta.ts': "export const beta = 'beta';\n" });
  return { alpha, beta };
}

describe('create-program-worktrees (E28B/P5)', () => {
  it('creates one branch + worktree per IMPL from main, and a re-run reuses them', async () => {
    const repo = await tierRepo();
    const head = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const first = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
    expect(first.code, first.stderr).toBe(0);
    const result = json<CreateProgramWorktreesResult>(first);
    expect(result).toMatchObject({ tier_number: 1, base_branch: 'main', base_commit: head, success: true });
    expect(result.worktrees.map((worktree) => [worktree.impl_slug, worktree.branch, worktree.action])).toEqual([
      ['alpha', branchOf('alpha'), 'created'],
      ['beta', branchOf('beta'), 'created'],
    ]);
    expect(result.worktrees[0]!.path).toBe(repo.path('.claude/worktrees/polywave/program/suite/tier1-impl-alpha'));
    for (const worktree of result.worktrees) {
      expect((await createGit(worktree.path, { env: repo.env }).currentBranch())).toBe(worktree.branch);
      expect((await repo.run(['rev-parse', worktree.branch])).trim()).toBe(head);
    }
    // The worktrees are not untracked files of the main checkout.
    expect(await repo.git.status()).toEqual([]);

    const again = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
    expect(again.code).toBe(0);
    expect(json<CreateProgramWorktreesResult>(again).worktrees.map((worktree) => worktree.action)).toEqual(['reused', 'reused']);
  });

  it('an existing branch with unmerged work is kept with its commits (Go deletes merged ones, refuses unmerged ones)', async () => {
    const repo = await tierRepo();
    await repo.run(['branch', branchOf('alpha')]);
    const side = repo.sibling('side');
    await repo.git.worktreeAdd({ path: side, branch: branchOf('alpha'), base: 'HEAD', createBranch: false });
    const work = await workOnImpl(repo, side, { 'src/alpha.ts': 'export const alpha = 1;\n' });
    await repo.git.worktreeRemove(side);
    const outcome = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
    expect(outcome.code, outcome.stderr).toBe(0);
    const alpha = json<CreateProgramWorktreesResult>(outcome).worktrees[0]!;
    expect(alpha.action).toBe('attached');
    expect((await repo.run(['rev-parse', branchOf('alpha')])).trim()).toBe(work);
    expect(readFileSync(path.join(alpha.path, 'src/alpha.ts'), 'utf8')).toBe('export const alpha = 1;\n');
  });

  it('a foreign directory at a worktree path is left untouched: exit 1, the other IMPL is ready', async () => {
    const repo = await tierRepo();
    repo.write('.claude/worktrees/polywave/program/suite/tier1-impl-beta/mine.txt', 'keep me\n');
    const outcome = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
    expect(outcome.code).toBe(1);
    const result = json<CreateProgramWorktreesResult>(outcome);
    expect(result.success).toBe(false);
    expect(result.failures?.map((failure) => failure.impl_slug)).toEqual(['beta']);
    expect(result.worktrees.map((worktree) => worktree.impl_slug)).toEqual(['alpha']);
    expect(repo.read('.claude/worktrees/polywave/program/suite/tier1-impl-beta/mine.txt')).toBe('keep me\n');
  });
});

describe('a PROGRAM renamed while its tier ran (P13-17)', () => {
  // Outside attack P13-17: the IMPLs' work was on branches under the old program_slug; the loop made new, empty IMPL
  // branches beside them, ran the IMPLs again and cried "data loss". Now a failure naming the old branch; nothing is
  // made for that IMPL, the branch with the work untouched.
  it('an IMPL whose branch exists under another program_slug fails with PROGRAM_SLUG_CHANGED; nothing made for it', async () => {
    const repo = await tierRepo();
    const old = 'polywave/program/shop/tier1-impl-alpha';
    await repo.run(['branch', old]);
    const side = repo.sibling('side-old');
    await repo.git.worktreeAdd({ path: side, branch: old, base: 'HEAD', createBranch: false });
    const work = await workOnImpl(repo, side, { 'src/alpha.ts': 'export const alpha = 1;\n' });
    await repo.git.worktreeRemove(side);
    const outcome = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
    expect(outcome.code).toBe(1);
    const result = json<CreateProgramWorktreesResult>(outcome);
    expect(result.failures?.map((failure) => failure.impl_slug)).toEqual(['alpha']);
    expect(result.failures![0]!.error).toMatch(/^PROGRAM_SLUG_CHANGED: alpha's IMPL branch is polywave\/program\/shop\/tier1-impl-alpha — made under program_slug "shop", not "suite" .*set program_slug back to "shop"/);
    expect(result.worktrees.map((worktree) => worktree.impl_slug)).toEqual(['beta']);
    expect(await repo.run(['branch', '--list', branchOf('alpha')])).toBe('');
    expect((await repo.run(['rev-parse', old])).trim()).toBe(work);
  });
});

describe('bad input: a coded one-line error, exit 2, nothing changed', () => {
  const cases: Array<[string, (repo: TestRepo) => string[], RegExp]> = [
    ['unknown tier (create-program-worktrees)', () => ['create-program-worktrees', programRelative, '--tier', '7'], /^polywave: error\[X001_INVALID_INPUT\]: tier 7 not found/m],
    ['unknown tier (finalize-tier)', () => ['finalize-tier', programRelative, '--tier', '9'], /X001_INVALID_INPUT/],
    ['unknown tier (tier-gate)', () => ['tier-gate', programRelative, '--tier', '3'], /X001_INVALID_INPUT/],
    ['unknown tier (prepare-tier)', () => ['prepare-tier', programRelative, '--tier', '3'], /X001_INVALID_INPUT/],
    ['missing program', () => ['finalize-tier', 'docs/PROGRAM/PROGRAM-nope.yaml', '--tier', '1'], /N005_IMPL_NOT_FOUND/],
    ['missing --tier', () => ['tier-gate', programRelative], /--tier/],
    ['IMPL branch missing', () => ['finalize-tier', programRelative, '--tier', '1'], /^polywave: error\[G003_COMMIT_MISSING\]: IMPL branch missing for alpha/m],
    ['not a git repository', (repo) => ['tier-gate', repo.path(programRelative), '--tier', '1', '--repo-dir', repo.root], /D011_REPO_ROOT_INVALID/],
  ];
  it.each(cases)('%s', async (_name, args, expected) => {
    const repo = await tierRepo();
    const before = { head: await repo.run(['rev-parse', 'HEAD']), program: repo.read(programRelative), branches: await repo.run(['branch', '--list']) };
    const outcome = await cli(repo, args(repo));
    expect(outcome.code, outcome.stderr).toBe(2);
    expect(outcome.stdout).toBe('');
    expect(outcome.stderr).toMatch(expected);
    expect(outcome.stderr.trim().split('\n')).toHaveLength(1);
    expect(await repo.run(['rev-parse', 'HEAD'])).toBe(before.head);
    expect(repo.read(programRelative)).toBe(before.program);
    expect(await repo.run(['branch', '--list'])).toBe(before.branches);
    expect(await repo.git.status()).toEqual([]);
  });
});

describe('finalize-tier (E28B merges, E29 gate, P5)', () => {
  it('two IMPLs end to end: --no-ff merges on main in tier order, tier gate, IMPLs closed and complete, worktrees and branches removed; a re-run changes nothing', async () => {
    const repo = await tierRepo();
    const tips = await workedTier(repo);
    // main moves on meanwhile (P5: the IMPL branches do not see it, the merge brings both together).
    repo.write('docs/notes.md', 'main moved\n');
    await repo.commitAll('main moves');
    const before = (await repo.run(['rev-parse', 'HEAD'])).trim();
    // Outside attack X11 #2: beta's worktree half-removed (its .git file gone: still registered, "prunable"), as a
    // run killed inside the cleanup leaves it — `git worktree remove` refuses it; the cleanup must still finish.
    const betaWorktree = (await repo.git.worktreeList()).find((entry) => entry.branch === branchOf('beta'))!.path;
    rmSync(path.join(betaWorktree, '.git'));

    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1']);
    expect(outcome.code, outcome.stdout.slice(0, 3000)).toBe(0);
    const result = json<FinalizeTierResult>(outcome);
    expect(existsSync(betaWorktree)).toBe(false);
    expect(result).toMatchObject({ tier_number: 1, success: true, state_advanced: true, merged_count: 2, target_branch: 'main', target_before: before, impls_closed: ['alpha', 'beta'], impls_skipped: [] });
    expect(Object.keys(result.merge_results)).toEqual(['alpha', 'beta']);
    expect(result.merge_results.alpha!.merges[0]).toMatchObject({ agent: 'alpha', status: 'merged', success: true, tip: tips.alpha });
    expect(result.tier_gate_result).toMatchObject({ passed: true, all_impls_done: true });
    expect(result.tier_gate_result!.gate_results[0]).toMatchObject({ command: 'test -f src/alpha.ts && test -f src/beta.ts', passed: true, exit_code: 0 });

    // History: two --no-ff merges, alpha then beta, then one commit of the closes and the PROGRAM commit.
    expect(await tierMerges(repo)).toEqual([
      { subject: `Merge program tier 1 impl alpha: ${branchOf('alpha')}`, second: tips.alpha },
      { subject: `Merge program tier 1 impl beta: ${branchOf('beta')}`, second: tips.beta },
    ]);
    const subjects = (await repo.run(['log', '--first-parent', '--format=%s', `${before}..main`])).trim().split('\n').reverse();
    expect(subjects).toEqual([
      `Merge program tier 1 impl alpha: ${branchOf('alpha')}`,
      `Merge program tier 1 impl beta: ${branchOf('beta')}`,
      'chore: close-impl alpha, beta [polywave:complete]',
      'chore: finalize tier 1',
    ]);
    // The one close commit holds both archives, both deletions and CONTEXT.md.
    expect(result.close_commit).toMatch(/^[0-9a-f]{40}$/);
    expect((await repo.run(['show', '--name-status', '--no-renames', '--format=', result.close_commit!])).trim().split('\n').sort()).toEqual(['A\tdocs/CONTEXT.md', 'A\tdocs/IMPL/complete/IMPL-alpha.yaml', 'A\tdocs/IMPL/complete/IMPL-beta.yaml', 'D\tdocs/IMPL/IMPL-alpha.yaml', 'D\tdocs/IMPL/IMPL-beta.yaml']);
    expect(repo.read('src/alpha.ts')).toBe("export const alpha = 'alpha';\n");
    expect(repo.read('src/beta.ts')).toBe("export const beta = 'beta';\n");
    expect(existsSync(repo.path('docs/IMPL/complete/IMPL-alpha.yaml'))).toBe(true);
    expect(existsSync(repo.path('docs/IMPL/IMPL-alpha.yaml'))).toBe(false);
    const program = programOf(repo);
    expect(program.impls.map((impl) => impl.status)).toEqual(['complete', 'complete']);
    expect(program.state).toBe('TIER_VERIFIED');
    expect(await repo.git.status()).toEqual([]);
    // Merged and clean: worktrees removed, branches deleted (branch -d).
    expect(result.cleanup.map((item) => [item.impl_slug, item.worktree_removed, item.branch_deleted])).toEqual([
      ['alpha', true, true],
      ['beta', true, true],
    ]);
    expect(await repo.git.listBranches('polywave/')).toEqual([]);
    expect(await repo.git.worktreeList()).toHaveLength(1);

    const after = (await repo.run(['rev-parse', 'HEAD'])).trim();
    const rerun = await cli(repo, ['finalize-tier', programRelative, '--tier', '1']);
    expect(rerun.code, rerun.stdout.slice(0, 3000)).toBe(0);
    const second = json<FinalizeTierResult>(rerun);
    expect(second).toMatchObject({ success: true, merged_count: 0, impls_closed: [], impls_skipped: ['alpha', 'beta'], state_advanced: true, manifest_commit: null });
    expect(second.merge_results.alpha!.merges[0]).toMatchObject({ status: 'already-merged', tip: tips.alpha });
    expect((await repo.run(['rev-parse', 'HEAD'])).trim()).toBe(after);
  });

  it('the tier\'s close commit refused (a required clean filter fails on the archive): exit 1, the docs marked and archived but not committed; the re-run commits both closes once', async () => {
    const repo = await tierRepo();
    await workedTier(repo);
    // polywave's git runs no repository hook (X25-03/04), so a pre-commit hook cannot refuse it: a required clean
    // filter that fails on the archived docs (which the tier's merges never touch) does.
    await repo.run(['config', 'filter.broken.clean', 'false']);
    await repo.run(['config', 'filter.broken.required', 'true']);
    writeFileSync(repo.path('.git/info/attributes'), 'docs/IMPL/complete/* filter=broken\n');
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(outcome.code, outcome.stdout.slice(0, 2000)).toBe(1);
    const result = json<FinalizeTierResult>(outcome);
    expect(result.success).toBe(false);
    expect(result.errors?.[0]?.message).toMatch(/commit the closed IMPL docs \(alpha, beta\).*re-run finalize-tier/);
    expect(existsSync(repo.path('docs/IMPL/complete/IMPL-alpha.yaml'))).toBe(true);
    expect((await repo.run(['status', '--porcelain', '--', 'docs/IMPL'])).trim()).not.toBe('');
    rmSync(repo.path('.git/info/attributes'));
    const rerun = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(rerun.code, rerun.stdout.slice(0, 2000)).toBe(0);
    expect(json<FinalizeTierResult>(rerun)).toMatchObject({ success: true, merged_count: 0, impls_closed: [], impls_skipped: ['alpha', 'beta'] });
    expect(json<FinalizeTierResult>(rerun).close_commit).toMatch(/^[0-9a-f]{40}$/);
    const subjects = (await repo.run(['log', '--first-parent', '--format=%s', 'main'])).trim().split('\n');
    expect(subjects.filter((subject) => subject.includes('close-impl'))).toEqual(['chore: close-impl alpha, beta [polywave:complete]']);
    expect(await repo.git.status()).toEqual([]);
  });

  it('a failing tier gate: exit 1, nothing marked complete, IMPL docs not closed, branches kept; the fixed re-run does not merge again', async () => {
    const repo = await tierRepo({ program: { gates: '  - {type: test, command: "test -f gate-ok", required: true}' } });
    const tips = await workedTier(repo);
    const programBefore = repo.read(programRelative);
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(outcome.code).toBe(1);
    const result = json<FinalizeTierResult>(outcome);
    expect(result.success).toBe(false);
    expect(result.errors?.[0]?.code).toBe('N016_TIER_GATE_FAILED');
    expect(result.tier_gate_result).toMatchObject({ passed: false, all_impls_done: true });
    expect(result.state_advanced).toBe(false);
    expect(repo.read(programRelative)).toBe(programBefore);
    expect(existsSync(repo.path('docs/IMPL/IMPL-alpha.yaml'))).toBe(true);
    expect(parseYaml(repo.read('docs/IMPL/IMPL-alpha.yaml'))).toMatchObject({ state: 'WAVE_VERIFIED' });
    expect((await repo.git.listBranches('polywave/program/')).map((branch) => branch.name)).toEqual([branchOf('alpha'), branchOf('beta')]);
    // The merges did land (the gate verifies the merged main line).
    expect((await tierMerges(repo)).map((merge) => merge.second)).toEqual([tips.alpha, tips.beta]);

    repo.write('gate-ok', 'fixed\n');
    await repo.commitAll('fix the tier');
    const fixed = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(fixed.code, fixed.stdout.slice(0, 2000)).toBe(0);
    expect(json<FinalizeTierResult>(fixed)).toMatchObject({ success: true, merged_count: 0, impls_closed: ['alpha', 'beta'] });
    expect((await tierMerges(repo)).map((merge) => merge.second)).toEqual([tips.alpha, tips.beta]);
    expect(programOf(repo).impls.map((impl) => impl.status)).toEqual(['complete', 'complete']);
  });

  it('an unfinished IMPL stops it before anything is merged (N039, exit 1)', async () => {
    const repo = await tierRepo({ impls: { alpha: implText('alpha'), beta: implText('beta', { state: 'WAVE_EXECUTING' }) } });
    await workedTier(repo);
    const head = await repo.run(['rev-parse', 'HEAD']);
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(outcome.code).toBe(1);
    const result = json<FinalizeTierResult>(outcome);
    expect(result.errors?.[0]?.code).toBe('N039_VERIFY_TIERS_INCOMPLETE');
    expect(result.errors?.[0]?.message).toMatch(/beta/);
    expect(await repo.run(['rev-parse', 'HEAD'])).toBe(head);
  });

  it('outside attack X23-05: an IMPL branch that changes the PROGRAM manifest or adds a PROGRAM is refused before anything merges (N096, exit 1), main unchanged', async () => {
    for (const [label, file, text] of [
      ['edit', programRelative, null],
      ['new', 'docs/PROGRAM/PROGRAM-next.yaml', 'title: next\nprogram_slug: next\nstate: REVIEWED\n# approved by nobody\n'],
      ['legacy location (X24-04)', 'docs/PROGRAM-later.yaml', 'title: later\nprogram_slug: later\nstate: REVIEWED\n# approved by nobody\n'],
    ] as const) {
      const repo = await tierRepo();
      const created = await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']);
      const { worktrees } = json<CreateProgramWorktreesResult>(created);
      await workOnImpl(repo, worktrees[0]!.path, { 'src/alpha.ts': "export const alpha = 'alpha';\n" });
      const programText = readFileSync(path.join(worktrees[1]!.path, programRelative), 'utf8');
      const hostile = text ?? programText.replace(/command: .*/g, 'command: node -e 0');
      await workOnImpl(repo, worktrees[1]!.path, { 'src/beta.ts': "export const beta = 'beta';\n", [file]: hostile === programText ? `${programText}# edited by an agent\n` : hostile });
      const head = await repo.run(['rev-parse', 'HEAD']);
      const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
      expect(outcome.code, label).toBe(1);
      const result = json<FinalizeTierResult>(outcome);
      expect(result.errors?.[0]?.code, label).toBe('N096_PROGRAM_MANIFEST_CHANGED_BY_IMPL');
      expect(result.errors?.[0]?.message).toContain(`beta (${branchOf('beta')}: ${file})`);
      expect(result.errors?.[0]?.message).not.toContain('alpha (');
      expect(result.merged_count).toBe(0);
      expect(await repo.run(['rev-parse', 'HEAD']), label).toBe(head);
      expect(existsSync(repo.path('docs/PROGRAM/PROGRAM-next.yaml'))).toBe(false);
      expect(existsSync(repo.path('docs/PROGRAM-later.yaml'))).toBe(false);
    }
  });

  it('never removes an IMPL worktree holding uncommitted work (nor its branch)', async () => {
    const repo = await tierRepo();
    await workedTier(repo);
    const betaWorktree = repo.path('.claude/worktrees/polywave/program/suite/tier1-impl-beta');
    writeFileSync(path.join(betaWorktree, 'notes.txt'), 'unsaved thoughts\n');
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(outcome.code, outcome.stdout.slice(0, 2000)).toBe(0);
    const cleanup = json<FinalizeTierResult>(outcome).cleanup;
    expect(cleanup.find((item) => item.impl_slug === 'alpha')).toMatchObject({ worktree_removed: true, branch_deleted: true });
    expect(cleanup.find((item) => item.impl_slug === 'beta')).toMatchObject({ worktree_removed: false, branch_deleted: false });
    expect(readFileSync(path.join(betaWorktree, 'notes.txt'), 'utf8')).toBe('unsaved thoughts\n');
    expect((await repo.git.listBranches('polywave/program/')).map((branch) => branch.name)).toEqual([branchOf('beta')]);
  });

  it('a merge conflict between IMPLs aborts that merge: main stays as before it, exit 1, a re-run after the fix merges the rest once', async () => {
    const repo = await tierRepo();
    const created = json<CreateProgramWorktreesResult>(await cli(repo, ['create-program-worktrees', programRelative, '--tier', '1']));
    const alphaTip = await workOnImpl(repo, created.worktrees[0]!.path, { 'src/alpha.ts': 'a\n', 'shared.txt': 'alpha\n' });
    await workOnImpl(repo, created.worktrees[1]!.path, { 'src/beta.ts': 'b\n', 'shared.txt': 'beta\n' });
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(outcome.code).toBe(1);
    const result = json<FinalizeTierResult>(outcome);
    expect(result.errors?.[0]?.code).toBe('G002_MERGE_CONFLICT');
    expect(result.merge_results.beta!.merges[0]).toMatchObject({ status: 'conflict', conflicted_paths: ['shared.txt'] });
    const afterAlpha = (await tierMerges(repo)).map((merge) => merge.second);
    expect(afterAlpha).toEqual([alphaTip]);
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBeUndefined();
    expect(await repo.git.status()).toEqual([]);

    // Resolve on the IMPL branch (take alpha's line), then finish.
    const betaGit = createGit(created.worktrees[1]!.path, { env: repo.env });
    await betaGit.run(['merge', '--no-edit', '-q', 'main'], { allowExitCodes: [1] });
    writeFileSync(path.join(created.worktrees[1]!.path, 'shared.txt'), 'alpha\n');
    await betaGit.run(['add', 'shared.txt']);
    await betaGit.commit({ message: 'resolve', noVerify: true });
    const rerun = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(rerun.code, rerun.stdout.slice(0, 2000)).toBe(0);
    expect(json<FinalizeTierResult>(rerun).merged_count).toBe(1);
    expect((await tierMerges(repo)).length).toBe(2);
  });

  it('an interrupted merge left in the main checkout (MERGE_HEAD of an IMPL tip) is aborted and redone once', async () => {
    const repo = await tierRepo();
    const tips = await workedTier(repo);
    await repo.run(['merge', '--no-ff', '--no-commit', tips.alpha]);
    expect(await repo.git.tryRevParse('MERGE_HEAD')).toBe(tips.alpha);
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--json-only']);
    expect(outcome.code, outcome.stdout.slice(0, 2000)).toBe(0);
    expect(json<FinalizeTierResult>(outcome).warnings.join(' ')).toMatch(/interrupted merge/);
    expect((await tierMerges(repo)).map((merge) => merge.second)).toEqual([tips.alpha, tips.beta]);
  });

  it('--auto: freezes the tier contracts (E30) and advances the program to tier 2 (E33), committed', async () => {
    const contracts = ['program_contracts:', '  - {name: Alpha, definition: "export const alpha: string", location: src/alpha.ts, freeze_at: "Tier 1 completion"}'].join('\n');
    const repo = await tierRepo({ program: { contracts, tiers: [{ number: 1, impls: ['alpha', 'beta'] }, { number: 2, impls: ['gamma'] }], statuses: { gamma: 'pending' } } });
    await workedTier(repo);
    const outcome = await cli(repo, ['finalize-tier', programRelative, '--tier', '1', '--auto', '--json-only']);
    expect(outcome.code, outcome.stdout.slice(0, 3000)).toBe(0);
    const result = json<FinalizeTierResult>(outcome);
    expect(result.advance).toMatchObject({ tier_number: 1, advanced_to_next: true, next_tier: 2, program_complete: false, requires_review: false });
    expect(result.advance?.freeze_result).toMatchObject({ success: true });
    const program = parseYaml(repo.read(programRelative)) as { state: string; program_contracts: Array<{ frozen_commit?: string }> };
    expect(program.state).toBe('TIER_EXECUTING');
    expect(program.program_contracts[0]?.frozen_commit).toMatch(/^[0-9a-f]{40}$/);
    expect(await repo.git.status()).toEqual([]);
    expect((await repo.run(['log', '-1', '--format=%s'])).trim()).toBe('chore: advance program suite to tier 2');
  });
});

describe('tier-gate (E29/P3)', () => {
  it('the PROGRAM status is cross-checked with the IMPL docs: a stale "complete" with a doc still in a wave is not done; gates do not run', async () => {
    const repo = await tierRepo({ program: { statuses: { alpha: 'complete', beta: 'complete' } }, impls: { alpha: implText('alpha', { state: 'COMPLETE' }), beta: implText('beta', { state: 'WAVE_EXECUTING' }) } });
    const outcome = await cli(repo, ['tier-gate', programRelative, '--tier', '1']);
    expect(outcome.code).toBe(1);
    const result = json<TierGateResult>(outcome);
    expect(result).toMatchObject({ tier_number: 1, passed: false, all_impls_done: false, gate_results: [] });
    expect(result.impl_statuses).toEqual([
      { slug: 'alpha', status: 'complete', manifest_status: 'complete', disk_state: 'COMPLETE' },
      { slug: 'beta', status: 'executing', manifest_status: 'complete', disk_state: 'WAVE_EXECUTING' },
    ]);
  });

  it('all complete: required gate failure fails the tier, an optional one is only reported', async () => {
    const gates = ['  - {type: build, command: "exit 0", required: true}', '  - {type: lint, command: "exit 3", required: false}'].join('\n');
    const repo = await tierRepo({ program: { gates }, impls: { alpha: implText('alpha', { state: 'COMPLETE' }), beta: implText('beta', { state: 'COMPLETE' }) } });
    const passed = await cli(repo, ['tier-gate', programRelative, '--tier', '1']);
    expect(passed.code, passed.stdout).toBe(0);
    const result = json<TierGateResult>(passed);
    expect(result).toMatchObject({ passed: true, all_impls_done: true });
    expect(result.gate_results.map((gate) => [gate.type, gate.passed, gate.exit_code, gate.required])).toEqual([
      ['build', true, 0, true],
      ['lint', false, 3, false],
    ]);

    repo.write(programRelative, programText({ gates: '  - {type: test, command: "echo broken >&2; exit 1", required: true}' }));
    const failed = await cli(repo, ['tier-gate', programRelative, '--tier', '1']);
    expect(failed.code).toBe(1);
    const failure = json<TierGateResult>(failed);
    expect(failure.passed).toBe(false);
    expect(failure.gate_results[0]).toMatchObject({ passed: false, exit_code: 1 });
    expect(failure.gate_results[0]!.stdout).toContain('broken');
    expect(failed.stderr).toMatch(/required tier gate/);
  });
});

describe('prepare-tier (P1, E16, E37, E28B)', () => {
  it('valid, disjoint IMPLs: branches and worktrees created', async () => {
    const repo = await tierRepo({ impls: { alpha: implText('alpha', { state: 'REVIEWED' }), beta: implText('beta', { state: 'REVIEWED' }) } });
    const outcome = await cli(repo, ['prepare-tier', programRelative, '--tier', '1']);
    expect(outcome.code, outcome.stdout).toBe(0);
    const result = json<PrepareTierResult>(outcome);
    expect(result).toMatchObject({ tier: 1, conflict_check: { conflicts: [], disjoint: true }, success: true });
    expect(result.validations.map((validation) => [validation.impl_slug, validation.valid, validation.critic])).toEqual([
      ['alpha', true, 'not-required'],
      ['beta', true, 'not-required'],
    ]);
    expect(result.branches.map((branch) => branch.branch)).toEqual([branchOf('alpha'), branchOf('beta')]);
  });

  it('--run-prepare-wave: each IMPL\'s wave 1 is prepared with its IMPL branch as the merge target (P5): the agents start from the IMPL branch, not main', async () => {
    const repo = await tierRepo({ impls: { alpha: implText('alpha', { state: 'REVIEWED' }), beta: implText('beta', { state: 'REVIEWED' }) } });
    const outcome = await cli(repo, ['prepare-tier', programRelative, '--tier', '1', '--run-prepare-wave', '--wave', '1']);
    expect(outcome.code, outcome.stdout.slice(0, 4000)).toBe(0);
    const result = json<PrepareTierResult>(outcome);
    expect(result.prepare_wave_results?.map((entry) => [entry.impl_slug, entry.success, entry.merge_target])).toEqual([
      ['alpha', true, branchOf('alpha')],
      ['beta', true, branchOf('beta')],
    ]);
    for (const slug of ['alpha', 'beta']) {
      const implTip = (await repo.run(['rev-parse', branchOf(slug)])).trim();
      const entry = result.prepare_wave_results!.find((item) => item.impl_slug === slug)!;
      expect(entry.worktrees.map((worktree) => worktree.branch)).toEqual([`polywave/${slug}/wave1-agent-A`, `polywave/${slug}/wave1-agent-B`]);
      for (const worktree of entry.worktrees) expect((await repo.run(['rev-parse', worktree.branch])).trim()).toBe(implTip);
    }
  });

  it('P1: two IMPLs of the tier own one file → exit 1, no branch created', async () => {
    const repo = await tierRepo({ impls: { alpha: implText('alpha', { state: 'REVIEWED', files: ['src/shared.ts', 'src/alpha1.ts'] }), beta: implText('beta', { state: 'REVIEWED', files: ['src/shared.ts', 'src/beta1.ts'] }) } });
    const outcome = await cli(repo, ['prepare-tier', programRelative, '--tier', '1']);
    expect(outcome.code).toBe(1);
    const result = json<PrepareTierResult>(outcome);
    expect(result.conflict_check).toEqual({ conflicts: [{ file: 'src/shared.ts', impls: ['alpha', 'beta'] }], disjoint: false });
    expect(result.branches).toEqual([]);
    expect(await repo.git.listBranches('polywave/')).toEqual([]);
  });

  it('E37: a 3-agent IMPL without a critic report blocks; --skip-critic writes a synthetic PASS and proceeds; a missing IMPL doc is a validation failure', async () => {
    const repo = await tierRepo({ impls: { alpha: implText('alpha', { state: 'REVIEWED', agents: 3 }), beta: implText('beta', { state: 'REVIEWED' }) } });
    const blocked = await cli(repo, ['prepare-tier', programRelative, '--tier', '1']);
    expect(blocked.code).toBe(1);
    const first = json<PrepareTierResult>(blocked);
    expect(first.validations[0]).toMatchObject({ impl_slug: 'alpha', valid: false, critic: 'blocked' });
    expect(first.validations[0]!.errors?.[0]).toMatch(/^P009_CRITIC_GATE_FAILED: E37/);
    expect(await repo.git.listBranches('polywave/')).toEqual([]);

    const skipped = await cli(repo, ['prepare-tier', programRelative, '--tier', '1', '--skip-critic']);
    expect(skipped.code, skipped.stdout).toBe(0);
    expect(json<PrepareTierResult>(skipped).validations[0]).toMatchObject({ valid: true, critic: 'skipped' });
    expect(parseYaml(repo.read('docs/IMPL/IMPL-alpha.yaml'))).toMatchObject({ critic_report: { verdict: 'PASS' } });

    repo.remove('docs/IMPL/IMPL-beta.yaml');
    const missing = await cli(repo, ['prepare-tier', programRelative, '--tier', '1']);
    expect(missing.code).toBe(1);
    expect(json<PrepareTierResult>(missing).validations[1]).toMatchObject({ impl_slug: 'beta', valid: false, impl_path: '' });
  });
});

describe('finalize-tier crash safety (the real CLI SIGKILLed during the merges, then re-run)', () => {
  const env = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' };

  // The tree a run that is never killed ends with (computed once).
  let referenceTree: Promise<string> | undefined;
  const reference = (): Promise<string> => (referenceTree ??= uninterrupted());
  async function uninterrupted(): Promise<string> {
    const repo = await tierRepo();
    await workedTier(repo);
    const run = await runCli(['finalize-tier', programRelative, '--tier', '1', '--json-only'], { cwd: repo.dir, env, timeoutMs: 90_000 });
    expect(run.code, run.stdout.slice(0, 2000) + run.stderr).toBe(0);
    return (await repo.run(['rev-parse', 'main^{tree}'])).trim();
  }

  // Two of the four crash points per run (a restart each), rotating by day: test/support/rotation.ts.
  const crashPoints = rotatingSlice(['1:merged', '1', '2:merged', '2'], 2);
  it.each(crashPoints.items)(`killed at POLYWAVE_TEST_CRASH_AFTER_TIER_MERGE=%s [crash points: ${crashPoints.label}]: the re-run ends with the same tree, each IMPL merged exactly once`, async (crashAt) => {
    const expectedTree = await reference();
    const repo = await tierRepo();
    const tips = await workedTier(repo);
    const count = Number(crashAt.split(':')[0]);

    const crashed = await runCli(['finalize-tier', programRelative, '--tier', '1', '--json-only'], { cwd: repo.dir, env: { ...env, POLYWAVE_TEST_CRASH_AFTER_TIER_MERGE: crashAt }, timeoutMs: 90_000 });
    expect(crashed.code, `expected a SIGKILL, got exit ${crashed.code}\n${crashed.stderr}`).toBeNull();
    expect(crashed.stdout).toBe('');
    expect((await tierMerges(repo)).map((merge) => merge.second)).toEqual([tips.alpha, tips.beta].slice(0, count));
    expect(programOf(repo).impls.map((impl) => impl.status)).toEqual(['executing', 'executing']);

    const rerun = await runCli(['finalize-tier', programRelative, '--tier', '1', '--json-only'], { cwd: repo.dir, env, timeoutMs: 90_000 });
    expect(rerun.code, rerun.stdout.slice(0, 3000) + rerun.stderr).toBe(0);
    const result = JSON.parse(rerun.stdout) as FinalizeTierResult;
    expect(result.merged_count).toBe(2 - count);
    expect(Object.values(result.merge_results).map((entry) => entry.merges[0]!.status)).toEqual(['merged', 'merged'].map((status, index) => (index < count ? 'already-merged' : status)));

    const merges = await tierMerges(repo);
    expect(merges.map((merge) => merge.second)).toEqual([tips.alpha, tips.beta]);
    expect((await repo.run(['rev-parse', 'main^{tree}'])).trim()).toBe(expectedTree);
    expect(programOf(repo).impls.map((impl) => impl.status)).toEqual(['complete', 'complete']);
    const commonDir = path.resolve(repo.dir, (await repo.run(['rev-parse', '--git-common-dir'])).trim());
    const record = JSON.parse(readFileSync(path.join(commonDir, 'polywave', 'tier-merge-suite-tier1.json'), 'utf8')) as { merges: Array<{ impl_slug: string; tip: string; merge_sha: string }> };
    expect(record.merges.map((entry) => [entry.impl_slug, entry.tip]).sort()).toEqual([
      ['alpha', tips.alpha],
      ['beta', tips.beta],
    ]);
    for (const entry of record.merges) expect(entry.merge_sha).toMatch(/^[0-9a-f]{40}$/);
  }, 120_000);
});
