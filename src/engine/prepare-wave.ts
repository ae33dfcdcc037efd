import path from 'node:path';
import { isBlocking, type Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { implSlugFromPath } from '../protocol/names.js';
import { validateImpl } from '../protocol/validate-impl.js';
import { editImpl } from '../store/manifest-file.js';
import { ownedFiles, renderAgentBrief, writeAgentFiles } from './brief.js';
import { initJournal, recoverJournalContext } from './journal.js';
import {
  errorText,
  listForDetail,
  manifestOf,
  type AgentBriefInfo,
  type PrepareContext,
  type PrepareWaveOptions,
  type PrepareWaveResult,
  type RepoContext,
} from './prepare/context.js';
import {
  criticVerdictStep,
  disjointOwnershipStep,
  freezeCheckStep,
  loadManifestStep,
  repoMatchStep,
  scaffoldStep,
  stateCheckStep,
  waveSequencingStep,
  wiringOwnershipStep,
} from './prepare/preflight-steps.js';
import { gitConfigCheckStep, recordTamperStep, tamperCheckStep } from './prepare/tamper-steps.js';
import { configTrustStep, soloBaseStep } from './prepare/config-trust-step.js';
import { typeCollisionsPreflightStep } from './prepare/type-collisions-step.js';
import { baselineGatesStep, staleCleanupStep, workingDirStep } from './prepare/tree-steps.js';
import { pinsForDirectory } from './tamper-record.js';
import {
  activateWaveStep,
  createWorktreesStep,
  extractBriefsStep,
  freezeRecordStep,
  installHooksStep,
  verifyHooksStep,
  verifyWorktreesStep,
  writeStateFile,
} from './prepare/worktree-steps.js';
import { worktreeSetupStep } from './prepare/worktree-setup.js';
import { detectResumable } from './resume-detect.js';
import { StepRecorder, type StepDefinition, type StepResult } from './step.js';
import { canonicalPath, type WorktreeInfo } from './worktrees.js';
import { assertNotNestedRepository } from '../git/nested-repos.js';
import { distrustSearchRoot } from '../sandbox/search-path.js';

export type { AgentBriefInfo, PrepareWaveOptions, PrepareWaveResult } from './prepare/context.js';

/** resume-detect at the start of a wave: a warning per interrupted IMPL; never fatal. */
const resumeDetectionStep: StepDefinition<PrepareContext> = {
  name: 'resume_detection',
  advisory: true,
  async run(context) {
    const found = await detectResumable({ git: context.primary.git, gitAt: context.gitAt, checkDirty: false });
    const withOrphans = found.filter((item) => item.orphaned_worktrees.length > 0);
    if (withOrphans.length === 0) return { status: 'success', detail: found.length === 0 ? 'no interrupted IMPLs' : `${found.length} IMPL(s) in progress, no orphaned worktrees` };
    return {
      status: 'warning',
      detail: `orphaned worktrees: ${withOrphans.map((item) => `${item.slug} wave ${item.wave} (${item.orphaned_worktrees.length}) — ${item.suggested_action}`).join('; ')}`,
      data: withOrphans,
    };
  },
};

/**
 * The prepare-wave pipeline (reference §2.2, with the Go bugs fixed): pre-flight checks first
 * (nothing is written until they pass, except the operator-requested critic skip and the
 * state commit), then worktrees, hooks, briefs, and finally the wave is armed.
 */
export const prepareWaveSteps: ReadonlyArray<StepDefinition<PrepareContext>> = [
  resumeDetectionStep,
  loadManifestStep,
  stateCheckStep,
  repoMatchStep,
  configTrustStep('prepare-wave'),
  disjointOwnershipStep,
  waveSequencingStep,
  criticVerdictStep,
  scaffoldStep,
  wiringOwnershipStep,
  typeCollisionsPreflightStep,
  freezeCheckStep,
  tamperCheckStep,
  workingDirStep,
  staleCleanupStep,
  baselineGatesStep,
  installHooksStep,
  freezeRecordStep,
  createWorktreesStep,
  verifyWorktreesStep,
  verifyHooksStep,
  worktreeSetupStep,
  extractBriefsStep,
  activateWaveStep,
  recordTamperStep,
];

function defaultGitFactory(env: PrepareWaveOptions['env']): (directory: string) => Git {
  return (directory) => createGit(directory, env ? { env } : {});
}

/** Checks the options and builds the run's context (throws coded errors for bad input, exit 2). */
async function createContext(options: PrepareWaveOptions, readOnly: boolean): Promise<PrepareContext> {
  if (!Number.isInteger(options.wave) || options.wave < 1) {
    throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--wave is required and must be a positive integer (got ${options.wave})` });
  }
  if (options.implPath.trim() === '') throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'the IMPL path is required' });
  const implPath = await canonicalPath(options.implPath);
  const rawGitAt = options.gitAt ?? defaultGitFactory(options.env);
  // Hook-running git commands take the pinned configuration once tamper_check has set it (issue 11).
  const late: { context?: PrepareContext } = {};
  const gitAt = (directory: string): Git => rawGitAt(directory).withConfig(() => {
    const pins = late.context?.pins;
    return pins ? (pinsForDirectory(pins, directory) ?? {}) : {};
  });
  const start = options.repoDir ?? path.dirname(implPath);
  const startGit = gitAt(start);
  let top: string;
  let currentBranch: string | undefined;
  try {
    [top, , currentBranch] = await Promise.all([startGit.topLevel(), startGit.assertVersion(), startGit.currentBranch()]);
  } catch (error) {
    if (PolywaveError.isInstance(error) && error.code === 'G000_NOT_A_REPOSITORY') {
      throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${start} is not inside a git repository (pass --repo-dir)`, cause: error });
    }
    throw error;
  }
  const root = await canonicalPath(top);
  // X13 #1/#2: a repository an agent nested in the checkout (docs/.git) is refused before its hooks are pinned.
  await assertNotNestedRepository(root, options.env);
  const git = root === start ? startGit : gitAt(root);
  const primary: RepoContext = { key: '', root, git, primary: true, ...(currentBranch ? { currentBranch } : {}) };
  const context: PrepareContext = {
    options,
    implPath,
    wave: options.wave,
    now: options.now ?? (() => new Date()),
    gitAt,
    rawGitAt,
    primary,
    repos: [primary],
    slug: implSlugFromPath(implPath),
    waveIndex: -1,
    agents: [],
    targets: [],
    existingBranches: new Map(),
    freezeMode: 'record',
    baseSource: 'HEAD',
    ensured: [],
    result: { wave: options.wave, worktrees: [], agent_briefs: [], steps: [], success: false },
    readOnly,
  };
  late.context = context;
  return context;
}

