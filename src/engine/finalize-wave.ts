import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { implSlugFromPath } from '../protocol/names.js';
import { activityEvent } from '../protocol/e40.js';
import { loadImpl } from '../store/manifest-file.js';
import { absentBranchesStep } from './finalize/absent-branches.js';
import { cleanupStep, verifyManualMergeStep } from './finalize/cleanup-step.js';
import { commitStateStep } from './finalize/commit-state.js';
import { agentStatusesStep, completionReportsStep } from './finalize/completion-reports.js';
import { jailDenialsStep } from './finalize/denials-step.js';
import { errorText, type FinalizeContext, type FinalizeMode, type FinalizeRepo, type FinalizeWaveOptions, type FinalizeWaveResult } from './finalize/context.js';
import { inspectBranchesStep } from './finalize/inspect-branches.js';
import { validateIntegrationStep } from './finalize/integration.js';
import { validateWiringStep } from './finalize/wiring.js';
import { loadManifestStep } from './finalize/load-manifest.js';
import { markBlockedStep, markVerifiedStep, saveReportsStep } from './finalize/mark-state.js';
import { mergeStep } from './finalize/merge-step.js';
import { populateChecklistStep } from './finalize/populate-checklist.js';
import { cascadeHotfixStep, postMergeGatesStep } from './finalize/post-merge-gates.js';
import { configChangeStep } from './finalize/config-change-step.js';
import { attributesStep } from './finalize/attributes-step.js';
import { pinSandboxSettings } from '../sandbox/sandbox-settings.js';
import { preMergeGatesStep } from './finalize/pre-merge-gates.js';
import { predictConflictsStep } from './finalize/predict-conflicts.js';
import { scanStubsStep } from './finalize/scan-stubs.js';
import { createTamperState, pinsFor, tamperCheckStep } from './finalize/tamper-step.js';
import { gitConfigCheckStep, withGitConfigCheck } from './finalize/git-config-step.js';
import { releaseTargetCheckouts } from './finalize/target.js';
import { typeCollisionsStep } from './finalize/type-collisions.js';
import { verifyBuildStep } from './finalize/verify-build-step.js';
import { verifyCommitsStep } from './finalize/verify-commits.js';
import { StepRecorder, type StepDefinition, type StepResult } from './step.js';
import { canonicalPath } from './worktrees.js';
import type { CleanupResult } from './cleanup.js';
import type { MergeAgentsResult } from './merge.js';
import type { ConflictPrediction } from './finalize/predict-conflicts.js';
import type { CollisionReport, IntegrationReport, WiringReport } from '../analysis/index.js';

import type { VerifyCommitsData } from './finalize/context.js';
import { distrustSearchRoot } from '../sandbox/search-path.js';

export type { AgentFailure, FinalizeMode, FinalizeWaveOptions, FinalizeWaveResult, VerifyCommitsData } from './finalize/context.js';
export type { ConflictPrediction } from './finalize/predict-conflicts.js';

/** Checks before anything is merged (full mode), in the order of the protocol's Normal Pipeline. */
const preMergeSteps: ReadonlyArray<StepDefinition<FinalizeContext>> = [
  verifyCommitsStep, // 1   I5
  completionReportsStep, // 1.1 I4
  agentStatusesStep, // 1.2 E7 / E19
  jailDenialsStep, // 1.25 issue 13: writes the jail refused
  predictConflictsStep, // 1.3 E11 / I1
  attributesStep, // 1.35 I1 (X42-07): an agent's .gitattributes must not change how others' files are checked out
  typeCollisionsStep, // 1.5 E41
  scanStubsStep, // 2   E20
  preMergeGatesStep, // 3   E21
  validateIntegrationStep, // 3.5a E25 (informational unless enforceIntegration)
  validateWiringStep, // 3.5b E35 Layer 3B (informational)
];

/** From the merge to the end (steps 4–6). */
const mergeAndAfterSteps: ReadonlyArray<StepDefinition<FinalizeContext>> = [
  mergeStep, // 4    E9 / E12
  configChangeStep, // 4.1  issue 11: a merged polywave.config.json change to sandbox/setup/teardown blocks
  populateChecklistStep, // 4.5  M5
  verifyBuildStep, // 5    E10 / E13 (+ E47 classification)
  postMergeGatesStep, // 5.5  E21
  markVerifiedStep, // WAVE_VERIFIED, guard disarmed
  cleanupStep, // 6    E9 reachability, never forced
];

