import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { formatTimestamp } from '../../protocol/freeze.js';
import { writeTextAtomic } from '../prepare/write-text.js';
import { errorText } from '../step-text.js';
import { indexLockHint } from '../../git/stale-index-lock.js';
import { restoreTornMerge } from '../torn-merge.js';
import { mainCommitEnvironment, type MainCheckout } from './tier-common.js';

/** One IMPL branch the tier merges, in tier order. */
export interface TierMergeCandidate {
  implSlug: string;
  branch: string;
  /** The tip judged by the caller: this exact commit is merged. */
  tip: string;
}

/** What the progress record keeps per merged IMPL. */
export interface TierMergeRecordEntry {
  impl_slug: string;
  branch: string;
  tip: string;
  /** The `--no-ff` merge commit ('' when found merged by a re-run and not identified). */
  merge_sha: string;
  timestamp: string;
  /** Entry added by a re-run: the tip was already in the main line's history (crash recovery). */
  recovered?: boolean;
}

/**
 * The record of a tier's merges, `<git common dir>/polywave/tier-merge-<program>-tier<N>.json`:
 * outside every worktree (no `git status` noise, survives a removed worktree) and shared by all
 * of them. The main line's history is the truth (a tip that is an ancestor of HEAD is merged);
 * the record remembers what was merged after the IMPL branch itself is gone.
 */
export interface TierMergeRecord {
  program_slug: string;
  tier: number;
  target_branch: string;
  merges: TierMergeRecordEntry[];
}

/** Progress of the merge loop (the crash tests SIGKILL the process here). */
export interface TierMergeProgressEvent {
  implSlug: string;
  branch: string;
  /** Merges performed by this run so far (1 = the first). */
  count: number;
  /** `merged`: the merge commit exists, the record does not know it yet; `recorded`: it does. */
  phase: 'merged' | 'recorded';
}

/** One IMPL's merge outcome (Go `MergeStatus` keys `{agent, branch, success, error?}` plus ours). */
export interface TierMergeOutcome {
  /** The IMPL slug (Go reuses its agent-merge shape here). */
  agent: string;
  branch: string;
  success: boolean;
  /** merged now · already-merged (in the main line's history) · no-branch (complete IMPL without one) · conflict · failed · not-attempted. */
  status: 'merged' | 'already-merged' | 'no-branch' | 'conflict' | 'failed' | 'not-attempted';
  tip?: string;
  merge_sha?: string;
  conflicted_paths?: string[];
  error?: string;
}

/** Path of the progress record for a tier. */
export function tierMergeRecordPath(commonDir: string, programSlug: string, tier: number): string {
  return path.join(commonDir, 'polywave', `tier-merge-${programSlug}-tier${tier}.json`);
}

/** Reads the progress record; an absent, torn or foreign file reads as empty (history is the truth). */
export async function readTierMergeRecord(recordPath: string): Promise<TierMergeRecordEntry[]> {
  try {
    const value = JSON.parse(await readFile(recordPath, 'utf8')) as Partial<TierMergeRecord>;
    if (!Array.isArray(value.merges)) return [];
    return value.merges.filter((entry): entry is TierMergeRecordEntry => typeof entry?.impl_slug === 'string' && typeof entry.tip === 'string' && typeof entry.branch === 'string');
  } catch {
    return [];
  }
}

/** `Merge program tier N impl <slug>: <branch>` (the Go message). */
export function tierMergeMessage(tier: number, implSlug: string, branch: string): string {
  return `Merge program tier ${tier} impl ${implSlug}: ${branch}`;
}

export interface MergeTierBranchesOptions {
  checkout: MainCheckout;
  programSlug: string;
  tier: number;
  /** Every IMPL of the tier in tier order, with the plan the caller made for it. */
  plan: ReadonlyArray<{ implSlug: string; branch: string; action: 'merge' | 'already-merged' | 'no-branch'; tip?: string; note?: string }>;
  recordPath: string;
  now: () => Date;
  afterMerge?: (event: TierMergeProgressEvent) => void | Promise<void>;
  signal?: AbortSignal;
}

