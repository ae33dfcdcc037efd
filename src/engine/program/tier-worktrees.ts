import { PolywaveError } from '../../errors/polywave-error.js';
import { createGit } from '../../git/git-cli.js';
import { programBranchName, programWorktreePath } from '../../protocol/names.js';
import { programStatus } from '../../protocol/program/index.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
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
  await requireTierMayStart(loaded, checkout, 'create-program-worktrees');
  return ensureProgramWorktrees(loaded, checkout, options);
}

/**
 * P3 before a tier's IMPL branches exist: every earlier tier is complete (its IMPLs, as the docs
 * on disk say — the tier gate's rule) and the PROGRAM is not COMPLETE. A branch made earlier would
 * start from a main line without the earlier tiers' merges. Throws N039 / N008 (exit 1, nothing changed).
 */
export async function requireTierMayStart(loaded: LoadedTier, checkout: MainCheckout, command: string): Promise<void> {
  if ((loaded.manifest.state ?? '').trim() === 'COMPLETE') {
    throw new PolywaveError({ code: 'N008_STATE_TRANSITION', message: `${command}: the PROGRAM is COMPLETE — no tier starts again; nothing was changed`, exitCode: 1 });
  }
  const docs = await readProgramImplDocs(checkout.root, loaded.manifest);
  const states = new Map<string, string | undefined>();
  for (const [slug, doc] of docs) states.set(slug, doc.manifest?.state);
  const earlier = programStatus(loaded.manifest, states).tier_statuses.filter((tier) => tier.number < loaded.tier && !tier.complete);
  if (earlier.length > 0) {
    const open = earlier.map((tier) => `tier ${tier.number} (${tier.impl_statuses.filter((entry) => entry.status !== 'complete').map((entry) => `${entry.slug} ${entry.status}`).join(', ')})`).join('; ');
    throw new PolywaveError({ code: 'N039_VERIFY_TIERS_INCOMPLETE', message: `${command} --tier ${loaded.tier}: P3: earlier tier(s) not complete: ${open} — finish them first (polywave program-execute); nothing was changed`, exitCode: 1 });
  }
}

/** Merge commits of `tier`'s IMPL branches on the main line (finalize-tier's subjects). */
async function tierMerges(checkout: MainCheckout, tier: number): Promise<string[]> {
  const log = await checkout.git.run(['log', '--first-parent', '--format=%H%x00%s', '-n', '2000', 'HEAD']);
  const prefix = `Merge program tier ${tier} impl `;
  return log.stdout.split('\n').flatMap((line) => {
    const [commit = '', subject = ''] = line.split('\0');
    return subject.startsWith(prefix) ? [commit] : [];
  });
}

/**
 * P3 for an IMPL branch that already exists: it must contain the previous tier's merges. One made
 * before them (create-program-worktrees run too early, an older version) with no commits of its
 * own holds no work: it is moved forward to the main line (its worktree too, when clean). One
 * that holds work is never touched: a failure coded P3_STALE_IMPL_BRANCH.
 */
async function refreshStaleBranches(loaded: LoadedTier, checkout: MainCheckout, targets: ReturnType<typeof programTargets>, env: TierOptions['env']): Promise<{ notes: Map<string, string>; failures: ProgramWorktreeFailure[] }> {
  const notes = new Map<string, string>();
  const failures: ProgramWorktreeFailure[] = [];
  const previous = loaded.manifest.tiers.map((tier) => tier.number ?? 0).filter((number) => number > 0 && number < loaded.tier).sort((left, right) => right - left)[0];
  if (previous === undefined) return { notes, failures };
  const merges = await tierMerges(checkout, previous);
  if (merges.length === 0) return { notes, failures };
  let entries: Awaited<ReturnType<typeof checkout.git.worktreeList>> | undefined;
  for (const target of targets) {
    const tip = await checkout.git.tryRevParse(`refs/heads/${target.branch}`);
    if (tip === undefined) continue;
    const missing: string[] = [];
    for (const merge of merges) if (!(await checkout.git.isAncestor(merge, tip))) missing.push(merge);
    if (missing.length === 0) continue;
    const fail = (error: string) => failures.push({ impl_slug: target.agent, path: target.path, branch: target.branch, error: `P3_STALE_IMPL_BRANCH: ${target.branch} (${tip.slice(0, 12)}) does not contain tier ${previous}'s merges (${missing.map((commit) => commit.slice(0, 12)).join(', ')}): ${error}; nothing was changed` });
    if (!(await checkout.git.isAncestor(tip, checkout.head))) {
      fail(`it holds commits of its own, made on a main line without tier ${previous} — never deleted: rebase it onto ${checkout.branch} (or save its work and delete it), then re-run`);
      continue;
    }
    entries ??= await checkout.git.worktreeList();
    const entry = entries.find((candidate) => candidate.branch === target.branch && !candidate.prunable);
    if (entry !== undefined) {
      const wt = createGit(entry.path, env ? { env } : {});
      const changes = (await wt.run(['status', '--porcelain', '--untracked-files=all'])).stdout.trim();
      if (changes !== '') {
        fail(`its worktree ${entry.path} has uncommitted changes — commit or remove them, then re-run`);
        continue;
      }
      await wt.run(['merge', '--ff-only', '--quiet', checkout.head]);
    } else {
      await checkout.git.run(['update-ref', `refs/heads/${target.branch}`, checkout.head, tip]);
    }
    notes.set(target.agent, `branch was created before tier ${previous} was merged and held no work of its own: moved forward from ${tip.slice(0, 12)} to ${checkout.branch} (${checkout.head.slice(0, 12)})`);
  }
  return { notes, failures };
}

