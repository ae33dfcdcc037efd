import { createHash } from 'node:crypto';
import { lstat, readdir, readFile, readlink, rm, rmdir } from 'node:fs/promises';
import path from 'node:path';
import type { Git, WorktreeEntry } from '../git/git-port.js';
import { GitError } from '../git/git-error.js';
import { mapBounded, retryOnLockContention } from './prepare/parallel.js';
import { forgetRemoval, readRemovalMarkers, recordRemoval, type RemovalMarker } from '../store/removal-markers.js';
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
  /**
   * Issue 13: runs before each `git worktree remove` (the configured `teardown`, see
   * prepare/worktree-setup.ts); best effort — its line goes into the agent's `teardown` key.
   */
  beforeRemove?: (worktreePath: string, agent: string) => Promise<string | undefined>;
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
  /** What the worktree's teardown did before its removal (issue 13). */
  teardown?: string;
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
 *
 * Crash-safe: before each `git worktree remove` a removal marker is written (removal-markers.ts).
 * A removal killed half way (git deletes the files one by one) leaves a worktree whose only
 * changes are deletions, or a directory whose `.git` file is already gone. The next cleanup
 * finds the marker and finishes the job — `--force` only when every change is a deletion of a
 * file of the merged tip, `rm -r` of a left-over directory only when every file left is
 * byte-identical to the merged tip's or ignored — and never claims a worktree removed while its
 * directory is still there.
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
  const [byPath, markers] = await Promise.all([indexWorktrees(entries), readRemovalMarkers(options.agents.map((agent) => agent.worktreePath))]);
  const result: CleanupResult = { wave: options.wave, target_branch: targetBranch, agents: [], recovery: [], kept: 0, success: true, ...(options.dryRun ? { dry_run: true } : {}) };

  const removals: Array<{ line: AgentCleanup; worktreePath: string; marker?: RemovalMarker }> = [];
  const leftovers: Array<{ line: AgentCleanup; directory: string; marker: RemovalMarker }> = [];
  const deletable: AgentCleanup[] = [];
  let prune = false;
  for (const target of options.agents) {
    const tip = tips.get(target.branch);
    const line: AgentCleanup = { agent: target.agent, branch: target.branch, worktree_removed: false, branch_deleted: false, ...(tip ? { tip } : {}) };
    result.agents.push(line);
    const canonical = await canonicalPath(target.worktreePath);
    const entry = byPath.get(canonical);
    const marker = markers.get(canonical);
    // Registered but its `.git` is gone (prunable), or not registered: is the directory still there?
    const leftover = entry === undefined || entry.prunable ? await directoryExists(target.worktreePath) : false;
    if (tip === undefined) {
      // Already deleted: the work must be in the target, else say how to get it back.
      line.branch_deleted = true;
      if (target.reportCommit && !(await git.isAncestor(target.reportCommit, targetRef).catch(() => false))) {
        line.branch_deleted = false;
        line.kept = `branch ${target.branch} is gone and the reported commit ${target.reportCommit.slice(0, 12)} is not reachable from ${targetBranch}`;
        line.recovery = `git branch recover-${target.agent} ${target.reportCommit}`;
        result.recovery.push(line.recovery);
      }
      if (entry?.prunable) prune = true;
      if (!leftover) {
        line.worktree_removed = true;
        if (marker) await forgetRemoval(target.worktreePath);
      } else if (marker && !line.kept) leftovers.push({ line, directory: target.worktreePath, marker });
      else line.kept ??= `${target.worktreePath} is still there but is no working tree of ${target.branch} any more: left untouched`;
      continue;
    }
    if (!merged.has(target.branch)) {
      line.kept = `tip ${tip.slice(0, 12)} of ${target.branch} is not reachable from ${targetBranch} (not merged): worktree and branch kept`;
      continue;
    }
    if (entry?.prunable) prune = true;
    if (entry !== undefined && !entry.prunable && entry.branch !== target.branch) {
      line.kept = `${target.worktreePath} is a worktree on ${entry.branch ?? 'a detached HEAD'}, not on ${target.branch}: left untouched`;
    } else if (entry !== undefined && !entry.prunable) {
      removals.push({ line, worktreePath: entry.path, ...(marker ? { marker } : {}) });
    } else if (!leftover) {
      line.worktree_removed = true;
      deletable.push(line);
      if (marker) await forgetRemoval(target.worktreePath);
    } else if (marker) {
      // A removal of ours was killed after git deleted the worktree's `.git` file: finish it if nothing but the tip's files is left.
      leftovers.push({ line, directory: target.worktreePath, marker });
    } else {
      line.kept = `${target.worktreePath} is still there but is no working tree any more (its .git is gone): left untouched, branch kept — look inside, then remove it yourself`;
    }
  }

  if (options.dryRun) {
    for (const removal of removals) removal.line.kept = `dry run: would remove ${removal.worktreePath}`;
    for (const leftover of leftovers) leftover.line.kept = `dry run: would finish the interrupted removal of ${leftover.directory}`;
    for (const line of deletable) line.kept = `dry run: would delete ${line.branch}`;
    result.kept = result.agents.filter((line) => line.kept !== undefined).length;
    return result;
  }

  const lockOptions = options.signal ? { signal: options.signal } : {};
  const outcomes = await mapBounded(
    removals,
    options.concurrency ?? 4,
    async (removal) => {
      if (options.beforeRemove) {
        const teardown = await options.beforeRemove(removal.worktreePath, removal.line.agent).catch((error: unknown) => `teardown failed: ${errorText(error)}`);
        if (teardown !== undefined) removal.line.teardown = teardown;
      }
      // Written before git starts deleting: a run killed half way is finished by the next cleanup.
      if (!removal.marker) await recordRemoval(removal.worktreePath, { branch: removal.line.branch, tip: removal.line.tip! });
      await retryOnLockContention(() => git.worktreeRemove(removal.worktreePath), lockOptions);
    },
    options.signal,
  );
  for (const [index, outcome] of outcomes.entries()) {
    const { line, worktreePath, marker } = removals[index]!;
    if (outcome.status === 'fulfilled') {
      line.worktree_removed = true;
      deletable.push(line);
      await forgetRemoval(worktreePath);
      continue;
    }
    // git refused (uncommitted changes, locked): keep it and say what is there.
    const changes = await options.git.run(['-C', worktreePath, '--no-optional-locks', 'status', '--porcelain', '--untracked-files=all']).then(
      (status) => status.stdout.split('\n').filter((row) => row.trim() !== ''),
      () => undefined,
    );
    if (marker && marker.tip === line.tip && changes !== undefined && changes.length > 0 && changes.every((row) => row.startsWith(' D '))) {
      // An earlier cleanup's removal was killed half way: what git calls changes are the files it
      // had deleted — all of them in the merged tip. Finish it.
      const finished = await retryOnLockContention(() => git.worktreeRemove(worktreePath, { force: true }), lockOptions).then(
        () => true,
        () => false,
      );
      if (finished) {
        line.worktree_removed = true;
        deletable.push(line);
        await forgetRemoval(worktreePath);
        continue;
      }
    }
    // git deletes nothing before it refuses: the marker is void unless git failed while deleting.
    if (!marker && !/failed to delete/i.test(outcome.reason instanceof GitError ? outcome.reason.stderr : String(outcome.reason))) await forgetRemoval(worktreePath);
    const files = (changes ?? []).map((row) => row.slice(3));
    line.kept =
      files.length > 0
        ? `worktree ${worktreePath} has uncommitted changes (${files.slice(0, 10).join(', ')}${files.length > 10 ? ', …' : ''}): kept with its branch — commit them on ${line.branch} (then re-run) or discard them yourself`
        : `worktree ${worktreePath} was not removed: ${errorText(outcome.reason)}`;
  }
  for (const { line, directory, marker } of leftovers) {
    // The left-over files are judged against the tip the removal started from, which must be in the target.
    const safeTip = line.tip === undefined ? await git.isAncestor(marker.tip, targetRef).catch(() => false) : marker.tip === line.tip;
    const check = safeTip ? await disposableLeftovers(git, directory, marker.tip) : { disposable: false, foreign: [`(the removal started at ${marker.tip.slice(0, 12)}, which is not the merged tip)`] };
    if (check.disposable) {
      await rm(directory, { recursive: true, force: true });
      prune = true;
      line.worktree_removed = true;
      if (line.tip !== undefined) deletable.push(line);
      await forgetRemoval(directory);
    } else {
      line.kept = `${directory} is what an interrupted removal left, and it holds files that are not in ${marker.branch} at ${marker.tip.slice(0, 12)} (${check.foreign.slice(0, 10).join(', ')}${check.foreign.length > 10 ? ', …' : ''}): left untouched, branch kept — look inside, then remove it yourself`;
    }
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

async function directoryExists(directory: string): Promise<boolean> {
  return lstat(directory).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
}

/**
 * Whether what an interrupted removal left of a worktree may go: every file still there is
 * byte-identical to the file at the same path in `tip` (blob hash and symlink-ness), or ignored by
 * the repository (git worktree remove deletes ignored files too). `foreign` lists the others.
 */
export async function disposableLeftovers(git: Git, directory: string, tip: string): Promise<{ disposable: boolean; foreign: string[] }> {
  const files = await listFiles(directory);
  if (files.length === 0) return { disposable: true, foreign: [] };
  const tree = new Map<string, { mode: string; oid: string }>();
  const { stdout } = await git.run(['ls-tree', '-r', '-z', '--full-tree', tip]);
  for (const record of stdout.split('\0')) {
    const match = /^(\d{6}) blob ([0-9a-f]{40,64})\t(.+)$/s.exec(record);
    if (match) tree.set(match[3]!, { mode: match[1]!, oid: match[2]! });
  }
  const algorithm = tip.length === 64 ? 'sha256' : 'sha1';
  const mismatched: string[] = [];
  for (const file of files) {
    const entry = tree.get(file.path);
    const absolute = path.join(directory, ...file.path.split('/'));
    const content = entry === undefined ? undefined : file.symlink ? Buffer.from(await readlink(absolute)) : await readFile(absolute).catch(() => undefined);
    const oid = content === undefined ? '' : createHash(algorithm).update(`blob ${content.length}\0`).update(content).digest('hex');
    if (entry === undefined || oid !== entry.oid || file.symlink !== (entry.mode === '120000')) mismatched.push(file.path);
  }
  if (mismatched.length === 0) return { disposable: true, foreign: [] };
  const ignored = await git.run(['check-ignore', '--no-index', '-z', '--stdin'], { input: `${mismatched.join('\0')}\0`, allowExitCodes: [1] });
  const ignoredPaths = new Set(ignored.stdout.split('\0').filter((item) => item !== ''));
  const foreign = mismatched.filter((file) => !ignoredPaths.has(file));
  return { disposable: foreign.length === 0, foreign };
}

/** Files and symlinks under `directory` (relative, `/`-separated), without a top-level `.git` file. */
async function listFiles(directory: string): Promise<Array<{ path: string; symlink: boolean }>> {
  const found: Array<{ path: string; symlink: boolean }> = [];
  const walk = async (relative: string): Promise<void> => {
    const entries = await readdir(path.join(directory, relative), { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) await walk(child);
      else if (!(relative === '' && entry.name === '.git' && entry.isFile())) found.push({ path: child, symlink: entry.isSymbolicLink() });
    }
  };
  await walk('');
  return found;
}

/** Removes an empty directory (and then its empty parents up to `.claude/worktrees`). */
async function removeIfEmpty(directory: string): Promise<void> {
  await removeEmptyDirectories(directory, path.resolve(directory, '..', '..', '..', '..'));
}

/**
 * Removes `directory` when it is empty, then each parent that became empty, stopping below
 * `stopAt` (never removed). Never recursive: a directory holding anything is left as it is.
 */
export async function removeEmptyDirectories(directory: string, stopAt: string): Promise<void> {
  const limit = path.resolve(stopAt);
  let current = path.resolve(directory);
  while (current !== limit && current.startsWith(`${limit}${path.sep}`)) {
    try {
      if ((await readdir(current)).length > 0) return;
      await rmdir(current);
    } catch {
      return;
    }
    current = path.dirname(current);
  }
}