export interface MergeTierBranchesResult {
  outcomes: TierMergeOutcome[];
  merged: number;
  success: boolean;
  /** The main line's tip after the loop. */
  head: string;
}

/**
 * E28B: merges the tier's IMPL branches into the main line, one `git merge --no-ff` per IMPL in
 * tier order, of the exact tip the caller judged (so a branch checked out in its IMPL worktree
 * merges fine and a branch that moved meanwhile is not merged unchecked).
 *
 * Crash safety (the finalize-wave approach, E9): before merging, an interrupted merge of one of
 * these tips (MERGE_HEAD left by a killed run) is aborted; a tip already in the main line's
 * history is skipped (and recorded); every other one is merged exactly once, and the record is
 * rewritten atomically after each merge. A conflict aborts that merge (the main line stays
 * exactly as before it) and stops the loop; nothing is ever reset or forced.
 */
export async function mergeTierBranches(options: MergeTierBranchesOptions): Promise<MergeTierBranchesResult> {
  const { checkout, tier } = options;
  const git = checkout.git;
  const entries = await readTierMergeRecord(options.recordPath);
  const record: TierMergeRecord = { program_slug: options.programSlug, tier, target_branch: checkout.branch, merges: entries };
  const save = () => writeTextAtomic(options.recordPath, `${JSON.stringify(record, null, 2)}\n`);
  const remember = (entry: TierMergeRecordEntry) => {
    record.merges = record.merges.filter((existing) => !(existing.impl_slug === entry.impl_slug && existing.tip === entry.tip));
    record.merges.push(entry);
  };

  const outcomes: TierMergeOutcome[] = [];
  let merged = 0;
  let success = true;
  let dirtyRecord = false;
  let head = checkout.head;
  for (const item of options.plan) {
    if (!success) {
      outcomes.push({ agent: item.implSlug, branch: item.branch, success: false, status: 'not-attempted', ...(item.tip ? { tip: item.tip } : {}), error: 'not attempted: an earlier IMPL did not merge' });
      continue;
    }
    if (item.action === 'no-branch') {
      outcomes.push({ agent: item.implSlug, branch: item.branch, success: true, status: 'no-branch', error: `skipped: ${item.note ?? 'branch not found'}` });
      continue;
    }
    const tip = item.tip!;
    if (item.action === 'already-merged') {
      const known = record.merges.find((entry) => entry.impl_slug === item.implSlug && entry.tip === tip);
      outcomes.push({ agent: item.implSlug, branch: item.branch, success: true, status: 'already-merged', tip, ...(known?.merge_sha ? { merge_sha: known.merge_sha } : {}), error: 'skipped: already merged' });
      if (known === undefined) {
        remember({ impl_slug: item.implSlug, branch: item.branch, tip, merge_sha: '', timestamp: formatTimestamp(options.now()), recovered: true });
        dirtyRecord = true;
      }
      continue;
    }
    if (options.signal?.aborted) {
      success = false;
      outcomes.push({ agent: item.implSlug, branch: item.branch, success: false, status: 'not-attempted', tip, error: `stopped before merging: ${errorText(options.signal.reason ?? 'aborted')}` });
      continue;
    }
    if (dirtyRecord) {
      await save();
      dirtyRecord = false;
    }
    const attempt = await git.run(['merge', '--no-ff', '--no-stat', '--no-edit', '-m', tierMergeMessage(tier, item.implSlug, item.branch), '--end-of-options', tip], {
      env: { ...mainCommitEnvironment },
      allowExitCodes: [1, 2, 128],
    });
    if (attempt.exitCode !== 0) {
      success = false;
      const [conflicted, mergeHead] = await Promise.all([
        git.run(['diff', '--name-only', '-z', '--diff-filter=U']).then((output) => output.stdout.split('\0').filter(Boolean)),
        git.tryRevParse('MERGE_HEAD'),
      ]);
      if (mergeHead !== undefined) await git.mergeAbort();
      const message = `${attempt.stderr}${attempt.stdout}`.trim().split('\n').filter((line) => line.trim() !== '').slice(0, 5).join(' | ');
      if (conflicted.length > 0) {
        outcomes.push({
          agent: item.implSlug,
          branch: item.branch,
          success: false,
          status: 'conflict',
          tip,
          conflicted_paths: conflicted,
          error: `merging ${item.branch} into ${checkout.branch} conflicts in ${conflicted.join(', ')}; the merge was aborted and ${checkout.branch} is exactly as before it (P1: IMPLs of one tier must own disjoint files) — resolve on the IMPL branch, then re-run finalize-tier`,
        });
      } else {
        const hint = await indexLockHint(checkout.commonDir);
        outcomes.push({ agent: item.implSlug, branch: item.branch, success: false, status: 'failed', tip, error: `git merge ${item.branch} failed (exit ${attempt.exitCode}) and changed nothing: ${message}${hint}` });
      }
      continue;
    }
    const mergeSha = await git.headCommit();
    merged += 1;
    head = mergeSha;
    outcomes.push({ agent: item.implSlug, branch: item.branch, success: true, status: 'merged', tip, merge_sha: mergeSha });
    await options.afterMerge?.({ implSlug: item.implSlug, branch: item.branch, count: merged, phase: 'merged' });
    remember({ impl_slug: item.implSlug, branch: item.branch, tip, merge_sha: mergeSha, timestamp: formatTimestamp(options.now()) });
    await save();
    await options.afterMerge?.({ implSlug: item.implSlug, branch: item.branch, count: merged, phase: 'recorded' });
  }
  // Merges a killed run made but did not record: identified by their second parent (the tip).
  const unidentified = record.merges.filter((entry) => entry.merge_sha === '');
  if (unidentified.length > 0) {
    const history = (await git.run(['rev-list', '--merges', '--parents', '-n', String(record.merges.length * 4 + 50), 'HEAD'])).stdout.split('\n').filter(Boolean);
    const mergeOf = new Map<string, string>();
    for (const line of history) {
      const [commit = '', , second] = line.split(' ');
      if (second !== undefined && !mergeOf.has(second)) mergeOf.set(second, commit);
    }
    for (const entry of unidentified) {
      const found = mergeOf.get(entry.tip);
      if (found !== undefined) entry.merge_sha = found;
    }
    for (const outcome of outcomes) {
      if (outcome.status === 'already-merged' && outcome.merge_sha === undefined && outcome.tip !== undefined && mergeOf.has(outcome.tip)) outcome.merge_sha = mergeOf.get(outcome.tip)!;
    }
    dirtyRecord = true;
  }
  if (dirtyRecord) await save();
  return { outcomes, merged, success, head };
}

