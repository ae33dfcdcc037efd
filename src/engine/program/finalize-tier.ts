import { rm } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import type { GateEventSink } from '../../gates/index.js';
import { createGit } from '../../git/git-cli.js';
import type { Git, WorktreeEntry } from '../../git/git-port.js';
import { programStatus } from '../../protocol/program/index.js';
import type { ImplManifest } from '../../protocol/schema/impl-schema.js';
import { readProgramImplDocs } from '../../store/program-impl-docs.js';
import { closeImpl, closeReadiness, commitClosedImpls } from '../close-impl.js';
import type { StepResult, StepStatus } from '../step.js';
import { errorText, short } from '../step-text.js';
import { removeEmptyDirectories } from '../cleanup.js';
import { branchTips, worktreeChanges } from '../worktrees.js';
import { freezeContracts, setProgramImplStatuses, setProgramState } from './program-edits.js';
import { insideRoot, loadProgramTier, mainCommitEnvironment, openMainCheckout, type LoadedTier, type MainCheckout, type TierOptions } from './tier-common.js';
import { runLoadedTierGate, type TierGateResult } from './tier-gate.js';
import { removeStaleIndexLock } from '../../git/stale-index-lock.js';
import { abortInterruptedTierMerge, mergeTierBranches, restoreTornTierMerge, readTierMergeRecord, tierMergeRecordPath, type TierMergeOutcome, type TierMergeProgressEvent } from './tier-merge.js';
import { programTargets } from './tier-worktrees.js';

/** An error of the run, in the Go `PolywaveError` shape. */
export interface TierError {
  code: string;
  message: string;
  severity: 'error' | 'fatal';
}

/** What happened to one merged IMPL's worktree and branch after the tier was verified. */
export interface TierCleanupOutcome {
  impl_slug: string;
  branch: string;
  worktree_path: string | null;
  worktree_removed: boolean;
  branch_deleted: boolean;
  detail: string;
}

/** The E33 advance after a verified tier (`--auto`; Go `TierAdvanceResult` keys minus the repeated gate result). */
export interface TierAdvanceResult {
  tier_number: number;
  freeze_result?: unknown;
  advanced_to_next: boolean;
  requires_review: boolean;
  next_tier?: number;
  program_complete: boolean;
  /** The commit recording the new program state (TIER_EXECUTING for the next tier). */
  commit_sha?: string | null;
  errors?: string[];
}

/** The `finalize-tier` JSON: the Go `FinalizeTierResult` keys (unwrapped) plus ours. */
export interface FinalizeTierResult {
  tier_number: number;
  /** IMPL docs closed by this run (E15/E18: marked COMPLETE, archived, CONTEXT.md, committed). */
  impls_closed: string[];
  /** IMPLs that needed no closing (doc already COMPLETE, or a complete IMPL without a doc). */
  impls_skipped: string[];
  /** Per IMPL slug, in tier order: `{wave: <tier>, merges: [one outcome]}` (the Go shape). */
  merge_results: Record<string, { wave: number; merges: TierMergeOutcome[] }>;
  tier_gate_result?: TierGateResult;
  /** Every IMPL of the tier is `complete` in the committed PROGRAM manifest. */
  state_advanced: boolean;
  errors?: TierError[];
  /** The main-line branch the tier merged into, and its tip before and after this run. */
  target_branch: string;
  target_before: string;
  target_after: string;
  merged_count: number;
  /** The one commit of the tier's closed IMPL docs (`chore: close-impl a, b [polywave:complete]`), when this run made it. */
  close_commit?: string;
  /** The commit holding the PROGRAM manifest's new statuses (null when nothing had to change). */
  manifest_commit?: string | null;
  /** The program `state` before and after (TIER_VERIFIED when this tier was the current one). */
  program_state?: { previous: string | undefined; current: string | undefined };
  /** Merged IMPL worktrees/branches removed after the tier was verified (never one holding work). */
  cleanup: TierCleanupOutcome[];
  /** `--auto` only: E30 freeze and E33 advance. */
  advance?: TierAdvanceResult;
  record_path: string;
  warnings: string[];
  steps: StepResult[];
  success: boolean;
}

