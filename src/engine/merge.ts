import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { indexLockHint, removeStaleIndexLock } from '../git/stale-index-lock.js';
import { PolywaveError } from '../errors/polywave-error.js';
import type { Git } from '../git/git-port.js';
import { formatTimestamp } from '../protocol/freeze.js';
import { branchesMergedInto } from './finalize/git-batch.js';
import { writeTextAtomic } from './prepare/write-text.js';
import { branchTips } from './worktrees.js';
import { legacyWaveStateDir, waveStateDir } from './state-paths.js';

/** One agent branch to merge, in merge order (wave declaration order). */
export interface MergeCandidate {
  agent: string;
  branch: string;
  /** The agent's task, for the merge message (first line, 50 characters). */
  task?: string;
  /**
   * The branch tip the pre-merge checks judged: this exact commit is merged (a branch that moved
   * since is not merged unchecked; cleanup then keeps it, unmerged). Default: the tip now.
   */
  tip?: string;
}

/** What the merge log records per merged agent (`.polywave-state/<slug>/wave{N}/merge-log.json`). */
export interface MergeLogEntry {
  agent: string;
  branch: string;
  /** Branch tip that was merged. */
  tip: string;
  /** The `--no-ff` merge commit ('' when recovered after a crash and not identified). */
  merge_sha: string;
  timestamp: string;
  /** Entry added by a re-run: the branch was already in the target's history (E9). */
  recovered?: boolean;
}

/** The merge log (the Go keys `wave`, `merges[{agent, merge_sha, timestamp}]`, plus ours). */
export interface MergeLog {
  wave: number;
  target_branch: string;
  merges: MergeLogEntry[];
}

/** Why a conflicted path conflicts (E12 merge conflict taxonomy). */
export type ConflictKind = 'agent-owned' | 'orchestrator-owned' | 'unowned';

/** Ownership of a path as the merge sees it (for the E12 explanation). */
export interface PathOwnership {
  /** Agents of this wave declaring the path. */
  agents: string[];
  /** The path is written by the protocol itself (IMPL docs, `.polywave-state/`, docs/CONTEXT.md). */
  protocolOwned: boolean;
}

/** One conflicted path, classified (E12). */
export interface ConflictedPath {
  path: string;
  kind: ConflictKind;
  owners: string[];
  resolution: string;
}

/** Progress of the merge loop (crash tests kill the process here). */
export interface MergeProgressEvent {
  agent: string;
  branch: string;
  /** Merges performed by this run so far (1 = the first merge of this run). */
  count: number;
  /** `merged`: the merge commit exists, the log does not know it yet; `logged`: the log was written. */
  phase: 'merged' | 'logged';
}

export interface MergeAgentsOptions {
  /** Git bound to the checkout where `targetBranch` is checked out. */
  git: Git;
  targetBranch: string;
  wave: number;
  agents: readonly MergeCandidate[];
  /** Where the merge log lives (see {@link mergeLogPath}). */
  logPath: string;
  now?: () => Date;
  /** Extra environment for the merge commits (POLYWAVE_ALLOW_MAIN_COMMIT=1 is always added). */
  env?: Readonly<Record<string, string>>;
  /** Ownership lookup for the E12 explanation of a conflict. */
  ownership?: (file: string) => PathOwnership;
  /** Called after each merge commit and after each log write (test hook for crash safety). */
  afterMerge?: (event: MergeProgressEvent) => void | Promise<void>;
  signal?: AbortSignal;
  /**
   * What the caller already knows: the target tip it looked at and which branches were in its
   * history then (E9). Used when HEAD is still there and every candidate has a `tip`: then the
   * merge needs no branch probes of its own.
   */
  known?: { head: string; merged: ReadonlySet<string> };
  /**
   * Awaited (with the probes) before anything is changed — e.g. the WAVE_MERGING state write,
   * which then overlaps the probes. A rejection stops the merge before it starts.
   */
  ready?: Promise<unknown>;
}

