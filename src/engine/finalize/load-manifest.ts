import path from 'node:path';
import { isBlocking } from '../../errors/finding.js';
import { branchName, implSlugFromPath, legacyBranchName, worktreePath } from '../../protocol/names.js';
import { validateImpl } from '../../protocol/validate-impl.js';
import { findWave, waveBaseCommit } from '../../protocol/waves.js';
import { loadImpl } from '../../store/manifest-file.js';
import { agentRepoKey, resolveRepoRoot } from '../prepare/preflight-steps.js';
import type { StepDefinition } from '../step.js';
import type { WorktreeEntry } from '../../git/git-port.js';
import { branchTips, canonicalPath, indexWorktrees } from '../worktrees.js';
import { listForDetail, short, type FinalizeAgent, type FinalizeContext, type FinalizeRepo } from './context.js';
import { startTamperProbe } from './tamper-step.js';

/**
 * Loads and validates the manifest, finds the wave and its agents, resolves each repository's
 * merge target (and the checkout where it is checked out), each agent's branch, tip and
 * worktree — one `worktree list` and one `for-each-ref` per repository — and the wave's base.
 * Then picks the mode: skip-merge (E11a), already merged (every branch gone, E9), solo (one agent
 * without branch or worktree) or the full pipeline.
 */
export const loadManifestStep: StepDefinition<FinalizeContext> = {
  name: 'load-manifest',
  async run(context) {
    // Two of the primary repository's questions do not need the manifest: asked while it parses.
    const early = { head: headProbe(context.primary), entries: context.primary.git.worktreeList() };
    early.head.catch(() => undefined);
    early.entries.catch(() => undefined);
    const loading = context.loading ?? loadImpl(context.implPath);
    context.loading = undefined;
    const { parsed, text } = await loading;
    context.parsed = parsed;
    if (text !== undefined) context.manifestText = text;
    if (!parsed.manifest) {
      const errors = parsed.findings.filter(isBlocking);
      return { status: 'failed', detail: `manifest is not usable: ${errors.map((finding) => finding.message).join('; ')}`, data: { errors } };
    }
    const manifest = parsed.manifest;
    context.manifest = manifest;
    context.slug = implSlugFromPath(context.implPath, manifest);
    context.result.slug = context.slug;
    // The tamper check's reads of the main repository (record, git's files, hooks, refs, status)
    // run while the rest of this step asks git about the wave (issue 11).
    startTamperProbe(context, context.primary);
    context.initialState = (manifest.state ?? '').trim();
    context.result.state = context.initialState;
    if (manifest.merge_state) context.result.merge_state = manifest.merge_state;
    // Report problems are this pipeline's own business (I4, I5 and E7 steps judge the reports and
    // the branches, and must be able to show the E19 decision for a blocked agent that never
    // committed): they do not stop the load.
    const blocking = [...parsed.findings, ...validateImpl({ manifest, locate: parsed.locate })].filter(isBlocking);
    const errors = blocking.filter((finding) => !(finding.field ?? '').startsWith('completion_reports'));
    const reportProblems = blocking.filter((finding) => (finding.field ?? '').startsWith('completion_reports'));
    if (errors.length > 0) {
      return {
        status: 'failed',
        detail: `manifest has ${errors.length} validation error(s): ${listForDetail(errors.map((finding) => `${finding.code}: ${finding.message}`), 5)} (run: polywave validate ${context.implPath})`,
        data: { errors },
      };
    }
    if (context.initialState === 'COMPLETE' || context.initialState === 'NOT_SUITABLE') {
      return { status: 'failed', detail: `IMPL state is ${context.initialState}: there is no wave to finalize` };
    }
    const wave = findWave(manifest, context.wave);
    if (wave === undefined) return { status: 'failed', detail: `wave ${context.wave} not found in manifest (waves: ${(manifest.waves ?? []).map((item) => item.number).join(', ') || 'none'})` };
    const rawWaves = (parsed.data as { waves?: unknown[] } | null)?.waves ?? [];
    context.waveIndex = rawWaves.findIndex((item) => (item as { number?: unknown } | null)?.number === context.wave);
    const agents = (wave.agents ?? []).filter((agent) => agent.id !== undefined && agent.id !== '');
    if (agents.length === 0) return { status: 'failed', detail: `wave ${context.wave} has no agents` };
    const numbers = (manifest.waves ?? []).map((item) => item.number ?? 0);
    context.result.final_wave = context.wave === Math.max(...numbers);

    // Repositories: the primary one, plus siblings for cross-repo agents.
    const byRoot = new Map<string, FinalizeRepo>([[context.primary.root, context.primary]]);
    const missing: string[] = [];
    const planned: Array<{ id: string; data: (typeof agents)[number]; repo: FinalizeRepo }> = [];
    for (const agent of agents) {
      const key = agentRepoKey(manifest, context.wave, agent.id!);
      const root = await resolveRepoRoot(manifest, key, context.primary.root, path.dirname(context.implPath));
      if (root === undefined) {
        missing.push(`agent ${agent.id}: repository "${key}" not found`);
        continue;
      }
      let repo = byRoot.get(root);
      if (repo === undefined) {
        const git = context.gitAt(root);
        const top = await canonicalPath(await git.topLevel());
        repo = byRoot.get(top) ?? { key, root: top, git, primary: false, targetBranch: '', targetDir: top, targetGit: git, targetTip: '' };
        byRoot.set(root, repo);
        byRoot.set(top, repo);
      }
      planned.push({ id: agent.id!, data: agent, repo });
    }
    if (missing.length > 0) return { status: 'failed', detail: missing.join('; ') };
    context.repos = [...new Set(byRoot.values())];
    context.result.cross_repo = context.repos.length > 1;

    // Per repository, four questions at once: the checked-out branch, the tips of the target and
    // of every agent branch (E5 name, else the legacy one), the worktrees, the recorded base.
    const recordedBase = waveBaseCommit(manifest, context.wave);
    for (const repo of context.repos) {
      const mine = planned.filter((item) => item.repo === repo);
      const names = mine.flatMap((item) => [branchName(context.slug, context.wave, item.id), legacyBranchName(context.wave, item.id)]);
      const requested = context.options.mergeTarget?.trim();
      const [head, tips, entries, base] = await Promise.all([
        repo === context.primary ? early.head : headProbe(repo),
        branchTips(repo.git, requested ? [...names, requested] : names),
        repo === context.primary ? early.entries : repo.git.worktreeList(),
        repo.primary && recordedBase !== undefined ? repo.git.tryRevParse(recordedBase) : Promise.resolve(undefined),
      ]);
      const [headTip, headRef = ''] = head;
      if (headTip !== undefined && headRef.startsWith('refs/heads/') && !tips.has(headRef.slice('refs/heads/'.length))) tips.set(headRef.slice('refs/heads/'.length), headTip);
      const problem = resolveTarget(context, repo, { head: headRef, tips, entries });
      if (problem !== undefined) return { status: 'failed', detail: problem };
      repo.worktrees = entries;
      const byPath = await indexWorktrees(entries);
      for (const item of mine) {
        const modern = branchName(context.slug, context.wave, item.id);
        const legacy = legacyBranchName(context.wave, item.id);
        const branch = !tips.has(modern) && tips.has(legacy) ? legacy : modern;
        const wanted = worktreePath(repo.root, context.slug, context.wave, item.id);
        const entry = byPath.get(await canonicalPath(wanted));
        const tip = tips.get(branch);
        const report = manifest.completion_reports?.[item.id];
        const finalizeAgent: FinalizeAgent = {
          id: item.id,
          data: item.data,
          repo,
          branch,
          worktreePath: entry?.path ?? wanted,
          worktree: entry !== undefined && entry.branch === branch && !entry.prunable,
          ...(tip ? { tip } : {}),
          ...(report ? { report } : {}),
        };
        context.agents.push(finalizeAgent);
      }
      if (base !== undefined) {
        repo.base = base;
        repo.baseSource = `waves[${context.wave}].base_commit`;
      } else {
        await resolveBase(context, repo, recordedBase);
      }
    }

    const present = context.agents.filter((agent) => agent.tip !== undefined);
    if (context.options.skipMerge) context.mode = 'skip-merge';
    else if (present.length === 0) context.mode = context.agents.length === 1 && !context.agents[0]!.worktree ? 'solo' : 'already-merged';
    else context.mode = 'full';
    context.result.mode = context.mode;
    context.result.merge_target = Object.fromEntries(context.repos.map((repo) => [repo.key, repo.targetBranch]));

    const modeText: Record<typeof context.mode, string> = {
      full: 'full pipeline',
      'skip-merge': 'skip-merge (E11a: merged by hand; post-merge steps only)',
      'already-merged': 'every agent branch is gone: checking the work is in the target (E9), then post-merge steps',
      solo: 'solo wave (one agent, no branch or worktree): checking its commit is in the target, then post-merge steps',
    };
    return {
      status: reportProblems.length > 0 ? 'warning' : 'success',
      detail: `${reportProblems.length > 0 ? `completion report problem(s): ${listForDetail(reportProblems.map((finding) => finding.message), 5)}; ` : ''}${path.basename(context.implPath)} wave ${context.wave} (${context.agents.length} agent(s)) into ${context.repos.map((repo) => `${repo.targetBranch}${context.repos.length > 1 ? ` (${path.basename(repo.root)})` : ''}`).join(', ')} at ${short(context.primary.targetTip)}; base ${short(context.primary.base)} from ${context.primary.baseSource ?? 'nowhere'}; mode: ${modeText[context.mode]}`,
      data: {
        slug: context.slug,
        state: context.initialState,
        mode: context.mode,
        repos: context.repos.map((repo) => ({ repo: repo.key, root: repo.root, target_branch: repo.targetBranch, target_dir: repo.targetDir, target_tip: repo.targetTip, base: repo.base ?? null })),
        agents: context.agents.map((agent) => ({ agent: agent.id, branch: agent.branch, tip: agent.tip ?? null, worktree: agent.worktree ? agent.worktreePath : null, report: agent.report?.status ?? null })),
      },
    };
  },
};