/**
 * Outside attack P13-17: a PROGRAM renamed (its file and `program_slug`) while a tier ran left its IMPLs' work on
 * branches under the old name; the loop made new, empty IMPL branches beside them, ran the IMPLs again and then cried
 * "data loss" (E9) about work that was only elsewhere. An IMPL of the tier with no branch under this name but one under
 * another PROGRAM name (`polywave/program/<other>/tier<N>-impl-<impl>`: an IMPL doc belongs to one PROGRAM) is a
 * failure naming the branches and the way out; nothing is made for it.
 */
async function branchesOfAnotherName(loaded: LoadedTier, checkout: MainCheckout, targets: ReturnType<typeof programTargets>): Promise<ProgramWorktreeFailure[]> {
  const listed = (await checkout.git.run(['for-each-ref', '--format=%(refname:lstrip=2)', 'refs/heads/polywave/program/'])).stdout.split('\n').filter((line) => line !== '');
  if (listed.length === 0) return [];
  const own = new Set(listed);
  const failures: ProgramWorktreeFailure[] = [];
  for (const target of targets) {
    if (own.has(target.branch)) continue;
    const elsewhere = listed.filter((branch) => {
      const match = /^polywave\/program\/([^/]+)\/tier\d+-impl-(.+)$/.exec(branch);
      return match !== null && match[2] === target.agent && match[1] !== loaded.programSlug;
    });
    if (elsewhere.length === 0) continue;
    const names = [...new Set(elsewhere.map((branch) => branch.split('/')[2]!))];
    failures.push({
      impl_slug: target.agent,
      path: target.path,
      branch: target.branch,
      error: `PROGRAM_SLUG_CHANGED: ${target.agent}'s IMPL branch is ${elsewhere.join(', ')} — made under program_slug ${names.map((name) => JSON.stringify(name)).join(', ')}, not ${JSON.stringify(loaded.programSlug)} (the PROGRAM was renamed while it ran; its branches and worktrees are named by it): set program_slug back to ${JSON.stringify(names[0])}, or finish or remove that branch first (git branch -m ${elsewhere[0]} ${target.branch}, after \`git worktree remove\` of its worktree); nothing was changed for ${target.agent}`,
    });
  }
  return failures;
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
  const allTargets = programTargets(loaded, checkout.root);
  // The worktrees live inside the main checkout: keep them out of its `git status`.
  await ensureInfoExclude(checkout.git);
  const renamed = await branchesOfAnotherName(loaded, checkout, allTargets);
  const stale = await refreshStaleBranches(loaded, checkout, allTargets.filter((target) => !renamed.some((failure) => failure.impl_slug === target.agent)), options.env);
  stale.failures.unshift(...renamed);
  const targets = allTargets.filter((target) => !stale.failures.some((failure) => failure.impl_slug === target.agent));
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
      ...(stale.notes.has(worktree.agent) ? { note: stale.notes.get(worktree.agent)! } : worktree.note ? { note: worktree.note.replace('the wave base', `${checkout.branch}`) } : {}),
    })),
    base_branch: checkout.branch,
    base_commit: checkout.head,
    success: ensured.failures.length === 0 && stale.failures.length === 0,
  };
  if (ensured.failures.length > 0 || stale.failures.length > 0) {
    result.failures = [...stale.failures, ...ensured.failures.map((failure) => ({ impl_slug: failure.agent, path: failure.path, branch: failure.branch, error: failure.error }))];
  }
  return result;
}