/** Post-merge steps only (skip-merge / already merged / solo). */
const postMergeSteps: ReadonlyArray<StepDefinition<FinalizeContext>> = [configChangeStep, populateChecklistStep, verifyBuildStep, postMergeGatesStep, markVerifiedStep, cleanupStep];

/** The finalize-wave pipeline for a mode (after load-manifest and check-absent-branches). */
export function finalizeSteps(mode: FinalizeMode): ReadonlyArray<StepDefinition<FinalizeContext>> {
  switch (mode) {
    case 'full':
      return [...preMergeSteps, ...mergeAndAfterSteps];
    case 'skip-merge':
      // A21-30: a merge made by hand (or by merge-agents) verifies only agents whose reports are complete.
      return [agentStatusesStep, verifyManualMergeStep, ...postMergeSteps];
    case 'already-merged':
      return [completionReportsStep, agentStatusesStep, ...postMergeSteps];
    case 'solo':
      // Issue 13: the solo agent's refused writes are shown too (--strict-ownership blocks before WAVE_VERIFIED).
      return [completionReportsStep, agentStatusesStep, jailDenialsStep, ...postMergeSteps];
  }
}

/** Steps run after a failure: the E47 report and the BLOCKED state. */
const failureSteps: ReadonlyArray<StepDefinition<FinalizeContext>> = [cascadeHotfixStep, markBlockedStep];

function emptyResult(options: FinalizeWaveOptions, implPath: string): FinalizeWaveResult {
  return {
    wave: options.wave,
    cross_repo: false,
    mode: 'full',
    dry_run: options.dryRun === true,
    impl_path: implPath,
    slug: '',
    merge_target: {},
    verify_commits: {},
    gate_results: {},
    integration_action_required: false,
    merge_result: {},
    verify_build: {},
    cleanup_result: {},
    build_passed: false,
    state: '',
    final_wave: false,
    complete_ready: false,
    steps: [],
    success: false,
  };
}

/**
 * Checks the options and builds the run's context: the primary repository (from `repoDir`, else
 * the repository holding the manifest). Throws coded errors (exit 2) for bad input only.
 */
export async function createFinalizeContext(options: FinalizeWaveOptions): Promise<FinalizeContext> {
  if (!Number.isInteger(options.wave) || options.wave < 1) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--wave is required and must be a positive integer (got ${options.wave})` });
  }
  if (options.implPath.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'the IMPL path is required' });
  const implPath = await canonicalPath(options.implPath);
  // The manifest is read and parsed while git finds the repository (load-manifest takes it).
  const manifest = loadImpl(implPath);
  manifest.catch(() => undefined);
  const rawGitAt = options.gitAt ?? ((directory: string): Git => createGit(directory, options.env ? { env: options.env } : {}));
  // Every git command of the run takes the pinned configuration: no hooks until check-tamper has
  // verified the recorded ones, then only those (issue 11).
  const tamper = createTamperState();
  const gitAt = (directory: string): Git => rawGitAt(directory).withConfig(() => pinsFor(tamper, directory));
  const start = options.repoDir ?? path.dirname(implPath);
  const startGit = gitAt(start);
  const [top] = await Promise.all([
    startGit.topLevel().catch((error: unknown) => {
      if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') {
        throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${start} is not inside a git repository (pass --repo-dir)` });
      }
      throw error;
    }),
    startGit.assertVersion(),
  ]);
  const root = await canonicalPath(top);
  const git = root === start ? startGit : gitAt(root);
  // Known from the rev-parse that found the top level (saves the tamper check one git process).
  tamper.commonDirs.set(root, path.resolve(top, await startGit.commonDir()));
  const primary: FinalizeRepo = { key: '.', root, git, primary: true, targetBranch: '', targetDir: root, targetGit: git, targetTip: '' };
  return {
    options,
    implPath,
    wave: options.wave,
    now: options.now ?? (() => new Date()),
    gitAt,
    rawGitAt,
    env: options.env,
    dryRun: options.dryRun === true,
    primary,
    repos: [primary],
    slug: implSlugFromPath(implPath),
    waveIndex: -1,
    agents: [],
    mode: 'full',
    initialState: '',
    pendingEdits: [],
    loading: manifest,
    tamper,
    result: emptyResult(options, implPath),
  };
}

