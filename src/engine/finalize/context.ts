import type { GateJob, GateJobResult } from '../../dispatch/dispatcher.js';
import type { EngineRunOptions } from '../run-options.js';
import type { GoGateResult } from '../../gates/go-compat.js';
import type { Git, WorktreeEntry } from '../../git/git-port.js';
import type { FailureDecision } from '../../protocol/e19.js';
import type { ImplParseResult } from '../../protocol/parse-impl.js';
import type { YamlEdit } from '../../protocol/yaml/index.js';
import type { Agent, CompletionReport, ImplManifest, MergeState } from '../../protocol/schema/impl-schema.js';
import type { CleanupResult } from '../cleanup.js';
import type { MergeAgentsResult, MergeProgressEvent } from '../merge.js';
import type { StepResult } from '../step.js';
import type { CallerCascadeError, VerifyBuildData } from '../verify-build.js';
import type { DiffEntry } from './git-batch.js';
import type { FinalizeTamperState } from './tamper-step.js';

/** Options of finalize-wave (and of the single-purpose commands built from its steps). */
export interface FinalizeWaveOptions extends EngineRunOptions {
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  wave: number;
  /** The primary repository's root. Default: the repository holding the manifest. */
  repoDir?: string;
  /** P5: branch to merge into (default: the main checkout's current branch). */
  mergeTarget?: string;
  /** E11a: the branches were merged by hand; run only the post-merge steps. */
  skipMerge?: boolean;
  /**
   * Issue 11: the changes the tamper check finds since prepare-wave's record are the caller's own
   * (e.g. the manifest corrected after a BLOCKED wave): list them, record the repository as it is
   * now (its hooks included) and go on. A main checkout holding foreign changes still refuses.
   */
  acceptChanges?: boolean;
  /**
   * Other manifests the orchestrator writes in the main checkout while this wave runs (a PROGRAM
   * tier: the PROGRAM manifest and the tier's other IMPLs): not foreign changes for the dirty check.
   */
  orchestratorFiles?: string[];
  /** Ref prefixes other orchestrated work moves meanwhile (kept in a record finalize-wave writes itself). */
  concurrentRefs?: string[];
  /** Run every check, write nothing: no manifest edits, no merges, no cleanup. */
  dryRun?: boolean;
  /**
   * Issue 13: commit the state change (the IMPL manifest) in the main checkout after a verified
   * wave, leaving a clean tree. Default true; never in a PROGRAM tier (`concurrentRefs`).
   */
  commitState?: boolean;
  /** Bypass the E38 gate cache for the pre-merge gates (post-merge gates never use it). */
  noCache?: boolean;
  /** Issue 13: an agent whose writes the jail refused blocks the merge (default: a warning). */
  strictOwnership?: boolean;
  /** E20: stubs fail the wave instead of being informational. */
  requireNoStubs?: boolean;
  /** E25: integration gaps fail the wave instead of being informational. */
  enforceIntegration?: boolean;
  /** Timeout of each verify-build command (ms). */
  buildTimeoutMs?: number;
  /** Agents whose pre-merge gates run at once (default 2). */
  gateConcurrency?: number;
  /** Issue 17 (`dispatch.gates: "workers"`): runs one agent's pre-merge gates on a worker instead of here. */
  remoteGates?: (job: GateJob) => Promise<GateJobResult>;
  /** Called after each merge commit and log write (the CLI's crash-test hook). */
  afterMerge?: (event: MergeProgressEvent) => void | Promise<void>;
}

/** A repository taking part in the wave. */
export interface FinalizeRepo {
  /** '.' for the primary repository, else the `repo:` key (the Go result map keys). */
  key: string;
  root: string;
  /** Git of the main checkout. */
  git: Git;
  primary: boolean;
  /** Branch the wave merges into. */
  targetBranch: string;
  /** Checkout where the target branch is checked out (the main checkout, or another worktree). */
  targetDir: string;
  targetGit: Git;
  /** A scratch worktree finalize created for the target (removed at the end). */
  scratchTarget?: string;
  /** Target tip when finalize started. */
  targetTip: string;
  /** `git worktree list` when finalize started (the agents' worktrees; finalize adds none of theirs). */
  worktrees?: readonly WorktreeEntry[];
  /** The wave's base commit in this repository. */
  base?: string;
  /** Where `base` came from (for messages). */
  baseSource?: string;
}

/** One agent of the wave, with what finalize learned about it. */
export interface FinalizeAgent {
  id: string;
  data: Agent;
  repo: FinalizeRepo;
  /** The agent's branch: the E5 name, or the legacy name when only that exists. */
  branch: string;
  worktreePath: string;
  /** The worktree is registered at its E5 path on the branch. */
  worktree: boolean;
  /** Branch tip, when the branch exists. */
  tip?: string;
  report?: CompletionReport;
  commitCount?: number;
  /** `git diff base..tip`, from one batched diff-tree. */
  diff?: DiffEntry[];
  /** The tip is already in the target's history (E9). */
  merged?: boolean;
}