/** Runs steps in order; the first failed (non-advisory) step stops unless `continueOnFailure`. */
async function runSteps(
  context: PrepareContext,
  steps: ReadonlyArray<StepDefinition<PrepareContext>>,
  options: { command: string; continueOnFailure?: (step: StepDefinition<PrepareContext>) => boolean },
): Promise<{ steps: StepResult[]; failed: boolean }> {
  const recorder = new StepRecorder((step) => {
    context.options.onStep?.(step);
    context.options.events?.emit({ v: 1, type: 'step-end', command: options.command, slug: context.slug, wave: context.wave, step });
  });
  let failed = false;
  for (const step of steps) {
    if (context.options.signal?.aborted) {
      await recorder.run({ name: step.name, run: () => ({ status: 'failed', detail: `aborted: ${errorText(context.options.signal?.reason ?? 'signal')}` }) }, context);
      failed = true;
      break;
    }
    const outcome = await recorder.run(step, context);
    if (outcome?.status === 'failed' && !step.advisory) {
      failed = true;
      if (!options.continueOnFailure?.(step)) break;
    }
  }
  return { steps: recorder.steps, failed };
}

/**
 * prepare-wave: pre-flight (validation, state, repos, I1, I3, E37, I2, E35, E41, E2, dirty tree, E4a,
 * E21A), then the isolation guard, the E2 freeze record, the worktrees (parallel, E9 re-entrant),
 * their verification, the E23 briefs and journals, and the active-wave marker. Returns the Go
 * `PrepareWaveResult` also on failure (`success: false`, the steps so far); throws only for bad
 * input (coded, exit 2). Never prints; progress goes to `onStep` and the event bus.
 */