/** The `failed_step` of the result, with the step's stable code when it reports one (e.g. TAMPER_DETECTED). */
function failedStepOf(step: StepResult): NonNullable<FinalizeWaveResult['failed_step']> {
  const code = (step.data as { code?: unknown } | undefined)?.code;
  return { step: step.step, detail: step.detail, ...(typeof code === 'string' ? { code } : {}) };
}

/** Runs `steps` in order until one fails (advisory steps never stop the run). */
async function runSteps(context: FinalizeContext, recorder: StepRecorder, steps: ReadonlyArray<StepDefinition<FinalizeContext>>): Promise<boolean> {
  try {
    for (const step of steps) {
      if (context.options.signal?.aborted) {
        await recorder.run({ name: step.name, run: () => ({ status: 'failed', detail: `aborted before this step: ${errorText(context.options.signal?.reason ?? 'signal')}` }) }, context);
        return false;
      }
      if (step.joinsBackground) await recorder.joinBackground();
      if (step.background?.(context)) {
        recorder.start(step, context);
        continue;
      }
      const outcome = await recorder.run(step, context);
      if (outcome?.status === 'failed' && !step.advisory) return false;
    }
    return true;
  } finally {
    await recorder.joinBackground();
  }
}

/**
 * Pins the sandbox settings of every repository of the wave to its wave base (load-manifest): the
 * primary's and, in a cross-repo wave, each sibling's (outside attack X9 #4). Returns the release.
 */
function pinWaveSandboxSettings(context: FinalizeContext): () => void {
  const releases: Array<() => void> = [];
  for (const repo of context.repos.length > 0 ? context.repos : [context.primary]) if (repo.base !== undefined) releases.push(pinSandboxSettings(repo.root, repo.base));
  return () => {
    for (const release of releases) release();
  };
}

/**
 * finalize-wave: verify → predict → gate → merge → verify the merge → mark → clean up, as named
 * steps (DESIGN §3), for one wave of an IMPL. Returns the result — with every step's status —
 * on success AND on failure (Go prints `null` on failure); throws only for bad input (coded,
 * exit 2). Never prints; progress goes to `onStep` and the event bus.
 *
 * Never loses work: nothing merges unless every pre-merge check passes (E7: no partial merges
 * from a known problem); a merge conflict aborts that merge and leaves the target as it was;
 * worktrees are removed without `--force` and branches with `-d` only, after proving their tips
 * are in the target; a crash mid-merge is finished by a re-run (E9).
 */
export async function finalizeWave(options: FinalizeWaveOptions): Promise<FinalizeWaveResult> {
  // X42-11/12: no host program is looked up inside the repository (an agent can write it).
  distrustSearchRoot(path.dirname(path.resolve(options.implPath)));
  const context = await createFinalizeContext(options);
  context.tamper.prefetch = true;
  const recorder = new StepRecorder((step: StepResult) => {
    options.onStep?.(step);
    options.events?.emit({ v: 1, type: 'step-end', command: 'finalize-wave', slug: context.slug, wave: context.wave, step });
  });
  let releasePin: (() => void) | undefined;
  try {
    // Issue 11 (X10 N2): no git config file of the main checkout in a working tree before any git
    // command of this run reads it (load-manifest already starts the tamper probe's `git status`).
    let ok = await runSteps(context, recorder, [gitConfigCheckStep, loadManifestStep]);
    // Every sandbox of this run (gates, verify-build, integration agent, teardown) takes the settings
    // of the wave's base commit, never of the merge it makes (outside attack X8 #4).
    if (ok) releasePin = pinWaveSandboxSettings(context);
    // ...and again with every repository and agent worktree the manifest names: check-tamper first refuses GIT_CONFIG_IN_WORKTREE.
    if (ok) ok = await runSteps(context, recorder, [withGitConfigCheck(tamperCheckStep)]);
    if (ok) ok = await runSteps(context, recorder, [absentBranchesStep]);
    if (ok) ok = await runSteps(context, recorder, finalizeSteps(context.mode));
    if (!ok && context.manifest) await runSteps(context, recorder, failureSteps);
    if (context.manifest) await runSteps(context, recorder, [saveReportsStep]);
    if (ok) await runSteps(context, recorder, [commitStateStep]);
  } finally {
    releasePin?.();
    await releaseTargetCheckouts(context);
  }
  const result = context.result;
  result.steps = recorder.steps;
  const failed = recorder.firstFailure;
  if (failed) result.failed_step = failedStepOf(failed);
  result.success = failed === undefined;
  // E40: the wave merged (and verified), or failed at a step.
  if (!context.dryRun) {
    options.events?.emit(
      result.success
        ? activityEvent('wave_merge', { slug: context.slug, wave: context.wave, details: `mode ${context.mode}; state ${result.state}` })
        : activityEvent('wave_failed', { slug: context.slug, wave: context.wave, details: `${result.failed_step?.step ?? 'finalize-wave'}: ${result.failed_step?.detail ?? 'failed'}` }),
    );
  }
  return result;
}