/**
 * An interrupted merge in the main checkout (MERGE_HEAD), e.g. left by a run killed inside
 * `git merge`: aborted when it is a merge of one of `tips` (ours to undo — `merge --abort` puts
 * the main line back exactly as before that merge), reported otherwise (someone else's merge).
 */
export async function abortInterruptedTierMerge(checkout: MainCheckout, tips: ReadonlySet<string>): Promise<{ aborted: boolean; foreign?: string }> {
  const mergeHeadPath = (await checkout.git.run(['rev-parse', '--path-format=absolute', '--git-path', 'MERGE_HEAD'])).stdout.trim();
  const pending = await readFile(mergeHeadPath, 'utf8').then(
    (text) => text.trim().split('\n')[0],
    () => undefined,
  );
  if (pending === undefined || pending === '') return { aborted: false };
  if (!tips.has(pending)) return { aborted: false, foreign: pending };
  await checkout.git.mergeAbort();
  return { aborted: true };
}

/**
 * A tier merge killed before MERGE_HEAD: see restoreTornMerge (shared with wave merges into an
 * IMPL branch's worktree).
 */
export async function restoreTornTierMerge(checkout: MainCheckout, tips: ReadonlySet<string>): Promise<string[]> {
  return restoreTornMerge(checkout, tips);
}
