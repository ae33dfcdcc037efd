import { programBranchName, programWorktreePath } from '../../protocol/names.js';
import { ensureInfoExclude, ensureWorktrees, type WorktreeAction } from '../worktrees.js';
import { loadProgramTier, openMainCheckout, type LoadedTier, type MainCheckout, type TierOptions } from './tier-common.js';

/** One IMPL's long-lived branch and worktree (Go `ProgramWorktreeInfo` keys plus ours). */
export interface ProgramWorktree {
  impl_slug: string;
  path: string;
  branch: string;
  /** created: new branch + worktree · attached: the branch existed, it got its worktree · reused: both existed. */
  action: WorktreeAction;
  /** Why an existing branch was handled specially (fast-forwarded, kept with its own base). */
  note?: string;
}

/** An IMPL whose branch/worktree could not be made ready (nothing there was touched). */
export interface ProgramWorktreeFailure {
  impl_slug: string;
  path: string;
  branch: string;
  error: string;
}

/** The `create-program-worktrees` JSON (Go `{tier_number, worktrees[]}` plus ours). */
export interface CreateProgramWorktreesResult {
  tier_number: number;
  worktrees: ProgramWorktree[];
  /** The main-line branch and commit new IMPL branches start from. */
  base_branch: string;
  base_commit: string;
  failures?: ProgramWorktreeFailure[];
  success: boolean;
}

export interface CreateProgramWorktreesOptions extends TierOptions {
  signal?: AbortSignal;
}

/**
 * E28B/P5: for every IMPL of the tier, the long-lived IMPL branch
 * `polywave/program/<program>/tier<N>-impl-<impl>` starting at the main line's HEAD and its worktree
 * `.claude/worktrees/polywave/program/<program>/tier<N>-impl-<impl>` — the place where the IMPL's
 * wave merges land (prepare-wave/finalize-wave `mergeTarget`).
 *
 * Idempotent and never destructive: an existing worktree on the branch is reused as it is; an
 * existing branch keeps its commits and gets its worktree attached (a branch with no commits of
 * its own that lags behind HEAD is fast-forwarded); nothing is ever deleted (Go deletes a merged
 * branch and re-creates it, and refuses an unmerged one). Anything unexpected at a path (another
 * branch, a foreign directory, the branch checked out elsewhere) is a failure for that IMPL and
 * is left untouched. Bad input (manifest, tier, repository, HEAD on a Polywave branch) throws a
 * coded PolywaveError (exit 2) before anything is changed.
 */
export async function createProgramWorktrees(options: CreateProgramWorktreesOptions): Promise<CreateProgramWorktreesResult> {
  const loaded = await loadProgramTier(options.programPath, options.tier);
  const checkout = await openMainCheckout(options.repoRoot, options.env);
  return ensureProgramWorktrees(loaded, checkout, options);
}

/** The IMPL branch and worktree of each IMPL of a loaded tier (used by prepare-tier too). */
export function programTargets(loaded: LoadedTier, root: string): Array<{ agent: string; path: string; branch: string }> {
  return loaded.slugs.map((slug) => ({
    agent: slug,
    branch: programBranchName(loaded.programSlug, loaded.tier, slug),
    path: programWorktreePath(root, loaded.programSlug, loaded.tier, slug),
  }));
}

/** {@link createProgramWorktrees} for an already loaded tier and checkout. */
export async function ensureProgramWorktrees(loaded: LoadedTier, checkout: MainCheckout, options: { env?: TierOptions['env']; signal?: AbortSignal }): Promise<CreateProgramWorktreesResult> {
  const targets = programTargets(loaded, checkout.root);
  // The worktrees live inside the main checkout: keep them out of its `git status`.
  await ensureInfoExclude(checkout.git);
  const ensured = await ensureWorktrees({
    git: checkout.git,
    targets,
    base: checkout.head,
    // One at a time: a tier has a handful of IMPLs; serial adds keep git's index locks quiet.
    concurrency: 1,
    batch: false,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const result: CreateProgramWorktreesResult = {
    tier_number: loaded.tier,
    worktrees: ensured.worktrees.map((worktree) => ({
      impl_slug: worktree.agent,
      path: worktree.path,
      branch: worktree.branch,
      action: worktree.action,
      ...(worktree.note ? { note: worktree.note.replace('the wave base', `${checkout.branch}`) } : {}),
    })),
    base_branch: checkout.branch,
    base_commit: checkout.head,
    success: ensured.failures.length === 0,
  };
  if (ensured.failures.length > 0) {
    result.failures = ensured.failures.map((failure) => ({ impl_slug: failure.agent, path: failure.path, branch: failure.branch, error: failure.error }));
  }
  return result;
}