/** Outcome of {@link runFinalizeSteps}. */
export interface FinalizeStepsRun {
  context: FinalizeContext;
  result: FinalizeWaveResult;
  success: boolean;
}

/**
 * Runs load-manifest, then `steps` (stopping at the first failure), then `onFailure` steps when
 * something failed — the building block of the single-purpose commands (verify-commits,
 * predict-conflicts, merge-agents, …), which print their part of the result.
 */
export async function runFinalizeSteps(
  options: FinalizeWaveOptions,
  steps: ReadonlyArray<StepDefinition<FinalizeContext>>,
  settings: { command: string; onFailure?: ReadonlyArray<StepDefinition<FinalizeContext>>; tamperCheck?: boolean },
): Promise<FinalizeStepsRun> {
  const context = await createFinalizeContext(options);
  context.tamper.prefetch = settings.tamperCheck === true;
  const recorder = new StepRecorder((step: StepResult) => {
    options.onStep?.(step);
    options.events?.emit({ v: 1, type: 'step-end', command: settings.command, slug: context.slug, wave: context.wave, step });
  });
  let releasePin: (() => void) | undefined;
  try {
    let ok = await runSteps(context, recorder, settings.tamperCheck ? [gitConfigCheckStep, loadManifestStep] : [loadManifestStep]);
    if (ok) releasePin = pinWaveSandboxSettings(context);
    if (ok) ok = await runSteps(context, recorder, steps);
    if (!ok && context.manifest && settings.onFailure) await runSteps(context, recorder, settings.onFailure);
    if (context.manifest) await runSteps(context, recorder, [saveReportsStep]);
  } finally {
    releasePin?.();
    await releaseTargetCheckouts(context);
  }
  context.result.steps = recorder.steps;
  const failed = recorder.firstFailure;
  if (failed) context.result.failed_step = failedStepOf(failed);
  context.result.success = failed === undefined;
  return { context, result: context.result, success: failed === undefined };
}

/** The steps of a finished run (for the commands' `steps` key). */
function stepsOf(run: FinalizeStepsRun): StepResult[] {
  return run.result.steps;
}

/** `verify-commits`: I5 for every agent branch of the wave (Go `VerifyCommitsData`, primary repository). */
export async function verifyWaveCommits(options: FinalizeWaveOptions): Promise<VerifyCommitsData & { success: boolean; steps: StepResult[]; repos?: Record<string, VerifyCommitsData> }> {
  const run = await runFinalizeSteps(options, [verifyCommitsStep], { command: 'verify-commits' });
  const data: VerifyCommitsData = run.result.verify_commits[run.context.primary.key] ?? { base_commit: run.context.primary.base ?? '', agents: [] };
  let success = run.success;
  for (const agent of run.context.agents) {
    if (agent.tip !== undefined || !run.context.manifest) continue;
    data.agents.push({ agent: agent.id, branch: agent.branch, commit_count: 0, has_commits: false });
    success = false;
  }
  return { ...data, ...(run.context.repos.length > 1 ? { repos: run.result.verify_commits } : {}), success, steps: stepsOf(run) };
}