export interface FinalizeTierOptions extends TierOptions {
  /** E33: after a verified tier, freeze its contracts (E30) and advance the program. */
  auto?: boolean;
  now?: () => Date;
  signal?: AbortSignal;
  /** Per-gate timeout for tier gates without `timeout_seconds` (default 5 min). */
  gateTimeoutMs?: number;
  sandbox?: boolean;
  events?: GateEventSink;
  /** Called after each merge commit and after each record write (crash tests kill the process here). */
  afterMerge?: (event: TierMergeProgressEvent) => void | Promise<void>;
  /** Remove each merged IMPL's worktree and branch once the tier is verified (default true). */
  removeMerged?: boolean;
  /** Called after every step (the CLI prints progress to stderr). */
  onStep?: (step: StepResult) => void;
}

/** How one IMPL of the tier stands before anything is changed. */
interface ImplPlan {
  slug: string;
  branch: string;
  worktreePath: string;
  action: 'merge' | 'already-merged' | 'no-branch';
  tip?: string;
  note?: string;
  /** The IMPL doc, when found. */
  docPath?: string;
  doc?: ImplManifest;
  /** doc-complete: state COMPLETE · finished: every wave verified, to be closed · program-complete: no doc, status complete. */
  readiness: 'doc-complete' | 'finished' | 'program-complete' | 'not-ready';
  reasons: string[];
}

const finalizeFailedCode = 'N002_FINALIZE_WAVE_FAILED';
/** An IMPL branch of the tier changes something under docs/PROGRAM/ (X23-05). */
export const programManifestChangedCode = 'N096_PROGRAM_MANIFEST_CHANGED_BY_IMPL';
/**
 * A PROGRAM manifest's path, any case (a case-insensitive file system makes `docs/program/` the same directory):
 * under `docs/PROGRAM/`, or the legacy `docs/PROGRAM-<slug>.yaml` that list-programs reads too (X24-04).
 */
export function isProgramManifestPath(file: string): boolean {
  return /^docs\/program(\/|-[^/]*$)/i.test(file);
}

/**
 * E28B/E29/E30/E33/P5: closes a program tier.
 *
 * 1. Preflight, nothing changed yet: every IMPL of the tier must be finished — its IMPL doc
 *    COMPLETE, or every wave verified and every agent complete (it is closed in step 4), or (no
 *    doc) `complete` in the PROGRAM — else `N039_VERIFY_TIERS_INCOMPLETE` (exit 1). An IMPL that
 *    still needs merging must have its IMPL branch (`G003_COMMIT_MISSING`, exit 2).
 * 2. Merge each IMPL branch into the main line in tier order (`git merge --no-ff -m "Merge program
 *    tier N impl <slug>: <branch>"`), skipping tips already in its history. Crash-resumable: an
 *    interrupted merge of ours is aborted, merged tips are skipped, progress is recorded under
 *    `<git common dir>/polywave/` (see tier-merge.ts). A conflict stops here (exit 1).
 * 3. The tier gate (E29) on the merged main line; the IMPLs about to be closed count as complete.
 *    A failure stops here (exit 1): no IMPL doc is closed and no status is set.
 * 4. Close the finished IMPL docs (E15/E18, close-impl; one commit for the tier's closes), set every tier IMPL's program status to
 *    `complete` (and the program state to TIER_VERIFIED when this is the current tier) and commit
 *    the PROGRAM manifest (`chore: finalize tier N`).
 * 5. Remove the merged IMPL worktrees (only clean ones) and branches (`branch -d`: only merged ones).
 * 6. With `auto`: freeze the tier's contracts (E30) and move the program to the next tier
 *    (TIER_EXECUTING) — or report `program_complete` after the last tier (E33).
 *
 * Every step is idempotent: a re-run after a crash at any point finishes with the same tree and
 * each IMPL merged exactly once. Bad input throws a coded PolywaveError (exit 2) before anything
 * is changed.
 */