/** One agent's line in the result (Go `MergeAgentsData.merges[]` keys plus ours). */
export interface AgentMergeOutcome {
  agent: string;
  branch: string;
  success: boolean;
  /** merged now · already-merged (E9 skip) · conflict · failed · not-attempted (an earlier agent failed). */
  status: 'merged' | 'already-merged' | 'conflict' | 'failed' | 'not-attempted';
  tip?: string;
  merge_sha?: string;
  error?: string;
}

/** The `merge-agents` JSON (Go `MergeAgentsData`: `wave`, `merges[]`, plus ours). */
export interface MergeAgentsResult {
  wave: number;
  target_branch: string;
  /** Target tip before this run merged anything. */
  target_before: string;
  /** Target tip after the run (equal to target_before when nothing was merged). */
  target_after: string;
  merges: AgentMergeOutcome[];
  merged_count: number;
  skipped_count: number;
  /** The merge that failed: the target is at `target_tip` — exactly as before that merge. */
  conflict?: {
    agent: string;
    branch: string;
    target_tip: string;
    paths: ConflictedPath[];
    explanation: string;
  };
  log_path: string;
  success: boolean;
}

/** `.polywave-state/<slug>/wave{N}/merge-log.json` in a repository's main checkout (IMPL-scoped: see state-paths.ts). */
export function mergeLogPath(repoRoot: string, slug: string, wave: number): string {
  return path.join(waveStateDir(repoRoot, slug, wave), 'merge-log.json');
}

/** Reads a merge log; undefined when there is none or it is not a merge log. */
/**
 * The merge log of `slug`'s wave, taking over a log left at the pre-IMPL-scoped place
 * (`.polywave-state/wave<N>/merge-log.json`, by an earlier version) when its branches are this
 * IMPL's: a finalize-wave killed before an upgrade resumes with its record. Returns the path.
 */
export async function adoptMergeLog(repoRoot: string, slug: string, wave: number): Promise<string> {
  const current = mergeLogPath(repoRoot, slug, wave);
  if ((await readFile(current).catch(() => undefined)) !== undefined) return current;
  const legacy = await readMergeLog(path.join(legacyWaveStateDir(repoRoot, wave), 'merge-log.json')).catch(() => undefined);
  const prefix = `polywave/${slug}/wave${wave}-agent-`;
  if (legacy && legacy.merges.length > 0 && legacy.merges.every((entry) => typeof entry.branch === 'string' && entry.branch.startsWith(prefix))) {
    await writeTextAtomic(current, `${JSON.stringify(legacy, null, 2)}\n`);
  }
  return current;
}