/** `predict-conflicts`: E11 from the agents' real diffs plus merge-tree (see predictConflicts). */
export async function predictWaveConflicts(options: FinalizeWaveOptions): Promise<ConflictPrediction & { success: boolean; steps: StepResult[] }> {
  const run = await runFinalizeSteps(options, [inspectBranchesStep, predictConflictsStep], { command: 'predict-conflicts' });
  const report = (run.result.conflict_report ?? {
    conflicts_detected: 0,
    blocking_findings: 0,
    conflicts: [],
    identical_edits: [],
    undeclared_modifications: [],
    report_mismatches: [],
    textual_conflicts: [],
    report_conflicts: [],
    agent_files: {},
  }) as ConflictPrediction;
  return { ...report, success: run.success, steps: stepsOf(run) };
}

/** `check-type-collisions`: E41 across the wave's branches (Go `{collisions, valid}`). */
export async function checkWaveCollisions(options: FinalizeWaveOptions): Promise<CollisionReport & { success: boolean; steps: StepResult[] }> {
  const run = await runFinalizeSteps(options, [typeCollisionsStep], { command: 'check-type-collisions' });
  const reports = (run.result.collision_reports ?? {}) as Record<string, CollisionReport>;
  const collisions = Object.values(reports).flatMap((report) => report.collisions);
  return { collisions, valid: collisions.length === 0, success: run.success, steps: stepsOf(run) };
}

/** `scan-stubs --append-impl --wave` without files: E20 over the wave's branches, stored in the manifest. */
export async function scanWaveStubs(options: FinalizeWaveOptions): Promise<{ hits: unknown[]; table: string; success: boolean; steps: StepResult[] }> {
  const run = await runFinalizeSteps(options, [inspectBranchesStep, scanStubsStep], { command: 'scan-stubs' });
  return { hits: run.result.stub_report?.hits ?? [], table: run.result.stub_table ?? '', success: run.success, steps: stepsOf(run) };
}

/**
 * `merge-agents`: the merge step alone (WAVE_MERGING, one --no-ff merge per agent, merge log,
 * E9 skips; a conflict sets BLOCKED). Follow with `finalize-wave --skip-merge` to verify.
 */
export async function mergeWave(options: FinalizeWaveOptions): Promise<{ result: MergeAgentsResult | undefined; next_state: string; success: boolean; steps: StepResult[] }> {
  // A21-30: E7 as in finalize-wave — an agent reporting partial or blocked (a withdrawn early report: its commits are
  // still on its local branch) is never merged, by this command either.
  const run = await runFinalizeSteps(options, [withGitConfigCheck(absentBranchesStep), agentStatusesStep, mergeStep], { command: 'merge-agents', onFailure: [markBlockedStep], tamperCheck: true });
  const result = run.result.merge_result[run.context.primary.key] as MergeAgentsResult | undefined;
  return { result, next_state: run.result.state, success: run.success, steps: stepsOf(run) };
}

/** `validate-integration`: E25 (+ E35 Layer 3B unless `wiring: false`) on the wave's merged result, stored in the manifest. */
export async function validateWaveIntegration(
  options: FinalizeWaveOptions,
  settings: { wiring?: boolean } = {},
): Promise<{ heuristic_report?: IntegrationReport; wiring_report?: WiringReport; valid: boolean; success: boolean; steps: StepResult[] }> {
  const steps = settings.wiring === false ? [inspectBranchesStep, validateIntegrationStep] : [inspectBranchesStep, validateIntegrationStep, validateWiringStep];
  const run = await runFinalizeSteps(options, steps, { command: 'validate-integration' });
  const heuristic = run.result.integration_report as IntegrationReport | undefined;
  const wiring = run.result.wiring_report as WiringReport | undefined;
  const valid = run.success && (heuristic?.valid ?? true) && (wiring?.valid ?? true);
  return { ...(heuristic ? { heuristic_report: heuristic } : {}), ...(wiring ? { wiring_report: wiring } : {}), valid, success: run.success, steps: stepsOf(run) };
}

/** `cleanup --wave`: remove the wave's worktrees and branches once their tips are in the target (never forced). */
export async function cleanupWaveWorktrees(options: FinalizeWaveOptions): Promise<{ result: CleanupResult | undefined; success: boolean; steps: StepResult[] }> {
  const run = await runFinalizeSteps(options, [cleanupStep], { command: 'cleanup' });
  const result = run.result.cleanup_result[run.context.primary.key];
  return { result, success: run.success && (result?.success ?? false), steps: stepsOf(run) };
}
