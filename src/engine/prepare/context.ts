import type { EngineRunOptions } from '../run-options.js';
import type { Git, WorktreeEntry } from '../../git/git-port.js';
import type { ImplParseResult } from '../../protocol/parse-impl.js';
import type { Agent, ImplManifest } from '../../protocol/schema/impl-schema.js';
import type { StepResult } from '../step.js';
import type { HookInstallResult } from '../isolation-hook.js';
import type { EnsuredWorktree, WorktreeInfo } from '../worktrees.js';

/** Options of prepare-wave (and of the commands built from its steps). */
export interface PrepareWaveOptions extends EngineRunOptions {
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  wave: number;
  /**
   * The primary repository's root. Default: the top level of the repository holding the
   * manifest (`<root>/docs/IMPL/IMPL-<slug>.yaml`).
   */
  repoDir?: string;
  /** P5: branch the wave merges into; worktrees start from its tip (default: HEAD). */
  mergeTarget?: string;
  /**
   * Added to every agent's `POLYWAVE_PORT` (`worktree_setup.base_port` + this + the agent's place
   * in the wave). A PROGRAM tier gives each IMPL running at once its own block of ports.
   */
  portOffset?: number;
  /** Commit dirty protocol-owned files (IMPL, docs/IMPL/**, docs/CONTEXT.md, .polywave-state/**). Default true (as Go). */
  commitState?: boolean;
  /**
   * A PROGRAM tier: the state files stay uncommitted in the main checkout (the wave branches from
   * its IMPL branch, and main must not move while the tier's IMPLs run); no failure for them.
   */
  leaveStateUncommitted?: boolean;
  /** Ref prefixes other orchestrated work moves while this wave runs (recorded for the tamper check). */
  concurrentRefs?: string[];
  /** Bypass the E38 gate cache for the baseline gates. */
  noCache?: boolean;
  /** E37: write a synthetic PASS critic report when the critic gate would block. */
  skipCritic?: boolean;
  /**
   * Issue 11, E9 re-entry: what the tamper check finds changed since the wave was first prepared
   * is the caller's own (e.g. the ownership corrected after a BLOCKED wave): list it and go on
   * (the record is taken again at the end).
   */
  acceptChanges?: boolean;
  /**
   * Go `--commit-baseline`: commit every dirty file of the main checkout (user files too, never
   * runtime state) as "chore: fix baseline for wave N" before the wave, instead of refusing.
   */
  commitBaseline?: boolean;
  /** Issue 13: prepare a wave that is already merged and verified again (`--rerun`); refused (WAVE_ALREADY_VERIFIED) without it. */
  rerun?: boolean;
  /** Concurrent `git worktree add` processes (default: idle CPUs, 1–8). */
  concurrency?: number;
  /** Issue 13: `--no-workspace-setup` (false) skips the worktree setup (copies, setup commands, shared dependencies). */
  workspaceSetup?: boolean;
  /** A22-23: the agents run as jobs on workers (run-wave `--dispatch redis://…`), which set their worktrees up: no setup here (deferred). */
  setupOnWorkers?: boolean;
  /** Issue 13: `--no-gowork` (false) skips the go.work the worktree setup writes for multi-module Go repositories. */
  goWork?: boolean;
}

/** One repository taking part in the wave (the primary one, or a sibling for cross-repo agents). */
export interface RepoContext {
  /** Repository key as written in the manifest (`repo:`), '' for the primary repository. */
  key: string;
  root: string;
  git: Git;
  primary: boolean;
  /** Current branch of the main checkout (undefined when detached). */
  currentBranch?: string;
  /** Branch the wave merges into here: the merge target, else the current branch. */
  targetBranch?: string;
  /** Commit every agent branch of this repository starts from. */
  base?: string;
  hookInstall?: HookInstallResult;
  /** Current `worktree list` (set by stale_cleanup when it changed nothing; saves a git call). */
  worktreeEntries?: WorktreeEntry[];
}

/** An agent's worktree target together with its repository. */
export interface AgentTarget extends WorktreeInfo {
  repoContext: RepoContext;
  agentData: Agent;
}

/** Per-agent brief metadata (the Go `AgentBriefInfo` keys, empty optional ones omitted). */
export interface AgentBriefInfo {
  agent: string;
  brief_path: string;
  brief_length: number;
  journal_dir: string;
  /** Number of owned files (an int, as in Go). */
  files_owned: number;
  repo?: string;
  merge_target?: string;
  journal_context_available?: boolean;
  journal_context_file?: string;
  worktree_env_path?: string;
  ownership_path?: string;
}

/** The prepare-wave JSON (Go `PrepareWaveResult`), printed on success and on failure. */
export interface PrepareWaveResult {
  wave: number;
  worktrees: WorktreeInfo[];
  agent_briefs: AgentBriefInfo[];
  steps: StepResult[];
  success: boolean;
  original_branch?: string;
}

/** How the E2 freeze is handled this run. */
export type FreezeMode = 'record' | 'enforce' | 'refreeze';

/** State shared by the steps of one prepare-wave run. */
export interface PrepareContext {
  options: PrepareWaveOptions;
  implPath: string;
  wave: number;
  now: () => Date;
  /** Git for a directory, with the pinned configuration once tamper_check has set it (issue 11). */
  gitAt: (directory: string) => Git;
  /** Git without pinned configuration (installing and verifying the guard asks git where the hooks really are). */
  rawGitAt: (directory: string) => Git;
  /** Pinned git configuration per main-checkout root (`core.hooksPath`…), set by tamper_check; none before. */
  pins?: Map<string, Record<string, string>>;
  primary: RepoContext;
  repos: RepoContext[];
  parsed?: ImplParseResult;
  manifest?: ImplManifest;
  slug: string;
  /** Index of the wave in the manifest's `waves` list (for edits). */
  waveIndex: number;
  agents: Agent[];
  targets: AgentTarget[];
  /** Wave-N agent branches that already exist (E9 re-entry), branch → tip. */
  existingBranches: Map<string, string>;
  freezeMode: FreezeMode;
  /** Where the primary base came from (for messages). */
  baseSource: string;
  ensured: EnsuredWorktree[];
  result: PrepareWaveResult;
  /** Read-only run (pre-wave-validate): steps that would write report what they would do. */
  readOnly: boolean;
}

/** Requires a loaded manifest (steps after load_manifest). */
export function manifestOf(context: PrepareContext): ImplManifest {
  if (!context.manifest) throw new Error('manifest not loaded');
  return context.manifest;
}

export { errorText, listForDetail, short } from '../step-text.js';