export async function readMergeLog(logPath: string): Promise<MergeLog | undefined> {
  let text: string;
  try {
    text = await readFile(logPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const value = JSON.parse(text) as Partial<MergeLog>;
    if (!value || !Array.isArray(value.merges)) return undefined;
    return { wave: Number(value.wave ?? 0), target_branch: String(value.target_branch ?? ''), merges: value.merges.filter((entry) => entry && typeof entry.agent === 'string') };
  } catch {
    // A torn or hand-edited log: the target's history is the truth (E9), the log is only a record.
    return undefined;
  }
}

/** `Merge polywave/<slug>/wave<N>-agent-<ID>: <first 50 characters of the task>` (the Go message). */
export function mergeMessage(candidate: MergeCandidate): string {
  const summary = (candidate.task ?? '').trim().split('\n')[0]?.trim().slice(0, 50) ?? '';
  return summary === '' ? `Merge ${candidate.branch}` : `Merge ${candidate.branch}: ${summary}`;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** E12: what a conflicted path means and how it is resolved. */
export function classifyConflict(file: string, merging: string, ownership: PathOwnership | undefined): ConflictedPath {
  const owners = ownership?.agents ?? [];
  if (ownership?.protocolOwned) {
    return { path: file, kind: 'orchestrator-owned', owners, resolution: 'orchestrator-owned shared file (E12 type 2): resolve by accepting every appended section, then re-run finalize-wave' };
  }
  if (owners.length > 0) {
    const others = owners.filter((owner) => owner !== merging);
    return {
      path: file,
      kind: 'agent-owned',
      owners,
      resolution:
        others.length > 0 || !owners.includes(merging)
          ? `agent-owned file (E12 type 1, an I1 violation): owned by ${owners.join(', ')} but changed by ${merging} too — do not merge; correct the IMPL doc's ownership and re-run the wave`
          : `agent-owned file (E12 type 1): owned by ${merging}, and the target changed it after the wave began — the ownership table did not hold; correct the IMPL doc and re-run the agent on the current target`,
    };
  }
  return {
    path: file,
    kind: 'unowned',
    owners,
    resolution: `not owned by any agent of the wave: ${merging} modified it outside its ownership (I1 undeclared modification) or the target changed it meanwhile — revert that change on the agent branch or amend the ownership, then re-run`,
  };
}

/**
 * Merges the wave's agent branches into the target, one `git merge --no-ff` per agent in the
 * given order (E11: same-wave agents are independent, so a fixed order — wave declaration order —
 * is as good as any and makes runs reproducible).
 *
 * E9 crash safety: an agent whose branch tip is already in the target's history is skipped (it
 * was merged by an earlier, interrupted run; the log is completed for it); every other agent is
 * merged exactly once. The merge log is written atomically after each merge.
 *
 * A conflict aborts that merge (the target stays exactly where it was before it), stops the
 * loop, and is explained per path with the E12 taxonomy. Never resets, never forces.
 */
export async function mergeAgents(options: MergeAgentsOptions): Promise<MergeAgentsResult> {
  const { git, targetBranch, wave } = options;
  const now = options.now ?? (() => new Date());
  // One process: where MERGE_HEAD would be, the target tip, and the branch checked out.
  const branches = options.agents.map((candidate) => candidate.branch);
  // …and where the target's loose ref file is (read after each merge: the merge commit's id
  // without another process).
  const probing = git.run(['rev-parse', '--path-format=absolute', '--git-path', 'MERGE_HEAD', '--git-path', `refs/heads/${targetBranch}`, 'HEAD', '--symbolic-full-name', 'HEAD']).then((output) => output.stdout.trim().split('\n'));
  const givenTips = options.agents.every((candidate) => candidate.tip !== undefined);
  const [probe] = await Promise.all([probing, options.ready]);
  const [mergeHeadPath = '', targetRefPath = '', before = '', headRef = ''] = probe;
  // The caller's knowledge holds while HEAD has not moved (ancestry is a function of the commits).
  const reuse = givenTips && options.known !== undefined && options.known.head === before;
  const [tips, merged] = reuse
    ? [new Map(options.agents.map((candidate) => [candidate.branch, candidate.tip!] as const)), new Set(options.known!.merged)]
    : await Promise.all([branchTips(git, branches), branchesMergedInto(git, 'HEAD', branches)]);
  if (!reuse) for (const candidate of options.agents) if (candidate.tip !== undefined && tips.has(candidate.branch)) tips.set(candidate.branch, candidate.tip);
  if (headRef !== `refs/heads/${targetBranch}`) {
    throw new PolywaveError({
      code: 'N002_FINALIZE_WAVE_FAILED',
      message: `the checkout at ${git.cwd} is on ${headRef === 'HEAD' ? 'a detached HEAD' : headRef.replace(/^refs\/heads\//, '')}, not on the merge target ${targetBranch}`,
      exitCode: 2,
    });
  }
  // A git process of a killed run may have left index.lock: every merge would fail on it ("stash failed").
  if (mergeHeadPath !== '') await removeStaleIndexLock(path.dirname(mergeHeadPath));
  const pending = await readFile(mergeHeadPath, 'utf8').then((text) => text.trim().split('\n')[0], () => undefined);
  if (pending !== undefined) {
    // Only an interrupted merge of one of our own branches is ours to abort.
    if (![...tips.values()].includes(pending)) {
      throw new PolywaveError({
        code: 'G002_MERGE_CONFLICT',
        message: `a merge is already in progress in ${git.cwd} (MERGE_HEAD ${pending.slice(0, 12)} is not an agent branch of wave ${wave}); finish it or run \`git merge --abort\`, then re-run`,
        exitCode: 1,
      });
    }
    await git.mergeAbort();
  }
  const log: MergeLog = (await readMergeLog(options.logPath)) ?? { wave, target_branch: targetBranch, merges: [] };
  log.wave = wave;
  log.target_branch = targetBranch;
  const logged = new Set(log.merges.map((entry) => `${entry.agent}\u0000${entry.tip}`));

  const result: MergeAgentsResult = {
    wave,
    target_branch: targetBranch,
    target_before: before,
    target_after: before,
    merges: [],
    merged_count: 0,
    skipped_count: 0,
    log_path: options.logPath,
    success: true,
  };
  // Atomic (temp file + rename) but not fsynced: a crash of the process never tears it, and after
  // a power cut the target's history is the truth anyway (E9 ancestry) — the log is a record.
  const saveLog = () => writeTextAtomic(options.logPath, `${JSON.stringify(log, null, 2)}\n`);
  const mergeEnvironment = { ...options.env, POLYWAVE_ALLOW_MAIN_COMMIT: '1' };

  let recoveredEntries = false;
  // git's auto-maintenance runs once, after the last merge of the loop (see below).
  const lastToMerge = options.agents.map((candidate) => tips.has(candidate.branch) && !merged.has(candidate.branch)).lastIndexOf(true);
  for (const [position, candidate] of options.agents.entries()) {
    const tip = tips.get(candidate.branch);
    if (!result.success) {
      result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: false, status: 'not-attempted', ...(tip ? { tip } : {}) });
      continue;
    }
    if (tip === undefined) {
      result.success = false;
      result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: false, status: 'failed', error: `branch ${candidate.branch} does not exist` });
      continue;
    }
    if (merged.has(candidate.branch)) {
      // E9: already in the target's history — merged by an earlier run (or nothing to merge).
      result.skipped_count += 1;
      result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: true, status: 'already-merged', tip, error: 'already merged (skipped)' });
      if (!logged.has(`${candidate.agent}\u0000${tip}`)) {
        log.merges.push({ agent: candidate.agent, branch: candidate.branch, tip, merge_sha: '', timestamp: formatTimestamp(now()), recovered: true });
        recoveredEntries = true;
      }
      continue;
    }
    if (options.signal?.aborted) {
      result.success = false;
      result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: false, status: 'not-attempted', tip, error: `stopped before merging: ${errorText(options.signal.reason ?? 'aborted')}` });
      continue;
    }
    if (recoveredEntries) {
      await saveLog();
      recoveredEntries = false;
    }
    // One git process per merge on the happy path. maintenance.auto=false on all but the last:
    // git would start `maintenance run --auto` after every merge; once at the end does the same
    // housekeeping (N-1 processes fewer for an N-agent wave).
    const attempt = await git.run([...(position === lastToMerge ? [] : ['-c', 'maintenance.auto=false']), 'merge', '--no-ff', '--no-stat', '--no-edit', '-m', mergeMessage(candidate), '--end-of-options', tip], { env: mergeEnvironment, allowExitCodes: [1, 2, 128] });
    if (attempt.exitCode !== 0) {
      result.success = false;
      const failure = await failedMerge(git, attempt);
      const head = await git.headCommit();
      if (failure.conflicted.length > 0) {
        const paths = failure.conflicted.map((file) => classifyConflict(file, candidate.agent, options.ownership?.(file)));
        const earlier = result.merges.filter((item) => item.status === 'merged').map((item) => item.agent);
        result.conflict = {
          agent: candidate.agent,
          branch: candidate.branch,
          target_tip: head,
          paths,
          explanation:
            `merging ${candidate.branch} conflicts in ${paths.map((item) => `${item.path} (${item.kind})`).join(', ')}; the merge was aborted and ${targetBranch} is at ${head.slice(0, 12)}, exactly as before this merge` +
            (earlier.length > 0 ? `; agents merged earlier in this run (${earlier.join(', ')}) stay merged and a re-run skips them (E9)` : '') +
            `. ${[...new Set(paths.map((item) => item.resolution))].join(' ')}`,
        };
        result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: false, status: 'conflict', tip, error: result.conflict.explanation });
      } else {
        const hint = mergeHeadPath !== '' ? await indexLockHint(path.dirname(mergeHeadPath)) : '';
        result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: false, status: 'failed', tip, error: `git merge ${candidate.branch} failed (exit ${attempt.exitCode}) and changed nothing: ${failure.message}${hint}` });
      }
      continue;
    }
    const mergeSha = await readLooseRef(targetRefPath);
    if (mergeSha !== undefined && mergeSha === result.target_after) {
      // "Already up to date": the tip was in the target after all (no merge commit was made).
      result.skipped_count += 1;
      result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: true, status: 'already-merged', tip, error: 'already in the target (nothing to merge)' });
      continue;
    }
    result.merged_count += 1;
    result.merges.push({ agent: candidate.agent, branch: candidate.branch, success: true, status: 'merged', tip, ...(mergeSha ? { merge_sha: mergeSha } : {}) });
    await options.afterMerge?.({ agent: candidate.agent, branch: candidate.branch, count: result.merged_count, phase: 'merged' });
    log.merges = log.merges.filter((entry) => !(entry.agent === candidate.agent && entry.tip === tip));
    log.merges.push({ agent: candidate.agent, branch: candidate.branch, tip, merge_sha: mergeSha ?? '', timestamp: formatTimestamp(now()) });
    if (mergeSha) result.target_after = mergeSha;
    await saveLog();
    await options.afterMerge?.({ agent: candidate.agent, branch: candidate.branch, count: result.merged_count, phase: 'logged' });
  }
  // Merge commits not read from the ref file (packed or unusual ref storage, or recovered after a
  // crash): identified by their second parent (the agent tip), in one rev-list.
  const missing = log.merges.filter((entry) => entry.merge_sha === '').length;
  if (missing > 0) {
    const history = (await git.run(['rev-list', '--parents', '-n', String(log.merges.length * 2 + 50), 'HEAD'])).stdout.split('\n').filter(Boolean);
    result.target_after = history[0]?.split(' ')[0] ?? before;
    const mergeOf = new Map<string, string>();
    for (const line of history) {
      const [commit = '', , second] = line.split(' ');
      if (second !== undefined && !mergeOf.has(second)) mergeOf.set(second, commit);
    }
    for (const entry of log.merges) if (entry.merge_sha === '' && mergeOf.has(entry.tip)) entry.merge_sha = mergeOf.get(entry.tip)!;
    for (const item of result.merges) if (item.status === 'merged' && item.tip && !item.merge_sha && mergeOf.has(item.tip)) item.merge_sha = mergeOf.get(item.tip)!;
    await saveLog();
  } else if (recoveredEntries) {
    await saveLog();
  }
  return result;
}

/** The commit id in a loose ref file; undefined when there is none (packed ref, other ref storage). */
async function readLooseRef(refPath: string): Promise<string | undefined> {
  if (refPath === '') return undefined;
  const text = await readFile(refPath, 'utf8').catch(() => '');
  const id = text.trim();
  return /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(id) ? id : undefined;
}

/**
 * After a failed `git merge`: the conflicted paths, and the target put back exactly as it was
 * (`merge --abort` when a merge is in progress; git itself leaves nothing behind otherwise).
 */
async function failedMerge(git: Git, attempt: { stdout: string; stderr: string }): Promise<{ conflicted: string[]; message: string }> {
  const [unmerged, mergeHead] = await Promise.all([
    git.run(['diff', '--name-only', '-z', '--diff-filter=U']).then((output) => output.stdout.split('\0').filter(Boolean)),
    git.tryRevParse('MERGE_HEAD'),
  ]);
  if (mergeHead !== undefined) await git.mergeAbort();
  const message = `${attempt.stderr}${attempt.stdout}`.trim().split('\n').filter((line) => line.trim() !== '').slice(0, 5).join(' | ');
  return { conflicted: unmerged, message };
}