export async function finalizeTier(options: FinalizeTierOptions): Promise<FinalizeTierResult> {
  const loaded = await loadProgramTier(options.programPath, options.tier);
  const checkout = await openMainCheckout(options.repoRoot, options.env);
  const now = options.now ?? (() => new Date());
  const recordPath = tierMergeRecordPath(checkout.commonDir, loaded.programSlug, loaded.tier);
  const result: FinalizeTierResult = {
    tier_number: loaded.tier,
    impls_closed: [],
    impls_skipped: [],
    merge_results: {},
    state_advanced: false,
    target_branch: checkout.branch,
    target_before: checkout.head,
    target_after: checkout.head,
    merged_count: 0,
    cleanup: [],
    record_path: recordPath,
    warnings: [],
    steps: [],
    success: false,
  };
  const record = (step: string, status: StepStatus, detail: string, started: number, data?: unknown) => {
    const entry: StepResult = { step, status, detail, ...(data !== undefined ? { data } : {}), duration_ms: Math.round(performance.now() - started) };
    result.steps.push(entry);
    options.onStep?.(entry);
  };
  const fail = (code: string, message: string) => {
    result.errors = [...(result.errors ?? []), { code, message, severity: 'error' }];
  };

  // 1. Preflight (reads only).
  let started = performance.now();
  const plans = await planTier(loaded, checkout, recordPath);
  const missingBranches = plans.filter((plan) => plan.action === 'no-branch' && plan.readiness !== 'doc-complete' && plan.readiness !== 'program-complete');
  if (missingBranches.length > 0) {
    throw new PolywaveError({
      code: 'G003_COMMIT_MISSING',
      message: `IMPL branch missing for ${missingBranches.map((plan) => `${plan.slug} (${plan.branch})`).join(', ')}: its work is not in ${checkout.branch} and the branch does not exist — run create-program-worktrees and the IMPL's waves, or restore the branch; nothing was changed`,
      exitCode: 2,
    });
  }
  const notReady = plans.filter((plan) => plan.readiness === 'not-ready');
  for (const plan of plans) result.merge_results[plan.slug] = { wave: loaded.tier, merges: [] };
  if (notReady.length > 0) {
    const message = `tier ${loaded.tier} is not finished: ${notReady.map((plan) => `${plan.slug}: ${plan.reasons.join('; ')}`).join(' | ')} — nothing was merged`;
    fail('N039_VERIFY_TIERS_INCOMPLETE', message);
    record('preflight', 'failed', message, started);
    return result;
  }
  // P4/X23-05: the PROGRAM manifests are the orchestrator's alone. An IMPL branch that changes anything under
  // docs/PROGRAM/ (an agent given the running PROGRAM's file by its Scout — its frozen-contract record, its tier gate —
  // or a new PROGRAM marked approved by nobody) is refused before anything merges.
  const touching: string[] = [];
  for (const plan of plans) {
    if (plan.action !== 'merge' || plan.tip === undefined) continue;
    const changed = await checkout.git.run(['diff', '--name-only', '--no-renames', '-z', `${checkout.head}...${plan.tip}`], { allowExitCodes: [128] });
    const files = changed.exitCode === 0 ? changed.stdout.split('\0').filter((file) => file !== '' && isProgramManifestPath(file)) : [];
    if (changed.exitCode !== 0) touching.push(`${plan.slug} (${plan.branch}: its changes could not be listed)`);
    else if (files.length > 0) touching.push(`${plan.slug} (${plan.branch}: ${files.slice(0, 5).join(', ')}${files.length > 5 ? `, … ${files.length - 5} more` : ''})`);
  }
  if (touching.length > 0) {
    const message = `an IMPL branch changes the PROGRAM manifests, which only the orchestrator writes: ${touching.join(' | ')} — nothing was merged; revert those changes on the branch (or re-plan the IMPL without them) and re-run`;
    fail(programManifestChangedCode, message);
    record('preflight', 'failed', message, started);
    return result;
  }
  record('preflight', 'success', plans.map((plan) => `${plan.slug}: ${plan.action === 'merge' ? `merge ${short(plan.tip)}` : plan.action}${plan.readiness === 'finished' ? ' (to close)' : ''}`).join(', '), started);

  // 2. Merges, in tier order.
  started = performance.now();
  // A git process of a killed run may have left index.lock in the main checkout ("stash failed" on every merge).
  const staleLock = await removeStaleIndexLock(checkout.commonDir);
  if (staleLock) result.warnings.push(`removed ${staleLock}, left by a git process of a killed run (no process had it open)`);
  const interrupted = await abortInterruptedTierMerge(checkout, new Set(plans.flatMap((plan) => (plan.tip ? [plan.tip] : []))));
  if (interrupted.foreign !== undefined) {
    const message = `a merge is in progress in ${checkout.root} (MERGE_HEAD ${short(interrupted.foreign)} is not an IMPL branch of tier ${loaded.tier}); finish it or run \`git merge --abort\`, then re-run`;
    fail('G002_MERGE_CONFLICT', message);
    record('merge', 'failed', message, started);
    return result;
  }
  if (interrupted.aborted) result.warnings.push('an interrupted merge of an IMPL branch (left by a killed run) was aborted and is redone');
  else {
    const restored = await restoreTornTierMerge(checkout, new Set(plans.flatMap((plan) => (plan.tip ? [plan.tip] : []))));
    if (restored.length > 0) result.warnings.push(`files a killed merge had written before it recorded the merge were put back (each held an IMPL branch's committed content): ${restored.join(', ')}`);
  }
  const merge = await mergeTierBranches({
    checkout,
    programSlug: loaded.programSlug,
    tier: loaded.tier,
    plan: plans.map((plan) => ({ implSlug: plan.slug, branch: plan.branch, action: plan.action, ...(plan.tip ? { tip: plan.tip } : {}), ...(plan.note ? { note: plan.note } : {}) })),
    recordPath,
    now,
    ...(options.afterMerge ? { afterMerge: options.afterMerge } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  for (const outcome of merge.outcomes) result.merge_results[outcome.agent] = { wave: loaded.tier, merges: [outcome] };
  result.merged_count = merge.merged;
  result.target_after = merge.head;
  if (!merge.success) {
    const failed = merge.outcomes.find((outcome) => !outcome.success && outcome.status !== 'not-attempted') ?? merge.outcomes.find((outcome) => !outcome.success)!;
    fail(failed.status === 'conflict' ? 'G002_MERGE_CONFLICT' : finalizeFailedCode, `merge ${failed.branch}: ${failed.error ?? failed.status}`);
    record('merge', 'failed', failed.error ?? failed.status, started, merge.outcomes);
    return result;
  }
  record('merge', 'success', `${merge.merged} merged, ${merge.outcomes.length - merge.merged} skipped into ${checkout.branch} (${short(merge.head)})`, started);

  // 3. Tier gate (E29) on the merged main line.
  started = performance.now();
  const finished = new Set(plans.filter((plan) => plan.readiness === 'finished').map((plan) => plan.slug));
  const gate = await runLoadedTierGate(loaded, checkout, {
    finishedSlugs: finished,
    ...(options.env ? { env: options.env } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.gateTimeoutMs !== undefined ? { gateTimeoutMs: options.gateTimeoutMs } : {}),
    ...(options.sandbox !== undefined ? { sandbox: options.sandbox } : {}),
    ...(options.events ? { events: options.events } : {}),
    now,
  });
  result.tier_gate_result = gate;
  if (!gate.passed) {
    const message = `tier gate: ${gate.reason ?? 'did not pass'} — nothing was marked complete`;
    fail((gate.p2_violations ?? []).length > 0 ? 'P2_FROZEN_CONTRACT_CHANGED' : 'N016_TIER_GATE_FAILED', message);
    record('tier_gate', 'failed', message, started);
    return result;
  }
  record('tier_gate', 'success', `${gate.gate_results.length} tier gate(s) passed`, started);

  // 4. Close the finished IMPL docs, mark the tier complete in the PROGRAM, commit it.
  started = performance.now();
  const date = now().toISOString().slice(0, 10);
  // The main checkout's git port for the root (its repository layout is already known: no
  // rev-parse per IMPL); a port of its own for any other directory, as closeImpl would make.
  const closeGitAt = (directory: string) => (path.resolve(directory) === checkout.root ? checkout.git : createGit(directory, options.env ? { env: options.env } : {}));
  // Each IMPL is marked, archived and recorded in CONTEXT.md in tier order (CONTEXT.md's entries
  // keep that order), then ONE commit holds the tier's closes: one set of hooks and one commit
  // on the serial path instead of one per IMPL. A crash before the commit re-runs the closes
  // (each step is idempotent) and commits them then.
  // An IMPL doc already COMPLETE goes through close-impl again too (every step is skipped when
  // done): a crash after it was marked, before the tier's close commit, left its archive and
  // CONTEXT.md uncommitted, and this run commits them.
  const closedPaths: string[] = [];
  const closing: string[] = [];
  // What every close asks git first — the checked-out branch (the tier's merges kept it) and the
  // worktree list — read once for the tier: the closes do not commit in between, and each removes
  // only its own IMPL's stale worktrees, which the next IMPL's close does not look at.
  let known: { branch: string | undefined; worktrees: readonly WorktreeEntry[] } | undefined;
  for (const plan of plans) {
    if ((plan.readiness !== 'finished' && plan.readiness !== 'doc-complete') || plan.docPath === undefined) {
      result.impls_skipped.push(plan.slug);
      continue;
    }
    try {
      known ??= { branch: checkout.branch, worktrees: await checkout.git.worktreeList() };
      const closed = await closeImpl({ implPath: plan.docPath, date, repoDir: checkout.root, gitAt: closeGitAt, commit: false, known, ...(options.env ? { env: options.env } : {}), ...(options.events ? { events: options.events, ...(loaded.manifest.program_slug ? { program: loaded.manifest.program_slug } : {}) } : {}) });
      closing.push(plan.slug);
      closedPaths.push(...closed.commit_paths);
      if (plan.readiness === 'finished' || closed.steps.some((step) => step.status === 'success')) result.impls_closed.push(plan.slug);
      else result.impls_skipped.push(plan.slug);
      for (const warning of closed.warnings) result.warnings.push(`close ${plan.slug}: ${warning}`);
    } catch (error) {
      const message = `close IMPL ${plan.slug}: ${errorText(error)}`;
      fail(PolywaveError.isInstance(error) ? error.code : 'N037_MARK_COMPLETE_FAILED', message);
      record('close_impls', 'failed', message, started);
      return result;
    }
  }
  if (closing.length > 0) {
    try {
      const sha = await commitClosedImpls(checkout.git, { root: checkout.root, paths: closedPaths, message: `chore: close-impl ${closing.join(', ')} [polywave:complete]` });
      if (sha !== null) result.close_commit = sha;
    } catch (error) {
      const message = `commit the closed IMPL docs (${closing.join(', ')}): ${errorText(error)} — re-run finalize-tier to finish`;
      fail(PolywaveError.isInstance(error) ? error.code : 'N037_MARK_COMPLETE_FAILED', message);
      record('close_impls', 'failed', message, started);
      return result;
    }
  }
  record('close_impls', result.impls_closed.length > 0 ? 'success' : 'skipped', result.impls_closed.length > 0 ? `closed ${result.impls_closed.join(', ')}` : 'every IMPL doc was already closed', started);

  started = performance.now();
  // TIER_VERIFIED (E29) when this run completes the current tier: its IMPLs were not all
  // `complete` in the PROGRAM yet and every earlier tier is. The state goes first, so a re-run
  // after a crash between the two writes still sees the statuses to finish.
  const status = programStatus(loaded.manifest, docStates(plans));
  const earlierComplete = status.tier_statuses.filter((tier) => tier.number < loaded.tier).every((tier) => tier.complete);
  const firstCompletion = loaded.slugs.some((slug) => loaded.manifest.impls.find((impl) => impl.slug === slug)?.status !== 'complete');
  try {
    const previousState = loaded.manifest.state;
    if (firstCompletion && !earlierComplete) {
      result.warnings.push(`program state left at ${previousState ?? '(none)'}: an earlier tier is not complete (P3)`);
    } else if (firstCompletion && previousState !== 'TIER_VERIFIED' && previousState !== 'COMPLETE') {
      try {
        await setProgramState(loaded.programPath, 'TIER_VERIFIED');
        result.program_state = { previous: previousState, current: 'TIER_VERIFIED' };
      } catch (error) {
        result.warnings.push(`program state left at ${previousState ?? '(none)'}: ${errorText(error)}`);
      }
    }
    await setProgramImplStatuses(loaded.programPath, loaded.slugs, 'complete');
    result.manifest_commit = await commitProgramManifest(checkout, loaded.programPath, `chore: finalize tier ${loaded.tier}`, result.warnings);
    result.state_advanced = true;
  } catch (error) {
    const message = `update the PROGRAM manifest: ${errorText(error)}`;
    fail(PolywaveError.isInstance(error) ? error.code : 'N046_WRITE_MANIFEST_FAILED', message);
    record('mark_complete', 'failed', message, started);
    return result;
  }
  record('mark_complete', 'success', `tier ${loaded.tier} IMPLs complete in ${path.basename(loaded.programPath)}${result.manifest_commit ? ` (${short(result.manifest_commit)})` : ' (already committed)'}`, started);

  // 5. The merged IMPL worktrees and branches.
  if (options.removeMerged !== false) {
    started = performance.now();
    result.cleanup = await removeMergedImplBranches(checkout, plans, options.env);
    const kept = result.cleanup.filter((item) => !item.branch_deleted);
    record('cleanup', kept.length > 0 ? 'warning' : 'success', result.cleanup.length === 0 ? 'nothing to remove' : result.cleanup.map((item) => `${item.impl_slug}: ${item.detail}`).join('; '), started);
  }

  // 6. E30 + E33.
  if (options.auto) {
    started = performance.now();
    result.advance = await advanceTier(loaded, checkout, options);
    const status: StepStatus = result.advance.errors && result.advance.errors.length > 0 ? 'warning' : 'success';
    record('advance', status, result.advance.program_complete ? 'last tier verified: program complete (run mark-program-complete)' : result.advance.advanced_to_next ? `advanced to tier ${result.advance.next_tier}` : `not advanced: ${(result.advance.errors ?? []).join('; ') || 'human review required'}`, started);
  }
  result.success = true;
  return result;
}

/** Where each IMPL of the tier stands: its branch, its doc and whether it is finished. */
async function planTier(loaded: LoadedTier, checkout: MainCheckout, recordPath: string): Promise<ImplPlan[]> {
  const targets = programTargets(loaded, checkout.root);
  // The tips, and those already merged into HEAD (`for-each-ref --merged`: one process for every
  // IMPL, not a `merge-base --is-ancestor` each); a tip counts as merged when both answers name it.
  const branches = targets.map((target) => target.branch);
  const [docs, tips, mergedTips, recorded] = await Promise.all([
    readProgramImplDocs(checkout.root, loaded.manifest),
    branchTips(checkout.git, branches),
    branchTips(checkout.git, branches, { mergedInto: checkout.head }),
    readTierMergeRecord(recordPath),
  ]);
  // Each IMPL's plan on its own (reads only: its doc, its branch tip, ancestry checks), all at once.
  return Promise.all(targets.map(async (target): Promise<ImplPlan> => {
    const slug = target.agent;
    const doc = docs.get(slug);
    const entry = loaded.manifest.impls.find((impl) => impl.slug === slug);
    const plan: ImplPlan = { slug, branch: target.branch, worktreePath: target.path, action: 'no-branch', readiness: 'not-ready', reasons: [] };
    if (doc?.manifest) {
      plan.docPath = doc.path;
      plan.doc = doc.manifest;
      if ((doc.manifest.state ?? '').trim() === 'COMPLETE') plan.readiness = 'doc-complete';
      else {
        const readiness = closeReadiness(doc.manifest);
        if (readiness.finished) plan.readiness = 'finished';
        else plan.reasons.push(...readiness.reasons);
      }
    } else if (doc) {
      plan.reasons.push(`IMPL doc ${doc.path} does not parse: ${doc.parseError ?? 'not a manifest'}`);
    } else if (entry?.status === 'complete') {
      plan.readiness = 'program-complete';
    } else {
      plan.reasons.push(`no IMPL doc found (docs/IMPL/IMPL-${slug}.yaml or complete/) and its program status is ${entry?.status ?? 'undefined'}`);
    }
    const tip = tips.get(target.branch);
    if (tip !== undefined) {
      plan.tip = tip;
      plan.action = mergedTips.get(target.branch) === tip ? 'already-merged' : 'merge';
    } else {
      // The branch is gone: fine when the record shows its tip merged (a finished earlier run removed it).
      const merged = recorded.filter((item) => item.impl_slug === slug);
      for (const item of merged.reverse()) {
        if (await checkout.git.isAncestor(item.tip, checkout.head).catch(() => false)) {
          plan.tip = item.tip;
          plan.action = 'already-merged';
          break;
        }
      }
      if (plan.action === 'no-branch') plan.note = plan.readiness === 'program-complete' || plan.readiness === 'doc-complete' ? 'no IMPL branch (the IMPL was complete without one)' : 'branch not found';
    }
    return plan;
  }));
}

function docStates(plans: readonly ImplPlan[]): Map<string, string | undefined> {
  return new Map(plans.flatMap((plan) => (plan.doc ? [[plan.slug, plan.doc.state] as const] : [])));
}

/**
 * Commits the PROGRAM manifest alone on the main line (hooks skipped: the orchestrator's own
 * bookkeeping). Null when it has nothing to commit; a manifest outside the repository is left
 * uncommitted with a warning.
 */
async function commitProgramManifest(checkout: MainCheckout, programPath: string, message: string, warnings: string[]): Promise<string | null> {
  const relative = insideRoot(checkout.root, path.resolve(programPath));
  if (relative === undefined) {
    warnings.push(`${programPath} is outside ${checkout.root}: not committed`);
    return null;
  }
  const status = await checkout.git.run(['status', '--porcelain', '--untracked-files=all', '--', relative]);
  if (status.stdout.trim() === '') return null;
  await checkout.git.add([relative]);
  return checkout.git.commit({ message, paths: [relative], env: { ...mainCommitEnvironment }, noVerify: true });
}

/**
 * After the tier is verified: each merged IMPL's worktree is removed when it holds no uncommitted
 * change (plain `git worktree remove`, never forced) and its branch with `branch -d` (git refuses
 * an unmerged one) — only when the branch tip is still in the main line's history.
 */
async function removeMergedImplBranches(checkout: MainCheckout, plans: readonly ImplPlan[], env: TierOptions['env']): Promise<TierCleanupOutcome[]> {
  // The tips, and which of them HEAD contains (one `for-each-ref --merged=HEAD` for all, not a `merge-base --is-ancestor` each).
  const branches = plans.map((plan) => plan.branch);
  const [entries, tips, mergedTips] = await Promise.all([checkout.git.worktreeList(), branchTips(checkout.git, branches), branchTips(checkout.git, branches, { mergedInto: 'HEAD' })]);
  const gitAt = (directory: string): Git => createGit(directory, env ? { env } : {});
  // Each IMPL's worktree on its own (reads, then `git worktree remove` of a different worktree:
  // nothing shared), all IMPLs at once; the branches after, one `branch -d` at a time (ref locks).
  const work = await Promise.all(
    plans.map(async (plan): Promise<{ outcome: TierCleanupOutcome; tip: string | undefined; done: boolean } | undefined> => {
      const tip = tips.get(plan.branch);
      const entry = entries.find((candidate) => candidate.branch === plan.branch);
      if (tip === undefined && entry === undefined) return undefined;
      const outcome: TierCleanupOutcome = { impl_slug: plan.slug, branch: plan.branch, worktree_path: entry?.path ?? null, worktree_removed: false, branch_deleted: false, detail: '' };
      if (tip !== undefined && mergedTips.get(plan.branch) !== tip) {
        outcome.detail = `kept: ${plan.branch} has commits that are not in ${checkout.branch}`;
        return { outcome, tip, done: true };
      }
      if (entry !== undefined) {
        if (!entry.prunable) {
          const changes = await worktreeChanges(gitAt(entry.path)).catch((error: unknown) => [`(cannot read its status: ${errorText(error)})`]);
          if (changes.length > 0) {
            outcome.detail = `kept: worktree ${entry.path} has uncommitted changes (${changes.slice(0, 5).join(', ')}${changes.length > 5 ? ', …' : ''})`;
            return { outcome, tip, done: true };
          }
        }
        try {
          if (entry.prunable) {
            // Half-removed by a killed run (its .git file gone: `git worktree remove` refuses it). The
            // branch is merged (checked above): drop the stale registration and what is left of the directory.
            await checkout.git.worktreePrune();
            await rm(entry.path, { recursive: true, force: true });
          } else await checkout.git.worktreeRemove(entry.path);
          outcome.worktree_removed = true;
        } catch (error) {
          outcome.detail = `kept: git worktree remove ${entry.path} refused: ${errorText(error)}`;
          return { outcome, tip, done: true };
        }
      }
      return { outcome, tip, done: false };
    }),
  );
  // `.claude/worktrees/polywave/program/<program>/` and the levels above, once nothing is left in them.
  const removedParents = new Set(work.flatMap((item) => (item?.outcome.worktree_removed && item.outcome.worktree_path ? [path.dirname(item.outcome.worktree_path)] : [])));
  for (const parent of removedParents) await removeEmptyDirectories(parent, path.join(checkout.root, '.claude', 'worktrees'));
  const outcomes: TierCleanupOutcome[] = [];
  for (const item of work) {
    if (item === undefined) continue;
    const { outcome, tip } = item;
    outcomes.push(outcome);
    if (item.done) continue;
    if (tip !== undefined) {
      try {
        await checkout.git.deleteMergedBranch(outcome.branch);
        outcome.branch_deleted = true;
      } catch (error) {
        outcome.detail = `branch kept: git branch -d ${outcome.branch} refused: ${errorText(error)}`;
        continue;
      }
    }
    outcome.detail = `${outcome.worktree_removed ? 'worktree removed, ' : ''}${outcome.branch_deleted ? 'branch deleted (merged)' : 'no branch'}`;
  }
  return outcomes;
}

/** E30 + E33: freeze the tier's contracts; then the next tier (TIER_EXECUTING) or program complete. */
async function advanceTier(loaded: LoadedTier, checkout: MainCheckout, options: FinalizeTierOptions): Promise<TierAdvanceResult> {
  const advance: TierAdvanceResult = { tier_number: loaded.tier, advanced_to_next: false, requires_review: false, program_complete: false };
  let freeze: Awaited<ReturnType<typeof freezeContracts>>;
  try {
    freeze = await freezeContracts({ programPath: loaded.programPath, repoRoot: checkout.root, tier: loaded.tier, ...(options.env ? { env: options.env as NodeJS.ProcessEnv } : {}) });
  } catch (error) {
    advance.requires_review = true;
    advance.errors = [`freeze-contracts: ${errorText(error)}`];
    return advance;
  }
  advance.freeze_result = freeze;
  const freezeErrors = (freeze as { success?: boolean; errors?: unknown[] }).errors ?? [];
  if ((freeze as { success?: boolean }).success === false) {
    advance.requires_review = true;
    advance.errors = freezeErrors.map((item) => (typeof item === 'string' ? item : JSON.stringify(item)));
    return advance;
  }
  const numbers = loaded.manifest.tiers.map((tier) => tier.number).filter((number): number is number => typeof number === 'number' && number > loaded.tier).sort((a, b) => a - b);
  const next = numbers[0];
  if (next === undefined) {
    advance.program_complete = true;
    // The freeze record (frozen_at_tier, frozen_commit, frozen_blob) belongs in the main line too.
    advance.commit_sha = await commitProgramManifest(checkout, loaded.programPath, `chore: freeze program contracts of tier ${loaded.tier}`, []).catch((error: unknown) => {
      advance.errors = [`commit the freeze record: ${errorText(error)}`];
      return null;
    });
    return advance;
  }
  try {
    await setProgramState(loaded.programPath, 'TIER_EXECUTING');
    advance.commit_sha = await commitProgramManifest(checkout, loaded.programPath, `chore: advance program ${loaded.programSlug} to tier ${next}`, []);
    advance.advanced_to_next = true;
    advance.next_tier = next;
  } catch (error) {
    advance.requires_review = true;
    advance.errors = [`advance to tier ${next}: ${errorText(error)}`];
  }
  return advance;
}