/** `[HEAD commit, HEAD's full ref name]` of a repository's main checkout; `[]` before its first commit. */
function headProbe(repo: FinalizeRepo): Promise<string[]> {
  return repo.git.run(['rev-parse', 'HEAD', '--symbolic-full-name', 'HEAD'], { allowExitCodes: [128] }).then((output) => (output.exitCode === 0 ? output.stdout.trim().split('\n') : []));
}

/**
 * The branch the wave merges into (the merge target, else the main checkout's branch) and the
 * checkout that has it: the main checkout, another worktree, or — when none does — a scratch
 * worktree made when a merge or build needs it (the user's checkout is never switched).
 */
function resolveTarget(context: FinalizeContext, repo: FinalizeRepo, known: { head: string; tips: Map<string, string>; entries: readonly WorktreeEntry[] }): string | undefined {
  const requested = context.options.mergeTarget?.trim();
  const current = known.head.startsWith('refs/heads/') ? known.head.slice('refs/heads/'.length) : undefined;
  let target = current;
  if (requested) {
    if (known.tips.has(requested)) target = requested;
    else if (repo.primary) return `merge target branch ${requested} does not exist in ${repo.root}`;
  }
  if (target === undefined) return `${repo.root} has a detached HEAD: check out the branch the wave merges into, or pass --merge-target`;
  repo.targetBranch = target;
  const tip = known.tips.get(target);
  if (tip === undefined) return `branch ${target} has no commits in ${repo.root}`;
  if (target === current) {
    repo.targetDir = repo.root;
    repo.targetGit = repo.git;
  } else {
    const holder = known.entries.find((entry) => entry.branch === target && !entry.prunable);
    const scratch = path.join(repo.root, '.claude', 'worktrees', 'polywave', context.slug, `target-wave${context.wave}`);
    if (holder && path.resolve(holder.path) !== path.resolve(scratch)) {
      repo.targetDir = holder.path;
      repo.targetGit = context.gitAt(holder.path);
    } else if (holder) {
      // Our own scratch checkout, left by an interrupted run: use it, remove it at the end.
      repo.targetDir = holder.path;
      repo.targetGit = context.gitAt(holder.path);
      repo.scratchTarget = holder.path;
    } else {
      repo.targetDir = '';
    }
  }
  repo.targetTip = tip;
  return undefined;
}