export async function prepareWave(options: PrepareWaveOptions): Promise<PrepareWaveResult> {
  // X42-11/12: no host program is looked up inside the repository (an agent can write it).
  distrustSearchRoot(path.dirname(path.resolve(options.implPath)));
  const context = await createContext(options, false);
  options.events?.emit({ v: 1, type: 'wave-prepare-start', slug: context.slug, wave: context.wave });
  const run = await runSteps(context, prepareWaveSteps, { command: 'prepare-wave' });
  context.result.steps = run.steps;
  context.result.success = !run.failed;
  if (context.result.success) {
    // Advisory: close-impl reads original_branch from it; a write failure does not fail the wave.
    await writeStateFile(context).catch((error: unknown) => {
      const step: StepResult = { step: 'write_state_file', status: 'warning', detail: `could not write prepare-result.json: ${errorText(error)}` };
      context.result.steps.push(step);
      options.onStep?.(step);
    });
  }
  options.events?.emit({ v: 1, type: 'wave-prepare-end', slug: context.slug, wave: context.wave, success: context.result.success });
  return context.result;
}

/** The `pre-wave-validate` JSON. */
export interface PreWaveValidation {
  ready: boolean;
  wave: number;
  validation: { valid: boolean; error_count: number; errors: Finding[]; warning_count: number; warnings: Finding[] };
  /** E35 Layer 3A over the declared wiring (the Go key). */
  e35_gaps: { passed: boolean; gaps: string[] };
  checks: Array<{ name: string; status: StepResult['status']; message: string }>;
}

/**
 * `pre-wave-validate`: every read-only pre-flight check of prepare-wave (validation, state,
 * repositories, I1, I3, E37, I2, E35, E2 freeze, dirty tree, stale worktrees as a dry run) —
 * all of them, not stopping at the first failure. Writes nothing.
 */
export async function preWaveValidate(options: PrepareWaveOptions): Promise<PreWaveValidation> {
  const context = await createContext(options, true);
  const steps = [loadManifestStep, stateCheckStep, repoMatchStep, disjointOwnershipStep, waveSequencingStep, criticVerdictStep, scaffoldStep, wiringOwnershipStep, typeCollisionsPreflightStep, freezeCheckStep, workingDirStep, staleCleanupStep, baselineGatesStep];
  const essential = new Set(['load_manifest', 'repo_match']);
  const run = await runSteps(context, steps, { command: 'pre-wave-validate', continueOnFailure: (step) => !essential.has(step.name) });
  const findings: Finding[] = context.parsed ? [...context.parsed.findings, ...(context.manifest ? validateImpl({ manifest: context.manifest, locate: context.parsed.locate }) : [])] : [];
  const errors = findings.filter(isBlocking);
  const warnings = findings.filter((finding) => !isBlocking(finding));
  const wiring = run.steps.find((step) => step.step === 'wiring_ownership');
  const gaps = ((wiring?.data as { gaps?: string[] } | undefined)?.gaps ?? []).slice();
  return {
    ready: !run.failed,
    wave: context.wave,
    validation: { valid: errors.length === 0, error_count: errors.length, errors, warning_count: warnings.length, warnings },
    e35_gaps: { passed: gaps.length === 0, gaps },
    checks: run.steps.map((step) => ({ name: step.step, status: step.status, message: step.detail })),
  };
}

