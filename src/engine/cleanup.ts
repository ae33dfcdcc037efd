import { readdir, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Git, WorktreeEntry } from '../git/git-port.js';
import { GitError } from '../git/git-error.js';
import { mapBounded, retryOnLockContention } from './prepare/parallel.js';
import { branchTips, canonicalPath, indexWorktrees } from './worktrees.js';

/** One agent whose worktree and branch a cleanup removes. */
export interface CleanupTarget {
  agent: string;
  branch: string;
  worktreePath: string;
  /** The completion report's commit: checked for reachability when the branch is already gone. */
  reportCommit?: string;
}

export interface CleanupOptions {
  /** Git of the repository's main checkout. */
  git: Git;
  /** Git of the checkout where the target branch is checked out (`branch -d` runs there). */
  targetGit: Git;
  /** The branch the wave merged into. */
  targetBranch: string;
  wave: number;
  /** Directory holding the wave's worktrees (`.claude/worktrees/polywave/<slug>`), removed when empty. */
  worktreesDir?: string;
  agents: readonly CleanupTarget[];
  /** Concurrent `git worktree remove` processes (default 4). */
  concurrency?: number;
  signal?: AbortSignal;
  /** Report what would be removed without removing anything. */
  dryRun?: boolean;
  /** `git worktree list` when the caller already has it (the agents' worktrees); default: ask git. */
  worktrees?: readonly WorktreeEntry[];
}

/** One agent's line (the Go `CleanupData.agents[]` keys plus ours). */
export interface AgentCleanup {
  agent: string;
  branch: string;
  worktree_removed: boolean;
  branch_deleted: boolean;
  /** Tip of the branch when cleanup started. */
  tip?: string;
  /** Why something was kept. */
  kept?: string;
  /** Command that recovers work that is not reachable from the target. */
  recovery?: string;
}

/** The `cleanup` JSON: `{wave, agents[{agent, worktree_removed, branch_deleted}]}` plus ours. */
export interface CleanupResult {
  wave: number;
  target_branch: string;
  agents: AgentCleanup[];
  /** Recovery commands for work not reachable from the target (E9). */
  recovery: string[];
  /** Agents whose worktree or branch was kept. */
  kept: number;
  dry_run?: boolean;
  success: boolean;
}