/**
 * The wave's base: `waves[N].base_commit` (recorded by prepare-wave) in the primary repository;
 * otherwise — and in other repositories — the merge base of every agent tip and the target as it was
 * before this wave's merges: a re-run after a block (SANDBOX_CONFIG_CHANGED, a failed verify-build)
 * finds the merges already on the target, and the plain merge base would be an agent's own tip (no
 * commits "beyond the base", no config change seen — outside attack X9 #4). Before the merges = the
 * first parent of the oldest first-parent commit of the target that no agent tip holds.
 */
async function resolveBase(context: FinalizeContext, repo: FinalizeRepo, recordedBase: string | undefined): Promise<void> {
  const recorded = repo.primary ? recordedBase : undefined;
  const tips = context.agents.filter((agent) => agent.repo === repo && agent.tip).map((agent) => agent.tip!);
  if (tips.length === 0) return;
  let target = repo.targetTip;
  const after = await repo.git.run(['rev-list', '--first-parent', repo.targetTip, ...tips.map((tip) => `^${tip}`)], { allowExitCodes: [128] });
  const oldest = after.exitCode === 0 ? after.stdout.trim().split('\n').filter((line) => line !== '').pop() : undefined;
  if (oldest !== undefined) {
    const parent = await repo.git.run(['rev-parse', '--verify', '--quiet', `${oldest}^1`], { allowExitCodes: [1, 128] });
    if (parent.exitCode === 0 && parent.stdout.trim() !== '') target = parent.stdout.trim();
  }
  const { stdout } = await repo.git.run(['merge-base', '--octopus', target, ...tips], { allowExitCodes: [1] });
  const base = stdout.trim();
  if (base !== '') {
    repo.base = base;
    repo.baseSource = recorded === undefined ? 'the merge base of the target and the agent branches (no base_commit recorded)' : `the merge base (recorded base_commit ${short(recorded)} does not exist)`;
  }
}