/** One agent's E7/E19 outcome when its report is partial or blocked. */
export interface AgentFailure {
  agent: string;
  status: string;
  failure_type?: string;
  notes?: string;
  /** The E19 / E19.1 decision for the orchestrator. */
  decision: FailureDecision;
}

/** The `verify-commits` JSON per repository (Go `VerifyCommitsData` plus ours). */
export interface VerifyCommitsData {
  base_commit: string;
  agents: Array<{ agent: string; branch: string; commit_count: number; has_commits: boolean; tip?: string; already_merged?: boolean; cross_repo?: boolean }>;
}

/** How this run treats the wave. */
export type FinalizeMode = 'full' | 'skip-merge' | 'already-merged' | 'solo';

/**
 * The finalize-wave JSON: the Go `FinalizeWaveResult` keys (single-repo maps keyed by ".") — and,
 * unlike Go (which prints `null` on any failure), printed on failure too, with every step so far.
 */
export interface FinalizeWaveResult {
  wave: number;
  cross_repo: boolean;
  mode: FinalizeMode;
  dry_run: boolean;
  impl_path: string;
  slug: string;
  merge_target: Record<string, string>;
  verify_commits: Record<string, VerifyCommitsData>;
  collision_reports?: Record<string, unknown>;
  conflict_report?: unknown;
  stub_report?: { hits: unknown[] };
  stub_table?: string;
  gate_results: Record<string, Array<GoGateResult & { agent?: string }>>;
  integration_report?: unknown;
  wiring_report?: unknown;
  integration_action_required: boolean;
  wiring_gaps?: string[];
  merge_result: Record<string, MergeAgentsResult | { wave: number }>;
  verify_build: Record<string, VerifyBuildData>;
  caller_cascade_errors?: CallerCascadeError[];
  caller_cascade_only?: boolean;
  cleanup_result: Record<string, CleanupResult>;
  /** E7: agents whose report is partial or blocked, with the E19 decision. */
  blocked_agents?: AgentFailure[];
  /** Commands that recover work not reachable from the target (E9). */
  recovery?: string[];
  build_passed: boolean;
  /** The manifest's state after this run. */
  state: string;
  merge_state?: string;
  final_wave: boolean;
  /** The final wave is verified: close-impl may move the IMPL to COMPLETE. */
  complete_ready: boolean;
  steps: StepResult[];
  /** The step that stopped the run, with its detail. */
  failed_step?: { step: string; detail: string; code?: string };
  success: boolean;
}

/** State shared by the steps of one finalize-wave run. */
export interface FinalizeContext {
  options: FinalizeWaveOptions;
  implPath: string;
  wave: number;
  now: () => Date;
  /** Git for a directory, with the pinned configuration (hooks only from the verified snapshot; see check-tamper). */
  gitAt: (directory: string) => Git;
  /** Git without the pinned configuration (to ask git where the repository's own hooks are). */
  rawGitAt: (directory: string) => Git;
  env: Readonly<Record<string, string | undefined>> | undefined;
  dryRun: boolean;
  primary: FinalizeRepo;
  repos: FinalizeRepo[];
  /** The manifest as read when the run started (load-manifest takes it; later reads go to the file). */
  loading?: Promise<{ text?: string; parsed: ImplParseResult }>;
  parsed?: ImplParseResult;
  /** The manifest's text as load-manifest read it. */
  manifestText?: string;
  /** Tamper record, check and pinned configuration (issue 11; see finalize/tamper-step.ts). */
  tamper: FinalizeTamperState;
  manifest?: ImplManifest;
  slug: string;
  /** Index of the wave in the manifest's `waves` list (for edits). */
  waveIndex: number;
  agents: FinalizeAgent[];
  mode: FinalizeMode;
  /** The state the manifest had when finalize started (after load). */
  initialState: string;
  /** Set by a step that blocks the wave: the pipeline stops and the IMPL goes to BLOCKED. */
  block?: { reason: string; mergeState?: MergeState };
  /** Reference index built once per run (E25 / E35). */
  referenceIndex?: unknown;
  /**
   * Report fields for the manifest (stub_reports, integration_reports, …), written together with
   * the next state change — one locked manifest edit instead of one per report.
   */
  pendingEdits: Array<{ edit: YamlEdit; what: string }>;
  /** Every agent's diff and each target's, fetched once (see loadDiffs). */
  diffs?: Promise<Map<string, DiffEntry[]>>;
  result: FinalizeWaveResult;
}

/** Requires a loaded manifest (steps after load). */
export function manifestOf(context: FinalizeContext): ImplManifest {
  if (!context.manifest) throw new Error('manifest not loaded');
  return context.manifest;
}

export { errorText, listForDetail, short } from '../step-text.js';

/** Agents still to be merged (branch present, not yet in the target). */
export function agentsWithBranches(context: FinalizeContext): FinalizeAgent[] {
  return context.agents.filter((agent) => agent.tip !== undefined);
}