/** Result of {@link createWaveWorktrees}. */
export interface CreateWorktreesResult {
  worktrees: WorktreeInfo[];
  steps: StepResult[];
  success: boolean;
}

/**
 * `create-worktrees`: only the worktree part of prepare-wave (manifest, repositories, I1, E2
 * freeze check, isolation guard, freeze record, parallel E9-re-entrant creation, verification).
 */
export async function createWaveWorktrees(options: PrepareWaveOptions): Promise<CreateWorktreesResult> {
  const context = await createContext(options, false);
  const steps = [loadManifestStep, stateCheckStep, repoMatchStep, configTrustStep('create-worktrees'), disjointOwnershipStep, freezeCheckStep, tamperCheckStep, installHooksStep, freezeRecordStep, createWorktreesStep, verifyWorktreesStep, verifyHooksStep, worktreeSetupStep, recordTamperStep];
  const run = await runSteps(context, steps, { command: 'create-worktrees' });
  return { worktrees: context.result.worktrees, steps: run.steps, success: !run.failed };
}

/** Options of {@link prepareAgent}. */
export interface PrepareAgentOptions extends PrepareWaveOptions {
  agent: string;
  /** Solo agent (E4 exception for one-agent waves): the brief goes to `.polywave-state/<slug>/wave{N}/agent-{ID}/brief.md`. */
  noWorktree?: boolean;
}

/** The `prepare-agent` JSON (Go `PrepareAgentResult` keys, plus worktree/branch when one exists). */
export interface PrepareAgentResult {
  brief_path: string;
  brief_length: number;
  journal_dir: string;
  cursor_path: string;
  index_path: string;
  results_dir: string;
  agent_id: string;
  wave: number;
  files_owned: number;
  context_source: 'prepared-brief';
  journal_context_available: boolean;
  journal_context_file: string;
  ownership_path: string;
  worktree_path?: string;
  branch?: string;
  worktree_env_path?: string;
  steps: StepResult[];
  success: boolean;
}

/**
 * `prepare-agent`: one agent's brief, ownership record and journal. With a worktree (default)
 * the agent's worktree is ensured exactly as prepare-wave does it (guard, freeze, E9 reuse) and
 * the files go into it; with `noWorktree` (solo waves) the brief goes to the journal directory.
 * Records the E44 `context_source: prepared-brief` on the agent.
 */
