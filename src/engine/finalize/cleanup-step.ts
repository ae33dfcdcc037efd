import path from 'node:path';
import { hasCommit } from '../../protocol/completion-report.js';
import { cleanupWave, type CleanupResult } from '../cleanup.js';
import { createTeardownHook } from '../prepare/worktree-setup.js';
import type { StepDefinition } from '../step.js';
import { branchesMergedInto } from './git-batch.js';
import { listForDetail, type FinalizeContext, type FinalizeRepo } from './context.js';

/** One repository's cleanup (see cleanupWave). */
async function cleanupRepo(context: FinalizeContext, repo: FinalizeRepo): Promise<CleanupResult> {
  const agents = context.agents.filter((agent) => agent.repo === repo);
  // Issue 13: the configured teardown runs in each worktree before it is removed.
  const teardown = context.dryRun
    ? undefined
    : await createTeardownHook({ root: repo.root, git: repo.git, primaryRoot: context.primary.root, ...(context.options.env ? { env: context.options.env } : {}), ...(context.options.signal ? { signal: context.options.signal } : {}) });
  return cleanupWave({
    git: repo.git,
    targetGit: repo.targetDir !== '' ? repo.targetGit : repo.git,
    targetBranch: repo.targetBranch,
    wave: context.wave,
    ...(repo.scratchTarget === undefined ? { worktreesDir: path.join(repo.root, '.claude', 'worktrees', 'polywave', context.slug) } : {}),
    agents: agents.map((agent) => ({
      agent: agent.id,
      branch: agent.branch,
      worktreePath: agent.worktreePath,
      ...(hasCommit(agent.report?.commit) ? { reportCommit: agent.report!.commit!.trim() } : {}),
    })),
    ...(repo.worktrees ? { worktrees: repo.worktrees } : {}),
    ...(context.options.signal ? { signal: context.options.signal } : {}),
    ...(context.dryRun ? { dryRun: true } : {}),
    ...(teardown ? { beforeRemove: teardown } : {}),
  });
}

/**
 * Step 6: each agent's worktree and branch go — only once the branch tip is proven reachable
 * from the target (E9). Never forced: a worktree with uncommitted changes, an unmerged branch or
 * lost work is kept and reported (with `git branch recover-<id> <sha>` where work is not in the
 * target). Advisory: the wave is verified either way.
 */
export const cleanupStep: StepDefinition<FinalizeContext> = {
  name: 'cleanup',
  advisory: true,
  async run(context) {
    const kept: string[] = [];
    let removed = 0;
    let deleted = 0;
    for (const repo of context.repos) {
      if (!context.agents.some((agent) => agent.repo === repo)) continue;
      const result = await cleanupRepo(context, repo);
      context.result.cleanup_result[repo.key] = result;
      if (result.recovery.length > 0) context.result.recovery = [...new Set([...(context.result.recovery ?? []), ...result.recovery])];
      removed += result.agents.filter((line) => line.worktree_removed).length;
      deleted += result.agents.filter((line) => line.branch_deleted).length;
      kept.push(...result.agents.filter((line) => line.kept).map((line) => `${line.agent}: ${line.kept}${line.recovery ? ` (recover: ${line.recovery})` : ''}`));
    }
    if (context.dryRun) return { status: 'skipped', detail: `dry run: ${listForDetail(kept, 10) || 'nothing to clean'}`, data: context.result.cleanup_result };
    if (kept.length > 0) {
      return { status: 'warning', detail: `removed ${removed} worktree(s), deleted ${deleted} branch(es); kept: ${listForDetail(kept, 10)}`, data: context.result.cleanup_result };
    }
    return { status: 'success', detail: `removed ${removed} worktree(s) and deleted ${deleted} branch(es), each after proving its tip is in the target (E9)`, data: context.result.cleanup_result };
  },
};

/**
 * E11a `--skip-merge`: the branches were merged by hand. Every agent branch that still exists
 * must already be in the target, or the wave would be "verified" without its work.
 */
export const verifyManualMergeStep: StepDefinition<FinalizeContext> = {
  name: 'verify-manual-merge',
  async run(context) {
    const missing: string[] = [];
    for (const repo of context.repos) {
      const present = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined);
      if (present.length === 0) continue;
      const merged = await branchesMergedInto(repo.git, `refs/heads/${repo.targetBranch}`, present.map((agent) => agent.branch));
      for (const agent of present) {
        agent.merged = merged.has(agent.branch);
        if (!agent.merged) missing.push(`${agent.branch} (${agent.tip!.slice(0, 12)})`);
      }
    }
    if (missing.length > 0) {
      return {
        status: 'failed',
        detail: `--skip-merge (E11a): not merged into the target yet: ${listForDetail(missing)} — merge them by hand first (git merge --no-ff …), or run without --skip-merge`,
        data: { not_merged: missing },
      };
    }
    return { status: 'success', detail: 'E11a: every agent branch is already in the target (merged by hand)' };
  },
};