function errorText(error: unknown): string {
  if (error instanceof GitError) return error.stderr.trim().split('\n')[0] || error.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Removes each agent's worktree and branch — only after proving the branch tip is reachable
 * from the target (E9): an unmerged branch and its worktree are kept; a branch that is already
 * gone while its reported commit is not in the target yields `git branch recover-<id> <sha>`.
 * Never `worktree remove --force` (git refuses a worktree with uncommitted changes, which is
 * then kept and reported), never `branch -D` (one batched `branch -d`, which git itself refuses
 * for an unmerged branch).
 */
export async function cleanupWave(options: CleanupOptions): Promise<CleanupResult> {
  const { git, targetGit, targetBranch } = options;
  const branches = options.agents.map((agent) => agent.branch);
  const targetRef = `refs/heads/${targetBranch}`;
  // One for-each-ref usually tells both which branches the target holds and their tips (every
  // branch merged); the tips of the others are asked for only when there are others.
  const [entries, mergedTips] = await Promise.all([options.worktrees ? [...options.worktrees] : git.worktreeList(), branchTips(git, branches, { mergedInto: targetRef })]);
  const merged = new Set(mergedTips.keys());
  const tips = new Map(mergedTips);
  const rest = branches.filter((branch) => !merged.has(branch));
  if (rest.length > 0) for (const [branch, tip] of await branchTips(git, rest)) tips.set(branch, tip);
  const byPath = await indexWorktrees(entries);
  const result: CleanupResult = { wave: options.wave, target_branch: targetBranch, agents: [], recovery: [], kept: 0, success: true, ...(options.dryRun ? { dry_run: true } : {}) };

  const removals: Array<{ line: AgentCleanup; worktreePath: string }> = [];
  const deletable: AgentCleanup[] = [];
  let prune = false;
  for (const target of options.agents) {
    const tip = tips.get(target.branch);
    const line: AgentCleanup = { agent: target.agent, branch: target.branch, worktree_removed: false, branch_deleted: false, ...(tip ? { tip } : {}) };
    result.agents.push(line);
    const entry = byPath.get(await canonicalPath(target.worktreePath));
    if (tip === undefined) {
      // Already deleted: the work must be in the target, else say how to get it back.
      line.branch_deleted = true;
      if (target.reportCommit && !(await git.isAncestor(target.reportCommit, targetRef).catch(() => false))) {
        line.branch_deleted = false;
        line.kept = `branch ${target.branch} is gone and the reported commit ${target.reportCommit.slice(0, 12)} is not reachable from ${targetBranch}`;
        line.recovery = `git branch recover-${target.agent} ${target.reportCommit}`;
        result.recovery.push(line.recovery);
      }
      if (entry === undefined) line.worktree_removed = true;
      else if (entry.prunable) prune = true;
      continue;
    }
    if (!merged.has(target.branch)) {
      line.kept = `tip ${tip.slice(0, 12)} of ${target.branch} is not reachable from ${targetBranch} (not merged): worktree and branch kept`;
      continue;
    }
    if (entry === undefined) {
      line.worktree_removed = true;
      deletable.push(line);
    } else if (entry.prunable) {
      prune = true;
      line.worktree_removed = true;
      deletable.push(line);
    } else if (entry.branch !== target.branch) {
      line.kept = `${target.worktreePath} is a worktree on ${entry.branch ?? 'a detached HEAD'}, not on ${target.branch}: left untouched`;
    } else {
      removals.push({ line, worktreePath: entry.path });
    }
  }

  if (options.dryRun) {
    for (const removal of removals) removal.line.kept = `dry run: would remove ${removal.worktreePath}`;
    for (const line of deletable) line.kept = `dry run: would delete ${line.branch}`;
    result.kept = result.agents.filter((line) => line.kept !== undefined).length;
    return result;
  }

  const lockOptions = options.signal ? { signal: options.signal } : {};
  const outcomes = await mapBounded(
    removals,
    options.concurrency ?? 4,
    (removal) => retryOnLockContention(() => git.worktreeRemove(removal.worktreePath), lockOptions),
    options.signal,
  );
  for (const [index, outcome] of outcomes.entries()) {
    const { line, worktreePath } = removals[index]!;
    if (outcome.status === 'fulfilled') {
      line.worktree_removed = true;
      deletable.push(line);
      continue;
    }
    // git refused (uncommitted changes, locked): keep it and say what is there.
    const changes = await options.git.run(['-C', worktreePath, '--no-optional-locks', 'status', '--porcelain', '--untracked-files=all']).then(
      (status) => status.stdout.split('\n').filter((row) => row.trim() !== '').map((row) => row.slice(3)),
      () => [] as string[],
    );
    line.kept =
      changes.length > 0
        ? `worktree ${worktreePath} has uncommitted changes (${changes.slice(0, 10).join(', ')}${changes.length > 10 ? ', …' : ''}): kept with its branch — commit them on ${line.branch} (then re-run) or discard them yourself`
        : `worktree ${worktreePath} was not removed: ${errorText(outcome.reason)}`;
  }
  if (prune) await retryOnLockContention(() => git.worktreePrune(), lockOptions).catch(() => undefined);

  const toDelete = deletable.filter((line) => tips.has(line.branch));
  if (toDelete.length > 0) {
    // One `branch -d` for all: git deletes each merged one and refuses (and names) the others.
    const run = await targetGit.run(['branch', '-d', ...toDelete.map((line) => line.branch)], { allowExitCodes: [1] });
    const deleted = new Set<string>();
    for (const match of run.stdout.matchAll(/^Deleted branch (.+) \(was [0-9a-f]+\)\.$/gm)) deleted.add(match[1]!);
    for (const line of toDelete) {
      if (deleted.has(line.branch)) {
        line.branch_deleted = true;
        continue;
      }
      const reason = run.stderr.split('\n').find((row) => row.includes(`'${line.branch}'`))?.replace(/^error: /, '') ?? 'git branch -d refused';
      if (/lock/i.test(reason)) {
        // Another git process held a ref lock for a moment: once more, on its own.
        const retried = await retryOnLockContention(() => targetGit.deleteMergedBranch(line.branch), lockOptions).then(
          () => true,
          () => false,
        );
        if (retried) {
          line.branch_deleted = true;
          continue;
        }
      }
      line.kept = `branch ${line.branch} kept: ${reason}`;
    }
  }

  if (options.worktreesDir) await removeIfEmpty(options.worktreesDir);
  result.kept = result.agents.filter((line) => line.kept !== undefined).length;
  result.success = result.kept === 0;
  return result;
}

/** Removes an empty directory (and then its empty parents up to `.claude/worktrees`). */
async function removeIfEmpty(directory: string): Promise<void> {
  let current = directory;
  for (let depth = 0; depth < 3; depth += 1) {
    try {
      if ((await readdir(current)).length > 0) return;
      await rmdir(current);
    } catch {
      return;
    }
    current = path.dirname(current);
  }
}
