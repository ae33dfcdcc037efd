import path from 'node:path';
import type { Git, WorktreeEntry } from '../git/git-port.js';
import { parseBranchName } from '../protocol/names.js';
import { isTerminalState, scanImpls, type ScannedImpl } from './prepare/impl-scan.js';
import { branchTips, canonicalPath, worktreeChanges } from './worktrees.js';

/**
 * E4a: stale agent worktrees. A worktree is stale when its branch is gone or its IMPL is in a
 * terminal state (the protocol's two cases); we add: its directory is missing (a registration
 * git can prune), no IMPL names its slug any more (orphaned), and — during prepare-wave of wave N
 * — a worktree of an earlier wave of the same IMPL whose work is already in the wave's base.
 *
 * Cleaning never loses work: a worktree with uncommitted changes, or whose HEAD is not reachable
 * from the base, is reported as skipped and left alone — with or without `force`. Removal is
 * `git worktree remove` without `--force` (git refuses a dirty tree too) and branches are only
 * deleted with `branch -d` (git refuses an unmerged branch).
 */
export type StaleReason = 'branch_deleted' | 'missing_directory' | 'completed_impl' | 'orphaned' | 'merged_previous_wave';

/** One stale worktree (the Go `StaleWorktree` keys plus a few of ours). */
export interface StaleWorktree {
  worktree_path: string;
  /** '' when the worktree has a detached HEAD. */
  branch_name: string;
  slug: string;
  reason: StaleReason;
  repo_path: string;
  wave?: number;
  agent?: string;
  head: string;
  locked: boolean;
}

/** A stale worktree that was left alone, and why. */
export interface SkippedWorktree extends StaleWorktree {
  detail: string;
}

/** A cleaned worktree; `branch_deleted` tells whether its branch went too. */
export interface CleanedWorktree extends StaleWorktree {
  branch_deleted: boolean;
  note?: string;
}

/** The `cleanup-stale` JSON. */
export interface StaleCleanupResult {
  detected: number;
  cleaned: CleanedWorktree[];
  skipped: SkippedWorktree[];
  errors: Array<{ worktree: string; error: string }>;
}

export interface DetectStaleOptions {
  /** Git of the repository's main checkout. */
  git: Git;
  /** Only worktrees of this IMPL slug. */
  slug?: string;
  /** The IMPL docs to judge terminal/orphaned by (default: scanned from `<root>/docs/IMPL`). */
  impls?: readonly ScannedImpl[];
  /** prepare-wave of `wave`: earlier waves of `slug` whose HEAD is in `base` are stale too. */
  currentWave?: { slug: string; wave: number; base: string };
  /** Pre-fetched `worktree list` of the repository. */
  entries?: readonly WorktreeEntry[];
}

interface Identity {
  slug: string;
  wave?: number;
  agent?: string;
}

/** Slug, wave and agent of an agent worktree, from its E5 path or its branch; undefined if not ours. */
export function identifyAgentWorktree(repoRoot: string, entry: Pick<WorktreeEntry, 'path' | 'branch'>): Identity | undefined {
  const relative = path.relative(path.join(repoRoot, '.claude', 'worktrees', 'polywave'), entry.path).split(path.sep);
  if (relative.length === 2 && !relative[0]!.startsWith('..') && relative[0] !== 'program') {
    const match = /^wave(\d+)-agent-([A-Z][2-9]?)$/.exec(relative[1]!);
    if (match) return { slug: relative[0]!, wave: Number(match[1]), agent: match[2]! };
  }
  const parsed = entry.branch ? parseBranchName(entry.branch) : undefined;
  if (parsed?.slug !== undefined) return { slug: parsed.slug, wave: parsed.wave, agent: parsed.agentId };
  return undefined;
}

