import { readdir, readFile, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Git, WorktreeEntry } from '../git/git-port.js';
import { addWorktreesBatch } from './prepare/add-worktrees-batch.js';
import { defaultGitConcurrency, isLockContention, mapBounded, retryOnLockContention } from './prepare/parallel.js';
import { writeTextAtomic } from './prepare/write-text.js';

/** One agent worktree, as printed by prepare-wave / create-worktrees (the Go keys). */
export interface WorktreeInfo {
  agent: string;
  path: string;
  branch: string;
  /** Repository name, only for agents outside the primary repository (cross-repo waves). */
  repo?: string;
}

/** What happened to a worktree: new branch + worktree, an existing valid one, or an existing branch given a worktree. */
export type WorktreeAction = 'created' | 'reused' | 'attached';

export interface EnsuredWorktree extends WorktreeInfo {
  action: WorktreeAction;
  /** Why an existing branch was handled specially (fast-forwarded, kept with its own base). */
  note?: string;
}

export interface WorktreeFailure {
  agent: string;
  path: string;
  branch: string;
  error: string;
}

export interface EnsureWorktreesOptions {
  /** Git of the repository's main checkout. */
  git: Git;
  targets: readonly WorktreeInfo[];
  /** Commit every new branch starts at (E5/E9: one base for the whole wave). */
  base: string;
  /** Concurrent `git worktree add` processes (default: idle CPUs, 1–8). */
  concurrency?: number;
  signal?: AbortSignal;
  /** Called as each worktree becomes ready (for events/progress). */
  onReady?: (worktree: EnsuredWorktree) => void;
  /** Environment for git (as given to the Git port); needed for the one-shell batch. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Fork the adds from one shell (default true when `env` is given; falls back to the port without a shell). */
  batch?: boolean;
  /** `worktree list` of the repository, when the caller has a current one (saves a git call). */
  entries?: readonly WorktreeEntry[];
  /** Tips of the targets' branches that exist (all of them), when the caller has them. */
  tips?: ReadonlyMap<string, string>;
}

export interface EnsureWorktreesResult {
  worktrees: EnsuredWorktree[];
  failures: WorktreeFailure[];
}


/** Canonical absolute path (symlinks resolved as far as the path exists). */
export async function canonicalPath(filePath: string): Promise<string> {
  const absolute = path.resolve(filePath);
  try {
    return await realpath(absolute);
  } catch {
    const parent = path.dirname(absolute);
    if (parent === absolute) return absolute;
    return path.join(await canonicalPath(parent), path.basename(absolute));
  }
}

/** `worktree list`, indexed by canonical path. */
export async function indexWorktrees(entries: readonly WorktreeEntry[]): Promise<Map<string, WorktreeEntry>> {
  const index = new Map<string, WorktreeEntry>();
  await Promise.all(
    entries.map(async (entry) => {
      index.set(await canonicalPath(entry.path), entry);
    }),
  );
  return index;
}

/** Tips of the given local branches (missing ones absent), in one `for-each-ref`; with `mergedInto`, only those in that commit's history. */
export async function branchTips(git: Git, branches: readonly string[], options: { mergedInto?: string } = {}): Promise<Map<string, string>> {
  const tips = new Map<string, string>();
  if (branches.length === 0) return tips;
  const wanted = new Set(branches);
  const merged = options.mergedInto === undefined ? [] : [`--merged=${options.mergedInto}`];
  const { stdout } = await git.run(['for-each-ref', ...merged, '--format=%(objectname) %(refname)', ...[...wanted].map((branch) => `refs/heads/${branch}`)]);
  for (const line of stdout.split('\n')) {
    const match = /^([0-9a-f]{40,64}) refs\/heads\/(.+)$/.exec(line.trim());
    if (match && wanted.has(match[2]!)) tips.set(match[2]!, match[1]!);
  }
  return tips;
}