export async function prepareAgent(options: PrepareAgentOptions): Promise<PrepareAgentResult> {
  const context = await createContext(options, false);
  const selectAgent: StepDefinition<PrepareContext> = {
    name: 'select_agent',
    run(current) {
      const found = current.agents.find((agent) => agent.id === options.agent);
      if (found === undefined) {
        return { status: 'failed', detail: `agent ${options.agent} is not in wave ${current.wave} (agents: ${listForDetail(current.agents.map((agent) => agent.id ?? ''))})` };
      }
      current.agents = [found];
      current.targets = current.targets.filter((target) => target.agent === options.agent);
      current.repos = current.repos.filter((repo) => repo.primary || current.targets.some((target) => target.repoContext === repo));
      return { status: 'success', detail: `agent ${options.agent}: ${found.task?.split('\n')[0]?.slice(0, 80) ?? ''}` };
    },
  };
  const steps: Array<StepDefinition<PrepareContext>> = options.noWorktree
    ? [loadManifestStep, stateCheckStep, repoMatchStep, selectAgent, configTrustStep('prepare-agent'), gitConfigCheckStep, scaffoldStep, soloBaseStep]
    : [loadManifestStep, stateCheckStep, repoMatchStep, selectAgent, configTrustStep('prepare-agent'), disjointOwnershipStep, scaffoldStep, freezeCheckStep, tamperCheckStep, installHooksStep, freezeRecordStep, createWorktreesStep, verifyWorktreesStep, verifyHooksStep, worktreeSetupStep, extractBriefsStep, recordTamperStep];
  const run = await runSteps(context, steps, { command: 'prepare-agent' });
  const empty: PrepareAgentResult = {
    brief_path: '',
    brief_length: 0,
    journal_dir: '',
    cursor_path: '',
    index_path: '',
    results_dir: '',
    agent_id: options.agent,
    wave: options.wave,
    files_owned: 0,
    context_source: 'prepared-brief',
    journal_context_available: false,
    journal_context_file: '',
    ownership_path: '',
    steps: run.steps,
    success: false,
  };
  if (run.failed) return empty;

  const manifest = manifestOf(context);
  const target = context.targets[0]!;
  const journalRoot = target.repoContext.root;
  let info: AgentBriefInfo;
  const extra: Partial<PrepareAgentResult> = {};
  if (options.noWorktree) {
    const journal = await initJournal(journalRoot, context.slug, context.wave, options.agent);
    const recovered = await recoverJournalContext(journal, { completionReportWritten: manifest.completion_reports?.[options.agent] !== undefined });
    const brief = renderAgentBrief({
      manifest,
      implPath: context.implPath,
      wave: context.wave,
      agent: context.agents[0]!,
      ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}),
      ...(recovered.markdown ? { recoveredContext: recovered.markdown } : {}),
    });
    const owned = ownedFiles(manifest, context.wave, options.agent);
    const written = await writeAgentFiles({ dir: journal.dir, briefName: 'brief.md', brief, ownership: { agent: options.agent, wave: context.wave, impl_doc: context.implPath, owned_files: owned, repo_root: journalRoot } });
    info = {
      agent: options.agent,
      brief_path: written.brief_path,
      brief_length: written.brief_length,
      journal_dir: journal.dir,
      files_owned: owned.length,
      ...(recovered.available ? { journal_context_available: true, journal_context_file: recovered.file! } : {}),
      ownership_path: written.ownership_path,
    };
  } else {
    info = context.result.agent_briefs[0]!;
    extra.worktree_path = target.path;
    extra.branch = target.branch;
    if (info.worktree_env_path) extra.worktree_env_path = info.worktree_env_path;
  }

  // E44: the orchestrator records how the agent received its context.
  const recorded = [...run.steps];
  try {
    await editImpl(context.implPath, (parsed) => {
      const waves = (parsed.data as { waves?: Array<{ number?: unknown; agents?: Array<{ id?: unknown; context_source?: unknown }> }> } | null)?.waves ?? [];
      const waveIndex = waves.findIndex((wave) => wave?.number === context.wave);
      const agentIndex = waveIndex < 0 ? -1 : (waves[waveIndex]!.agents ?? []).findIndex((agent) => agent?.id === options.agent);
      if (agentIndex < 0 || waves[waveIndex]!.agents![agentIndex]!.context_source === 'prepared-brief') return { edits: [], outcome: undefined };
      return { edits: [{ path: ['waves', waveIndex, 'agents', agentIndex, 'context_source'], value: 'prepared-brief' }], outcome: undefined };
    });
    recorded.push({ step: 'context_source', status: 'success', detail: 'E44 context_source: prepared-brief recorded' });
  } catch (error) {
    recorded.push({ step: 'context_source', status: 'warning', detail: `could not record context_source: ${errorText(error)}` });
  }
  const journal = info.journal_dir;
  return {
    ...empty,
    brief_path: info.brief_path,
    brief_length: info.brief_length,
    journal_dir: journal,
    cursor_path: path.join(journal, 'cursor.json'),
    index_path: path.join(journal, 'index.jsonl'),
    results_dir: path.join(journal, 'tool-results'),
    files_owned: info.files_owned,
    journal_context_available: info.journal_context_available ?? false,
    journal_context_file: info.journal_context_file ?? '',
    ownership_path: info.ownership_path ?? '',
    ...extra,
    steps: recorded,
    success: true,
  };
}
