import path from 'node:path';
import type { Git } from '../../git/git-port.js';
import { retryOnLockContention } from '../prepare/parallel.js';
import type { FinalizeContext, FinalizeRepo } from './context.js';

/**
 * The checkout of the merge target: where it is checked out already, or a scratch worktree on
 * the target branch (`.claude/worktrees/polywave/<slug>/target-wave<N>`), created once and
 * removed by {@link releaseTargetCheckouts}. The user's own checkout is never switched.
 */
export async function ensureTargetCheckout(context: FinalizeContext, repo: FinalizeRepo): Promise<Git> {
  if (repo.targetDir !== '') return repo.targetGit;
  const scratch = path.join(repo.root, '.claude', 'worktrees', 'polywave', context.slug, `target-wave${context.wave}`);
  await retryOnLockContention(() => repo.git.run(['worktree', 'add', '--quiet', '--', scratch, repo.targetBranch]));
  repo.scratchTarget = scratch;
  repo.targetDir = scratch;
  repo.targetGit = context.gitAt(scratch);
  return repo.targetGit;
}

/** Removes the scratch target checkouts (our own: only build outputs can live there). */
export async function releaseTargetCheckouts(context: FinalizeContext): Promise<void> {
  for (const repo of context.repos) {
    if (repo.scratchTarget === undefined) continue;
    await repo.git.worktreeRemove(repo.scratchTarget, { force: true }).catch(() => undefined);
    repo.scratchTarget = undefined;
    repo.targetDir = '';
  }
}