/** E4a detection (see the file comment). Sorted by path. */
export async function detectStaleWorktrees(options: DetectStaleOptions): Promise<StaleWorktree[]> {
  const { git } = options;
  const repoRoot = await canonicalPath(await git.topLevel());
  const entries = options.entries ?? (await git.worktreeList());
  const candidates: Array<{ entry: WorktreeEntry; identity: Identity; entryPath: string }> = [];
  for (const entry of entries.slice(1)) {
    if (entry.bare) continue;
    const entryPath = await canonicalPath(entry.path);
    const identity = identifyAgentWorktree(repoRoot, { path: entryPath, ...(entry.branch ? { branch: entry.branch } : {}) });
    if (identity === undefined) continue;
    if (options.slug !== undefined && identity.slug !== options.slug) continue;
    candidates.push({ entry, identity, entryPath });
  }
  if (candidates.length === 0) return [];

  const tips = await branchTips(git, candidates.flatMap((candidate) => (candidate.entry.branch ? [candidate.entry.branch] : [])));
  let impls = options.impls;
  const stale: StaleWorktree[] = [];
  for (const { entry, identity, entryPath } of candidates) {
    const make = (reason: StaleReason): StaleWorktree => ({
      worktree_path: entryPath,
      branch_name: entry.branch ?? '',
      slug: identity.slug,
      reason,
      repo_path: repoRoot,
      ...(identity.wave !== undefined ? { wave: identity.wave } : {}),
      ...(identity.agent !== undefined ? { agent: identity.agent } : {}),
      head: entry.head,
      locked: entry.locked,
    });
    if (entry.prunable) {
      stale.push(make('missing_directory'));
      continue;
    }
    if (!entry.branch || !tips.has(entry.branch)) {
      stale.push(make('branch_deleted'));
      continue;
    }
    impls ??= await scanImpls(repoRoot);
    const owners = impls.filter((impl) => impl.slug === identity.slug);
    if (owners.length > 0 && owners.every((impl) => impl.archived || isTerminalState(impl.state))) {
      stale.push(make('completed_impl'));
      continue;
    }
    if (owners.length === 0) {
      stale.push(make('orphaned'));
      continue;
    }
    const current = options.currentWave;
    if (current && current.slug === identity.slug && identity.wave !== undefined && identity.wave < current.wave && (await git.isAncestor(tips.get(entry.branch)!, current.base))) {
      stale.push(make('merged_previous_wave'));
    }
  }
  return stale.sort((left, right) => (left.worktree_path < right.worktree_path ? -1 : left.worktree_path > right.worktree_path ? 1 : 0));
}

export interface CleanStaleOptions {
  /** Git of the repository's main checkout. */
  git: Git;
  /** Git for a worktree directory (to look for uncommitted changes). */
  gitAt: (directory: string) => Git;
  /** A worktree's HEAD must be reachable from one of these commits/refs to be removed. */
  bases: readonly string[];
  dryRun?: boolean;
  /** Also remove locked worktrees (never dirty or unmerged ones). */
  force?: boolean;
  signal?: AbortSignal;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** A base for messages: a commit id is shortened, a ref name ("refs/heads/main", "HEAD") is shown whole (issue 13 N12). */
function shortBase(base: string): string {
  return /^[0-9a-f]{40}([0-9a-f]{24})?$/i.test(base) ? base.slice(0, 12) : base;
}

/**
 * Removes the given stale worktrees, one at a time, skipping (never forcing) any with
 * uncommitted changes or with a HEAD not reachable from `bases`.
 */
export async function cleanStaleWorktrees(stale: readonly StaleWorktree[], options: CleanStaleOptions): Promise<StaleCleanupResult> {
  const { git } = options;
  const result: StaleCleanupResult = { detected: stale.length, cleaned: [], skipped: [], errors: [] };
  for (const item of stale) {
    options.signal?.throwIfAborted();
    if (options.dryRun) {
      result.skipped.push({ ...item, detail: 'dry run: would be removed' });
      continue;
    }
    if (item.locked && !options.force) {
      result.skipped.push({ ...item, detail: 'worktree is locked (use --force to remove locked worktrees)' });
      continue;
    }
    try {
      if (item.head !== '' && !/^0+$/.test(item.head)) {
        let reachable = false;
        for (const base of options.bases) {
          if (await git.isAncestor(item.head, base)) {
            reachable = true;
            break;
          }
        }
        if (!reachable) {
          result.skipped.push({ ...item, detail: `HEAD ${item.head.slice(0, 12)} has commits not reachable from ${options.bases.map(shortBase).join(' or ')}; left in place so no work is lost` });
          continue;
        }
      }
      if (item.reason === 'missing_directory') {
        // Only this registration (a blanket `worktree prune` would drop others too).
        await git.worktreeRemove(item.worktree_path);
        result.cleaned.push({ ...item, branch_deleted: false });
        continue;
      }
      const changes = await worktreeChanges(options.gitAt(item.worktree_path));
      if (changes.length > 0) {
        const shown = changes.slice(0, 10).join(', ');
        result.skipped.push({ ...item, detail: `uncommitted changes (${changes.length}): ${shown}${changes.length > 10 ? ', …' : ''}; left in place so no work is lost` });
        continue;
      }
      if (item.locked) await git.run(['worktree', 'unlock', '--', item.worktree_path]);
      await git.worktreeRemove(item.worktree_path);
      const cleaned: CleanedWorktree = { ...item, branch_deleted: false };
      if (item.branch_name !== '' && item.reason !== 'branch_deleted') {
        try {
          await git.deleteMergedBranch(item.branch_name);
          cleaned.branch_deleted = true;
        } catch (error) {
          cleaned.note = `branch kept: ${errorText(error)}`;
        }
      }
      result.cleaned.push(cleaned);
    } catch (error) {
      result.errors.push({ worktree: item.worktree_path, error: errorText(error) });
    }
  }
  return result;
}