async function isNonEmptyDirectory(directory: string): Promise<boolean> {
  try {
    return (await readdir(directory)).length > 0;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOTDIR';
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Removes what a killed `git worktree add` left at worktree paths `owns` accepts (canonical
 * paths), straight from the file system; returns those paths. git (2.x) makes a registration in
 * steps: `<common dir>/worktrees/<id>/` locked with the reason `initializing`, its `gitdir`, the
 * worktree's `.git` file, HEAD = the null object id, `commondir`, then HEAD pointed at the
 * branch (`symbolic-ref`), the checkout (`reset --hard`: index and files), and only then the
 * unlock. Killed in between, what is left is no worktree: listed detached on the null id or with
 * no HEAD, or on the branch with no index (an agent started there sees every tracked file
 * deleted, and its jail audit stops it: I1 on files of the whole history), or — killed before
 * `commondir` was written — a registration that makes every `git worktree list` fail. `git worktree
 * remove` refuses all of these (locked; `.git` not a gitdir file; …). None was ever handed to an
 * agent (the add did not return), so the registration (what `git worktree prune` would delete)
 * and the directory at the path go; branches and commits stay. A registration still locked
 * `initializing` may also be an add in flight: `owns` must accept only paths no other process is
 * adding right now (the caller's own targets, or its own worktrees before it starts any).
 */
export async function removeKilledWorktreeAdds(git: Git, owns: (worktreePath: string) => boolean): Promise<string[]> {
  const adminRoot = path.join(path.resolve(git.cwd, await git.commonDir()), 'worktrees');
  let names: string[];
  try {
    names = await readdir(adminRoot);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const admin = path.join(adminRoot, name);
    const [locked, head, gitdir] = await Promise.all(['locked', 'HEAD', 'gitdir'].map((file) => readFile(path.join(admin, file), 'utf8').catch(() => undefined)));
    // Not locked `initializing` and on a real HEAD: a finished add (whatever happened to it later).
    if (locked?.trim() !== 'initializing' && !/^0*$/.test((head ?? '').trim())) continue;
    // No gitdir yet: git does not list it and a new add takes another id; nothing to do.
    if (gitdir === undefined || gitdir.trim() === '') continue;
    const worktreePath = await canonicalPath(path.dirname(path.resolve(admin, gitdir.trim())));
    if (!owns(worktreePath)) continue;
    await rm(admin, { recursive: true, force: true });
    await rm(worktreePath, { recursive: true, force: true });
    removed.push(worktreePath);
  }
  return removed;
}

interface Plan {
  target: WorktreeInfo;
  kind: 'reuse' | 'create' | 'attach';
  /** For attach: new tip when the branch is fast-forwarded to the base. */
  fastForwardFrom?: string;
  note?: string;
}

/**
 * E5/E9: makes sure every target has its worktree at its E5 path on its E5 branch, reusing what
 * exists and never destroying work:
 * - a worktree registered at the path on the expected branch is reused as it is;
 * - a branch that exists without a worktree gets one attached (its commits are kept; a branch
 *   with no commits of its own that lags behind the base is fast-forwarded to the base);
 * - a missing branch is created at `base` — all new branches in one `update-ref --stdin`
 *   transaction — and the worktrees are then added in parallel (bounded), retrying on git lock
 *   contention;
 * - anything unexpected at the path (another branch, a non-worktree directory with files, the
 *   branch checked out elsewhere) is a failure for that agent, and nothing there is touched.
 */
export async function ensureWorktrees(options: EnsureWorktreesOptions): Promise<EnsureWorktreesResult> {
  const { git, targets, base } = options;
  const failures: WorktreeFailure[] = [];
  const fail = (target: WorktreeInfo, error: string) => failures.push({ agent: target.agent, path: target.path, branch: target.branch, error });

  // A `git worktree add` killed at one of our target paths (see removeKilledWorktreeAdds) is
  // removed first: reused as it is it would be no worktree (or break `git worktree list`).
  const targetPaths = new Set(await Promise.all(targets.map((target) => canonicalPath(target.path))));
  const killedAdds = await removeKilledWorktreeAdds(git, (worktreePath) => targetPaths.has(worktreePath));
  let entries: readonly WorktreeEntry[] = (killedAdds.length === 0 ? options.entries : undefined) ?? (await git.worktreeList());
  // A registration whose directory is gone holds its branch hostage. Drop exactly those of our
  // target branches (the branch keeps the commits); never a blanket `worktree prune`, which could
  // drop a detached registration that is the last reference to someone's commits.
  const wantedBranches = new Set(targets.map((target) => target.branch));
  const hostages = entries.filter((entry) => entry.prunable && entry.branch !== undefined && wantedBranches.has(entry.branch));
  if (hostages.length > 0) {
    for (const entry of hostages) await retryOnLockContention(() => git.worktreeRemove(entry.path), options.signal ? { signal: options.signal } : {});
    entries = entries.filter((entry) => !hostages.includes(entry));
  }
  const byPath = await indexWorktrees(entries);
  const checkedOut = new Map<string, string>();
  for (const [entryPath, entry] of byPath) if (entry.branch) checkedOut.set(entry.branch, entryPath);
  const tips = options.tips ?? (await branchTips(git, targets.map((target) => target.branch)));

  const plans: Plan[] = [];
  for (const target of targets) {
    const wanted = await canonicalPath(target.path);
    const entry = byPath.get(wanted);
    if (entry !== undefined) {
      if (entry.branch === target.branch) plans.push({ target, kind: 'reuse' });
      else fail(target, `a worktree is already registered at ${target.path} on ${entry.branch ? `branch ${entry.branch}` : 'a detached HEAD'}, expected ${target.branch}; it was left untouched`);
      continue;
    }
    const elsewhere = checkedOut.get(target.branch);
    if (elsewhere !== undefined) {
      fail(target, `branch ${target.branch} is already checked out in ${elsewhere}; expected its worktree at ${target.path}`);
      continue;
    }
    if (await isNonEmptyDirectory(wanted)) {
      fail(target, `${target.path} exists and is not a registered worktree; move it away (it was left untouched)`);
      continue;
    }
    const tip = tips.get(target.branch);
    if (tip === undefined) {
      plans.push({ target, kind: 'create' });
      continue;
    }
    if (tip !== base && (await git.isAncestor(tip, base))) {
      plans.push({ target, kind: 'attach', fastForwardFrom: tip, note: `branch had no commits of its own; fast-forwarded from ${tip.slice(0, 12)} to the wave base` });
    } else if (tip !== base && !(await git.isAncestor(base, tip))) {
      plans.push({ target, kind: 'attach', note: `branch exists with commits that do not descend from the wave base ${base.slice(0, 12)}; kept as it is` });
    } else {
      plans.push({ target, kind: 'attach' });
    }
  }

  // New branches and fast-forwards in one ref transaction (atomic, one process for N agents).
  const refUpdates = plans.filter((plan) => plan.kind === 'create' || plan.fastForwardFrom !== undefined);
  let refFailure: string | undefined;
  if (refUpdates.length > 0) {
    const input = [
      'start',
      ...refUpdates.map((plan) =>
        plan.kind === 'create' ? `create refs/heads/${plan.target.branch} ${base}` : `update refs/heads/${plan.target.branch} ${base} ${plan.fastForwardFrom}`,
      ),
      'commit',
      '',
    ].join('\n');
    try {
      options.signal?.throwIfAborted();
      await retryOnLockContention(() => git.run(['update-ref', '--stdin'], { input, ...(options.signal ? { signal: options.signal } : {}) }), options.signal ? { signal: options.signal } : {});
    } catch (error) {
      refFailure = `could not create the agent branches: ${errorText(error)}`;
    }
  }

  const worktrees: EnsuredWorktree[] = [];
  const toAdd: Plan[] = [];
  for (const plan of plans) {
    if (plan.kind === 'reuse') {
      const ready: EnsuredWorktree = { ...plan.target, action: 'reused' };
      worktrees.push(ready);
      options.onReady?.(ready);
    } else if (refFailure !== undefined && (plan.kind === 'create' || plan.fastForwardFrom !== undefined)) {
      fail(plan.target, refFailure);
    } else {
      toAdd.push(plan);
    }
  }

  const concurrency = options.concurrency ?? defaultGitConcurrency();
  const signalOption = options.signal ? { signal: options.signal } : {};
  const addThroughPort = async (plan: Plan): Promise<void> => {
    await retryOnLockContention(() => git.worktreeAdd({ path: plan.target.path, branch: plan.target.branch, base, createBranch: false }), signalOption);
  };
  const ready = (plan: Plan): EnsuredWorktree => {
    const worktree: EnsuredWorktree = { ...plan.target, action: plan.kind === 'create' ? 'created' : 'attached', ...(plan.note ? { note: plan.note } : {}) };
    options.onReady?.(worktree);
    return worktree;
  };
  // Several adds: one shell forks the N git processes (see add-worktrees-batch.ts); git's lock
  // races among them are retried one by one through the port.
  const batch =
    toAdd.length >= 2 && options.batch !== false && options.env !== undefined
      ? await addWorktreesBatch({ cwd: git.cwd, items: toAdd.map((plan) => plan.target), concurrency, env: options.env, signal: options.signal })
      : undefined;
  const outcomes = await mapBounded(
    toAdd,
    batch ? 1 : concurrency,
    async (plan, index) => {
      const batchError = batch?.[index];
      if (batch === undefined || (batchError !== undefined && isLockContention(batchError))) await addThroughPort(plan);
      else if (batchError !== undefined) throw batchError;
      return ready(plan);
    },
    options.signal,
  );
  outcomes.forEach((outcome, index) => {
    if (outcome.status === 'fulfilled') worktrees.push(outcome.value);
    else fail(toAdd[index]!.target, `git worktree add failed: ${errorText(outcome.reason)}`);
  });

  const order = new Map(targets.map((target, index) => [target.agent + '\u0000' + target.path, index]));
  const rank = (item: { agent: string; path: string }) => order.get(item.agent + '\u0000' + item.path) ?? 0;
  worktrees.sort((left, right) => rank(left) - rank(right));
  failures.sort((left, right) => rank(left) - rank(right));
  return { worktrees, failures };
}

/** Problems found by {@link verifyWorktrees}. */
export interface WorktreeVerification {
  ok: boolean;
  /** Registered worktrees matching the targets. */
  found: number;
  expected: number;
  problems: string[];
}

/**
 * After creation: one `worktree list` must show every target at its path on its branch, each
 * exactly once.
 */
export async function verifyWorktrees(git: Git, targets: readonly WorktreeInfo[]): Promise<WorktreeVerification> {
  const byPath = await indexWorktrees(await git.worktreeList());
  const problems: string[] = [];
  let found = 0;
  const branchCount = new Map<string, number>();
  for (const entry of byPath.values()) if (entry.branch) branchCount.set(entry.branch, (branchCount.get(entry.branch) ?? 0) + 1);
  for (const target of targets) {
    const entry = byPath.get(await canonicalPath(target.path));
    if (entry === undefined) problems.push(`agent ${target.agent}: no worktree registered at ${target.path}`);
    else if (entry.branch !== target.branch) problems.push(`agent ${target.agent}: worktree ${target.path} is on ${entry.branch ?? 'a detached HEAD'}, expected ${target.branch}`);
    else if (entry.prunable) problems.push(`agent ${target.agent}: worktree ${target.path} is registered but its directory is missing`);
    else found += 1;
    if ((branchCount.get(target.branch) ?? 0) > 1) problems.push(`agent ${target.agent}: branch ${target.branch} is checked out more than once`);
  }
  return { ok: problems.length === 0, found, expected: targets.length, problems };
}

/** Files prepare-wave writes into each agent worktree; never committed, never merged. */
export const agentWorktreeFiles = ['.polywave-agent-brief.md', '.polywave-ownership.json', '.polywave-worktree-env'] as const;

/**
 * Patterns written to the repository's common `info/exclude` (shared by all worktrees, so the
 * root-anchored patterns match at every worktree's root): the agent files and the temporary files
 * their atomic writes use (`.<name>.<pid>.<hex>.tmp`: a run killed mid-write leaves one, which the
 * relaunched agent's jail audit counted as its own unowned change, I1), the worktrees that live
 * inside the main checkout, and the orchestrator's runtime state.
 */
export const polywaveExcludePatterns = [...agentWorktreeFiles.map((name) => `/${name}`), ...agentWorktreeFiles.map((name) => `/.${name}.*.tmp`), '/.claude/worktrees/', '/.polywave-state/'] as const;

const excludeBegin = '# >>> polywave (agent worktree files and runtime state; managed) >>>';
const excludeEnd = '# <<< polywave <<<';

/**
 * Makes sure the common `info/exclude` holds {@link polywaveExcludePatterns} (a marked block,
 * rewritten in place; the rest of the file is kept). Returns the file path and whether it changed.
 */
export async function ensureInfoExclude(git: Git): Promise<{ path: string; changed: boolean }> {
  const root = await git.topLevel();
  const commonDir = path.resolve(root, await git.commonDir());
  const filePath = path.join(commonDir, 'info', 'exclude');
  let current = '';
  try {
    current = await readFile(filePath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const block = `${excludeBegin}\n${polywaveExcludePatterns.join('\n')}\n${excludeEnd}\n`;
  const begin = current.indexOf(excludeBegin);
  const end = begin < 0 ? -1 : current.indexOf(excludeEnd, begin);
  let next: string;
  if (begin >= 0 && end >= 0) {
    let stop = end + excludeEnd.length;
    if (current[stop] === '\n') stop += 1;
    next = `${current.slice(0, begin)}${block}${current.slice(stop)}`;
  } else {
    next = `${current}${current === '' || current.endsWith('\n') ? '' : '\n'}${block}`;
  }
  if (next === current) return { path: filePath, changed: false };
  await writeTextAtomic(filePath, next);
  return { path: filePath, changed: true };
}

/** Uncommitted changes in a worktree (tracked changes and untracked, non-ignored files). */
export async function worktreeChanges(worktreeGit: Git): Promise<string[]> {
  return (await worktreeGit.status()).map((entry) => entry.path);
}
