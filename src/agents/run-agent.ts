import { existsSync, lstatSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { JournalPaths } from '../engine/journal.js';
import { appendDenials, outOfScopeLine, ownershipDenials, type DenialRecord } from '../engine/jail-denials.js';
import { stateDirName } from '../engine/state-paths.js';
import { atomicWriteSequence, checkGuardedFile, guardFile, lastAtomicWrite, type FileGuard } from '../store/atomic-file.js';
import { withFileLock } from '../store/locked-write.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { hostHomeVariable } from '../git/harden.js';
import { moveToQuarantine } from '../git/quarantine-move.js';
import { gitlinkRepoSignatures, nestedRepoBaseline, quarantineGitlinkRepos, quarantineNewNestedRepos, type GitlinkRepoSignatures, type NestedRepoBaseline, type QuarantinedGitlinkRepo } from '../git/nested-repos.js';
import { ensureConfinedDirSync, realRootOf } from '../store/confined-write.js';
import { readAgentCliTemplates } from './agent-cli-templates.js';
import { loadBackend } from './backends/index.js';
import type { CliTemplate } from './backends/cli.js';
import {
  defaultAgentLimits,
  emptyUsage,
  type AgentBackend,
  type AgentEvent,
  type AgentLimits,
  type ToolDenial,
  type AgentOutcome,
  type AgentRole,
  type AgentRunRequest,
  type ModelSpec,
} from './contract.js';
import { createJail } from './jail/jail.js';
import { planFileEntries, planFileVariable, preparePlanRedirect, type PlanRedirect } from './plan-redirect.js';
import type { Jail, JailPolicy } from './jail/types.js';
import { createJournalRecorder } from './journal-recorder.js';
import { resolveModelSpec } from './model-spec.js';
import { buildAgentSandboxPlan } from './sandbox/agent-sandbox.js';
import { leftoverReason, quarantineNewSpecials, quarantineSoloLeftovers, soloLeftoverBaseline, soloLeftoverCode, untrackedBaseline, untrackedNotKept, withLeftovers, type SoloLeftover, type SoloLeftoverBaseline, type UntrackedBaseline } from '../git/solo-quarantine.js';
import { guardIgnoredPaths, ignoredQuarantineCode, type IgnoredGuard, type QuarantinedPath } from './sandbox/ignored-paths.js';
import { configFilesOf, realOrResolved, type SandboxPlan, type SandboxSettings } from '../sandbox/sandbox-plan.js';
import { sandboxStatus, type SandboxStatus } from '../sandbox/sandbox-status.js';
import { sandboxUnavailableError } from '../sandbox/sandbox-unavailable-error.js';
import { makeScratchDir, releaseScratchDir } from '../sandbox/scratch-dirs.js';
import { createToolExecutor, type ToolExecutor } from './sandbox/tool-executor.js';
import { bashEnvironment } from './tools/bash-tool.js';
import { timerDelay } from '../engine/timer-delay.js';

/** Options of {@link runAgent}. */
export interface RunAgentOptions {
  agentId: string;
  role: AgentRole;
  wave?: number;
  attempt?: number;
  /** A model string (`anthropic:claude-sonnet-4-5`, `script:…`) or a parsed spec. */
  model: string | ModelSpec | undefined;
  systemPrompt: string;
  prompt: string;
  cwd: string;
  branch?: string;
  baseCommit?: string;
  implPath?: string;
  policy: JailPolicy;
  limits?: Partial<AgentLimits>;
  /** The orchestrator's environment (read once by the CLI); the agent gets a copy with its own HOME/TMPDIR. */
  env: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  /** The agent's journal (E23A); tool calls of our own loops are appended there. */
  journal?: JournalPaths;
  reportCompletion?: AgentRunRequest['reportCompletion'];
  hasCompletionReport?: AgentRunRequest['hasCompletionReport'];
  outputSchema?: Record<string, unknown>;
  /** Use this backend instead of the one the model names (tests). */
  backend?: AgentBackend;
  /** Keep the per-agent scratch directory (HOME/TMPDIR) for debugging. */
  keepScratch?: boolean;
  /**
   * Run without the OS sandbox (`--unsafe-no-sandbox`): the jail's static checks only, with a
   * warning. Without it a model-backed agent refuses to start (SANDBOX_UNAVAILABLE) when the
   * sandbox cannot run here; a script agent runs unsandboxed with a notice.
   */
  unsafeNoSandbox?: boolean;
  /** Sandbox settings instead of those of polywave.config.json (tests). */
  sandboxSettings?: SandboxSettings;
  /**
   * Directories around the agent's root its sandbox hides whole, what appears there later too, but for its root
   * (writable) and the repository's git directory (read-only; its `worktrees/` shows the agent's own entry only):
   * a dispatch worker's `--dir`, where its other jobs' worktrees, journals, scripts and gate checkouts live.
   */
  sandboxHiddenAround?: readonly string[];
  /** `cli:<name>` command templates instead of polywave.config.json's `agent_clis` (tests). */
  cliTemplates?: Record<string, CliTemplate>;
}

/** How an agent run is confined, decided before anything starts. */
export type SandboxDecision = { sandboxed: true; status: SandboxStatus } | { sandboxed: false; status: SandboxStatus; reason: 'unsafe-no-sandbox' | 'unavailable-script'; message: string };

/**
 * Whether an agent on `backend` runs in the OS sandbox. Throws SANDBOX_UNAVAILABLE (exit 2) for a
 * model-backed agent when the sandbox cannot run and `unsafeNoSandbox` is not set; a script agent
 * (tests, the demo) then runs unsandboxed. `unsafeNoSandbox` always turns the sandbox off.
 */
export async function decideAgentSandbox(options: { backend: ModelSpec['backend']; unsafeNoSandbox?: boolean; env: Readonly<Record<string, string | undefined>> }): Promise<SandboxDecision> {
  const status = await sandboxStatus({ env: options.env });
  if (options.unsafeNoSandbox) {
    return { sandboxed: false, status, reason: 'unsafe-no-sandbox', message: `UNSAFE: running WITHOUT the OS sandbox (--unsafe-no-sandbox); only the static checks confine this agent${status.available ? '' : ` (the sandbox is unavailable: ${status.detail})`}` };
  }
  if (status.available) return { sandboxed: true, status };
  if (options.backend !== 'script') throw sandboxUnavailableError(status);
  return { sandboxed: false, status, reason: 'unavailable-script', message: `the OS sandbox is unavailable (${status.detail}); this script agent runs unsandboxed` };
}

/** What {@link runAgent} returns. */
export interface RunAgentResult {
  outcome: AgentOutcome;
  spec: ModelSpec;
  jail: Jail;
  /** The OS sandbox the agent ran in (undefined: unsandboxed, see {@link SandboxDecision}). */
  sandbox?: SandboxPlan;
}

/**
 * The environment an agent's processes get: the orchestrator's, with an isolated HOME and TMPDIR
 * (so nothing lands in the user's ~/.claude or /tmp), the user's git identity and npm cache kept
 * reachable, and the POLYWAVE_* variables of the worktree contract.
 */
export function agentEnvironment(options: {
  env: Readonly<Record<string, string | undefined>>;
  scratchDir: string;
  agentId: string;
  wave?: number;
  cwd: string;
  implPath?: string;
  branch?: string;
}): Record<string, string | undefined> {
  const { env } = options;
  const home = env.HOME ?? os.homedir();
  const globalGitConfig = env.GIT_CONFIG_GLOBAL ?? path.join(home, '.gitconfig');
  const result: Record<string, string | undefined> = {
    ...env,
    HOME: path.join(options.scratchDir, 'home'),
    TMPDIR: path.join(options.scratchDir, 'tmp'),
    // git run outside the sandbox with this environment reads the orchestrator's HOME, not the agent's (src/git/harden.ts)
    [hostHomeVariable]: home,
    POLYWAVE_AGENT_ID: options.agentId,
    POLYWAVE_AGENT_WORKTREE: options.cwd,
    POLYWAVE_WORKTREE_ROOT: options.cwd,
  };
  if (existsSync(globalGitConfig)) result.GIT_CONFIG_GLOBAL = globalGitConfig;
  result.npm_config_cache ??= path.join(home, '.npm');
  if (options.wave !== undefined) result.POLYWAVE_WAVE_NUMBER = String(options.wave);
  if (options.implPath) result.POLYWAVE_IMPL_PATH = options.implPath;
  if (options.branch) result.POLYWAVE_BRANCH = options.branch;
  delete result.CLAUDECODE;
  return result;
}

/**
 * Runs one agent on the backend its model names: builds the jail, an isolated scratch HOME/TMPDIR,
 * the OS sandbox plan (other worktrees from `git worktree list`, polywave.config.json's `sandbox`;
 * a `cli:<name>` model's template from its `agent_clis`, agents/agent-cli-templates.ts)
 * with the agent's tool executor inside it (stopped at the end), the journal recorder and the
 * wall-clock timeout, and resolves with an outcome — a backend that throws, a missing SDK or a
 * timeout is data (status + failure). The exceptions, thrown before anything is created:
 * SANDBOX_UNAVAILABLE (see {@link decideAgentSandbox}) and, for a cli agent, an invalid `agent_clis`
 * (N014_CONFIG_INVALID) or a repository git cannot read.
 * The timeout and the caller's abort both reach the backend through one signal; the outcome says
 * which (`timeout` vs `aborted`).
 */
export async function runAgent(options: RunAgentOptions): Promise<RunAgentResult> {
  const started = performance.now();
  const limits: AgentLimits = { ...defaultAgentLimits, ...options.limits };
  const spec = typeof options.model === 'object' ? options.model : resolveModelSpec(options.model, options.env);
  // Before anything is created: a model-backed agent without the sandbox refuses to start.
  const decision = await decideAgentSandbox({ backend: spec.backend, env: options.env, ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}) });
  // A cli agent's templates (`agent_clis`) come from the repository root's committed config, like the
  // sandbox settings; an invalid one refuses here (N014_CONFIG_INVALID), before anything is created.
  const cliTemplates = spec.backend === 'cli' && options.backend === undefined ? (options.cliTemplates ?? (await readAgentCliTemplates(options.cwd, options.env))) : undefined;
  const forward = options.onEvent ?? (() => {});
  // Issue 13: every refused tool call is kept (journal `denials.jsonl`, the report's out_of_scope_deps).
  const denied: DenialRecord[] = [];
  const onEvent = (event: AgentEvent): void => {
    if (event.type === 'tool-call-deny') denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: event.denial.tool, code: event.denial.code, reason: event.denial.reason, ...(event.denial.target ? { target: event.denial.target } : {}) });
    forward(event);
  };
  if (!decision.sandboxed) onEvent({ type: 'agent-log', level: decision.reason === 'unsafe-no-sandbox' ? 'warn' : 'info', message: decision.message });
  const jail = await createJail(options.policy, { env: options.env });
  // X8 #2c: the .git of every submodule path before the agent runs; a planted one is moved out after it.
  const rootGit = createGit(jail.root, { env: options.env });
  const gitlinkBaseline: GitlinkRepoSignatures | undefined = await gitlinkRepoSignatures(rootGit, jail.root).catch(() => undefined);
  // X28-03: submodule paths with no directory at all when the agent starts (one it makes there is moved out after it).
  const absentGitlinks = isMainCheckout(jail.root) && gitlinkBaseline ? [...gitlinkBaseline.keys()].filter((entry) => !existsSync(path.join(jail.root, entry))) : [];
  // The checkout's untracked files and uncommitted changes as the agent starts (kept to be put back after it); taken
  // before its sandbox is planned, which binds read-only the untracked files too large to keep. No catch here: the
  // leftover baseline below runs without it then (git could not list them), as before.
  const untrackedAtStart: UntrackedBaseline | undefined = isMainCheckout(jail.root) ? await untrackedBaseline(jail.root, { env: options.env }).catch(() => undefined) : undefined;
  // Under the scratch parent that every other agent's and gate's sandbox hides (outside attack #12).
  const scratchDir = await makeScratchDir(`polywave-agent-${options.agentId.replace(/[^A-Za-z0-9-]/g, '_')}-`);
  const home = path.join(scratchDir, 'home');
  const tmp = path.join(scratchDir, 'tmp');
  await Promise.all([mkdir(home, { recursive: true }), mkdir(tmp, { recursive: true })]);
  const env = agentEnvironment({ env: options.env, scratchDir, agentId: options.agentId, cwd: options.cwd, ...(options.wave !== undefined ? { wave: options.wave } : {}), ...(options.implPath ? { implPath: options.implPath } : {}), ...(options.branch ? { branch: options.branch } : {}) });
  // X43-19: the manifest and the other files the orchestrator writes while an agent in the main checkout runs, as they
  // are now; at the agent's stop each must hold the orchestrator's last write (or this text), or it is put back.
  const orchestratorFiles = orchestratorFilesAtStart(jail.root, options);
  let sandbox: SandboxPlan | undefined;
  let toolExecutor: ToolExecutor | undefined;
  let ignoredGuard: IgnoredGuard | undefined;
  // The Scout, critic and Planner read the checkout and write one plan (or nothing; I6): their sandbox makes the whole
  // checkout read-only but that file (outside attack X30: every after-run check of a writable checkout had a gap — a
  // deleted untracked file, a nested clone's .git, a FIFO, a chmod — and it could not tell your own edits meanwhile from
  // the agent's). Through polywave's own tool loop (ai-sdk, script), whose file tools write in place; and through
  // claude-code, whose sandbox holds only Bash (its file tools run in Claude Code's process, outside it, behind the
  // PreToolUse jail): its Bash gets the checkout read-only with no file of it writable (Claude Code writes a file by
  // renaming a new one over it, and refuses to write a file it has not read: the plan file is not made in advance).
  // The cli backends run the whole CLI in the sandbox (its file tools too, which also write by rename): the CLI writes
  // a copy of the plan in a directory of its own, which polywave puts in place after it (plan-redirect.ts).
  // Wherever it runs (outside attack X33-04/05/06/13: a subdirectory of the repository or a linked worktree of yours —
  // not the top of a main checkout — was writable to it, with no after-run check either).
  const readOnlyCheckout = decision.sandboxed && isCheckoutReader(options.role);
  // (made once every check that can refuse the agent has passed: X31-04 — an empty plan file stayed after a refusal)
  let planFiles: PlanFiles | undefined;
  let planRedirect: PlanRedirect | undefined;
  if (decision.sandboxed) {
    // A solo/integration agent works in the main checkout: the manifest the orchestrator writes stays
    // read-only. The Scout's job is to write that manifest (its jail keeps it to docs/IMPL/).
    // X43-19: bound by their directory where the agent owns nothing in it — the orchestrator saves them by renaming a new
    // file over the old, which a bind of the file itself no longer covers (the agent's next call wrote the manifest).
    const readOnly = options.role !== 'scout' && options.implPath && isInside(options.implPath, jail.root) ? enclosingReadOnly(jail.root, [options.implPath], options.policy.ownedFiles) : [];
    // An agent whose root holds polywave's state (solo, integration, scaffold, hotfix agents: the main
    // checkout) must not reach it: its own journal swapped for a symlink made the orchestrator append
    // to ~/.bashrc (outside attack X3 #21); gate cache, merge logs and markers live there too. Every
    // agent in the main checkout, the Scout, critic and Planner included (outside attack X27-10: the
    // Scout's bash wrote the gate cache, active-impl and another agent's journal context).
    const stateDir = path.join(jail.root, stateDirName);
    if ((options.journal && isInside(options.journal.dir, jail.root)) || readOnly.length > 0 || isMainCheckout(jail.root)) {
      ensureConfinedDirSync(stateDir, realRootOf(jail.root));
      readOnly.push(stateDir, ...configFilesOf(jail.root));
    }
    // Files the orchestrator writes while an agent in the main checkout runs (the PROGRAM manifest and the
    // other IMPL docs of a tier's concurrent Scouts): the audit leaves them out, so its sandbox must not let
    // it write them at all (outside attack X28-06: a tier Scout's bash rewrote the approved PROGRAM's tier
    // gate, unseen). Those that exist now are bound read-only; one created later is its own writer's.
    if (isMainCheckout(jail.root)) readOnly.push(...enclosingReadOnly(jail.root, existingRegularFiles(jail.root, options.policy.orchestratorPaths ?? []), options.policy.ownedFiles));
    // X28-03: a submodule path (a gitlink) is invisible to git status — files planted in an uninitialised one
    // (an empty directory, as a clone without --recurse-submodules leaves it) or in an initialised one (polywave's
    // git ignores submodules) were seen by no audit, and the user's own `npm test` ran them. Read-only in the
    // sandbox of an agent in the main checkout; one that did not exist is moved out if the agent makes it.
    if (isMainCheckout(jail.root) && gitlinkBaseline) readOnly.push(...existingDirectories(jail.root, [...gitlinkBaseline.keys()]));
    // X29-02: tracked files you marked --skip-worktree or --assume-unchanged are invisible to git status and diff, so
    // no check after the agent would see a change: read-only in the sandbox of an agent in the main checkout.
    if (isMainCheckout(jail.root)) {
      const hidden = existingRegularFiles(jail.root, await hiddenFromStatus(rootGit));
      // Each is a mount of its own: bubblewrap takes ~3,000 in all and 1,000 cost ~0.7 s per start. Past the limit the
      // agent is not started rather than run with some of them writable unseen.
      if (hidden.length > hiddenFromStatusLimit) {
        await releaseScratchDir(scratchDir);
        throw hiddenTooMany(hidden.length);
      }
      readOnly.push(...hidden);
    }
    // X46-05: a file of the checkout with another hard link elsewhere shares its content with that path — a program in
    // a bin directory on PATH (`ln $REPO/tools/git ~/bin/git`: a solo agent's in-place write of `tools/git` made
    // polywave's own host git run its code at once), a dotfile — and putting the checkout's file back after the agent (a
    // new file renamed over it) would not undo the write there. Read-only in the sandbox of an agent in the main
    // checkout, its own files included (the write fails with `Read-only file system`); past the limit, not started. (The
    // Scout, critic and Planner have the whole checkout read-only already.)
    if (isMainCheckout(jail.root) && !readOnlyCheckout) {
      const linked = await multiplyLinkedFiles(rootGit, jail.root);
      if (linked.length > multiplyLinkedLimit) {
        await releaseScratchDir(scratchDir);
        throw linkedTooMany(linked.length);
      }
      readOnly.push(...linked);
    }
    // An untracked file of yours too large for its content to be kept (> 1 MiB) could not be put back were the agent to
    // change or delete it: read-only in its sandbox unless it is the agent's to write (up to 256 such files; past that
    // a change is reported, not undone).
    if (untrackedAtStart) readOnly.push(...(await unkeptUntrackedNotWritable(jail, untrackedAtStart)));
    // X30-02: an untracked nested repository of yours (a clone inside the checkout): git status shows it as one entry and
    // never looks inside, so nothing after the agent would see a planted hook, fsmonitor or test file: read-only.
    if (untrackedAtStart && !isCheckoutReader(options.role)) readOnly.push(...untrackedDirectories(jail.root, untrackedAtStart));
    try {
      // The user's home (its credentials are unreadable) is the orchestrator's HOME, as passed down.
      // The Scout and the critic read code and write the plan: the checkout's `.env` and other untracked secret-named
      // files stay hidden from them although they work in the checkout (outside attack X19-09).
      const hideCheckoutSecrets = isCheckoutReader(options.role);
      sandbox = await buildAgentSandboxPlan({ root: jail.root, home, tmp, env: options.env, readOnly, userHome: options.env.HOME ?? os.homedir(), ...(options.sandboxSettings ? { settings: options.sandboxSettings } : {}), ...(hideCheckoutSecrets ? { hideCheckoutSecrets } : {}), ...(options.sandboxHiddenAround ? { hiddenAround: options.sandboxHiddenAround } : {}) });
      // X30-09: an untracked nested repository (your clone inside the checkout) is opaque to every git listing the plan
      // hides secrets by (its .env, keys, the token in its .git/config): unreadable to these roles whole.
      if (hideCheckoutSecrets && untrackedAtStart) {
        const nested = untrackedDirectories(jail.root, untrackedAtStart);
        sandbox.unreadable = [...new Set([...sandbox.unreadable, ...nested])];
        // its empty view read-only too (a write there fails instead of vanishing)
        if (nested.length > 0) sandbox.emptyReadOnly = [...new Set([...(sandbox.emptyReadOnly ?? []), ...nested])];
      }
      // An agent working in the main checkout (its `.git` is a directory): the checkout's ignored
      // files are read-only to it, new ones are moved out after it (issue 11; sandbox/ignored-paths.ts).
      if (isMainCheckout(jail.root)) {
        // (a reader with the checkout read-only: only the build-output throwaways — no read-only mounts, fingerprints
        // of up to 50,000 files, or SANDBOX_IGNORED_TOO_MANY refusal, none of which it needs)
        ignoredGuard = await guardIgnoredPaths({ root: jail.root, plan: sandbox, ownedFiles: options.policy.ownedFiles, gitCommonDir: path.join(jail.root, '.git'), agentId: options.agentId, env: options.env, ...(readOnlyCheckout ? { throwawayOnly: true } : {}) });
      }
      if (readOnlyCheckout) {
        if (spec.backend === 'cli') {
          planRedirect = await preparePlanRedirect(jail, path.join(scratchDir, 'plan'));
          if (planRedirect.files.length === 1) env[planFileVariable] = planRedirect.files[0]!.copy;
        } else if (spec.backend !== 'claude-code') {
          planFiles = await preparePlanFiles(jail);
        }
        // Nothing but its own scratch HOME/TMPDIR (wherever the temp directory is) and its plan stays writable: not its
        // root, and no `sandbox.writable` entry of the user's config either — such an entry can reach the checkout
        // another way: hold it (its parent, `~`: outside attack X32-07/08), reach it through a bind mount of it or of a
        // directory in it (X33-01, X34-01), or be a hard link to a file in it (X33-07, X34-02). A reader writes nothing
        // else; the agent is told what was dropped.
        const scratch = realOrResolved(scratchDir);
        const root = realOrResolved(jail.root);
        const dropped = sandbox.writable.filter((entry) => !isInside(realOrResolved(entry), scratch));
        for (const entry of dropped.filter((item) => realOrResolved(item) !== root)) onEvent({ type: 'agent-log', level: 'warn', message: `sandbox.writable entry ${entry} is read-only for the ${options.role}, which writes nothing but its plan` });
        sandbox.writable = [...sandbox.writable.filter((entry) => !dropped.includes(entry)), ...(planFiles?.files.map((file) => file.absolute) ?? []), ...(planRedirect ? [planRedirect.dir] : [])];
      }
    } catch (error) {
      await planFiles?.restore().catch(() => undefined);
      await releaseScratchDir(scratchDir);
      throw error;
    }
    // The user's npm cache is read-only in the sandbox unless sandbox.writable lists it: use a private one.
    const npmCache = env.npm_config_cache;
    if (npmCache !== undefined && !sandbox.writable.some((entry) => isInside(npmCache, entry))) env.npm_config_cache = path.join(home, '.npm');
    // Only backends that run polywave's own tools use it (claude-code and cli bring their own).
    if (spec.backend === 'ai-sdk' || spec.backend === 'script') {
      toolExecutor = createToolExecutor(sandbox, { cwd: jail.root, env: bashEnvironment(env) });
      // Started now, while the model works on its first turn: the first tool call does not wait for it.
      toolExecutor.start().catch(() => undefined);
    }
  }

  // X13 #1/#2/#6: an agent in the main checkout (solo, integration, scaffold) may not leave a new
  // repository anywhere in it (`docs/.git`: git status never shows a `.git`): every `.git` there now.
  // (not for an agent with the checkout read-only: its after-run passes do not run, so their baselines — walks of the
  // whole tree — are not taken either)
  const nestedBaseline: NestedRepoBaseline | undefined = isMainCheckout(jail.root) && !readOnlyCheckout ? await nestedRepoBaseline({ root: jail.root, env: options.env, pruneIgnored: ignoredGuard !== undefined }) : undefined; // no catch: never an agent without the baseline (it walks everything when git cannot list ignored dirs)
  const planted: QuarantinedGitlinkRepo[] = [];
  // X14 #3/#5: a directory git takes for a git dir without any `.git` (HEAD + objects/ + refs/), and what the stop audit refuses, are moved out after it (git/solo-quarantine.ts).
  const leftoverBaseline: SoloLeftoverBaseline | undefined = isMainCheckout(jail.root) && !readOnlyCheckout ? await soloLeftoverBaseline(jail.root, { ...(nestedBaseline ? { pruned: nestedBaseline.pruned } : {}), ...(untrackedAtStart ? { untracked: untrackedAtStart } : {}), env: options.env }).catch(() => undefined) : undefined;
  const leftovers: SoloLeftover[] = [];

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`agent ${options.agentId} exceeded its wall-clock limit of ${Math.round(limits.timeoutMs / 1000)} s`, 'TimeoutError'));
  }, timerDelay(limits.timeoutMs));
  const onAbort = () => controller.abort(options.signal?.reason ?? new Error('aborted'));
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const recorder = options.journal ? createJournalRecorder(options.journal) : undefined;
  const tampered: Array<{ path: string; reason: string }> = [];
  // X44-01: from here on each orchestrator file is guarded: a save of it while the agent runs (its report) first checks
  // it still holds polywave's last write, puts that back otherwise, and the guard remembers the change for the audit.
  const guarded = guardOrchestratorFiles(orchestratorFiles);
  let outcome: AgentOutcome;
  try {
    const backend = options.backend ?? (await loadBackend(spec.backend, cliTemplates ? { templates: cliTemplates } : {}));
    const request: AgentRunRequest = {
      agentId: options.agentId,
      role: options.role,
      ...(options.wave !== undefined ? { wave: options.wave } : {}),
      attempt: options.attempt ?? 1,
      model: spec,
      systemPrompt: options.systemPrompt,
      prompt: planRedirect?.note ? `${options.prompt}\n\n${planRedirect.note}` : options.prompt,
      cwd: options.cwd,
      ...(options.branch ? { branch: options.branch } : {}),
      ...(options.baseCommit ? { baseCommit: options.baseCommit } : {}),
      ...(options.implPath ? { implPath: options.implPath } : {}),
      jail,
      limits,
      env,
      scratchDir,
      signal: controller.signal,
      onEvent,
      ...(recorder ? { recorder } : {}),
      ...(options.reportCompletion ? { reportCompletion: withRefusedWrites(options.reportCompletion, denied, jail.root) } : {}),
      ...(options.hasCompletionReport ? { hasCompletionReport: options.hasCompletionReport } : {}),
      ...(options.outputSchema ? { outputSchema: options.outputSchema } : {}),
      ...(sandbox ? { sandbox } : {}),
      ...(toolExecutor ? { toolExecutor } : {}),
    };
    outcome = await backend.run(request);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    outcome = { status: 'failed', failure: { kind: 'fatal', message }, text: '', turns: 0, usage: emptyUsage(), durationMs: 0, denials: [] };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    // A22-37: stopped before the journal's flush, which throws on a full or read-only disk (the executor and its
    // sandbox then stayed under the worker for as long as it ran); its stop below is then a no-op.
    await toolExecutor?.stop().catch(() => undefined);
    recorder?.flush();
    if (recorder?.refused !== undefined) {
      // A journal file swapped for a symlink (or a directory leading out): the recorder stopped writing
      // rather than follow it. Said where the orchestrator and the human look: the agent's log, its
      // denials (check-jail-denials, agent-status) — the journal itself is incomplete from here on.
      const reason = `the agent's journal stopped recording: ${recorder.refused}`;
      denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'journal', code: journalRefusedCode, reason, target: options.journal!.index });
      forward({ type: 'agent-log', level: 'warn', message: `${journalRefusedCode}: ${reason}` });
    }
    await toolExecutor?.stop().catch(() => undefined);
    // A read-only checkout: nothing there is the agent's doing but its plan file, so nothing is moved or put back (a
    // change meanwhile is yours, X30-05); the plan file gets its mode back, and goes when it was made here and is empty.
    if (planFiles) await planFiles.restore().catch(() => undefined);
    if (planRedirect) {
      // (its processes are gone: the CLI ran inside the sandbox, whose PID namespace ended with it)
      const refused = await planRedirect.putBack().catch((error: unknown) => [{ path: '.', reason: error instanceof Error ? error.message : String(error) }]);
      for (const entry of refused) {
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: planCopyRefusedCode, reason: `"${entry.path}": ${entry.reason}`, target: entry.path });
        forward({ type: 'agent-log', level: 'warn', message: `${planCopyRefusedCode}: "${entry.path}": ${entry.reason}` });
      }
    }
    // X43-19: its processes are gone: the manifest (and the other files the orchestrator writes) must be what the
    // orchestrator last wrote; any other text is the agent's and is put back (the agent fails its audit below).
    for (const entry of await restoreOrchestratorFiles(guarded)) {
      const relative = repoRelative(entry.path, jail.root);
      const reason = `"${relative}" is written by polywave only, and changed while the agent ran: ${entry.error ? `could not be put back: ${entry.error}` : "put back as polywave last wrote it"}`;
      denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: orchestratorFileRestoredCode, reason, target: entry.path, ...stayedIf(entry.error !== undefined) });
      forward({ type: 'agent-log', level: 'warn', message: `${orchestratorFileRestoredCode}: ${reason}` });
      tampered.push({ path: relative, reason });
    }
    // Before any git listing of the checkout (X30-13: a FIFO `.gitignore` holds git): FIFOs, sockets, devices it made.
    if (leftoverBaseline) {
      const specials = await quarantineNewSpecials({ root: jail.root, before: leftoverBaseline, agentId: options.agentId }).catch((error: unknown): SoloLeftover[] => [{ path: '.', why: 'special', error: error instanceof Error ? error.message : String(error) }]);
      for (const entry of specials) {
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: soloLeftoverCode, reason: leftoverReason(entry), target: entry.path, ...stayedIf(entry.error !== undefined) });
        forward({ type: 'agent-log', level: 'warn', message: `${soloLeftoverCode}: ${leftoverReason(entry)}` });
      }
      leftovers.push(...specials);
    }
    if (ignoredGuard && !readOnlyCheckout) {
      // Its processes are gone (executor stopped, backend returned): what appeared among the ignored files is moved out.
      const moved = await ignoredGuard.quarantineNew().catch((error: unknown): QuarantinedPath[] => [{ path: '.', error: error instanceof Error ? error.message : String(error) }]);
      for (const entry of moved) {
        const reason = entry.deleted
          ? `"${entry.path}" is ignored by git and was yours before the agent ran: ${entry.error ?? 'deleted'}`
          : entry.movedTo
            ? `"${entry.path}" is ignored by git and appeared in the main checkout while the agent ran (something the user may run later outside any sandbox): moved to ${entry.movedTo}`
            : `"${entry.path}" is ignored by git and appeared in the main checkout while the agent ran, but could not be moved out: ${entry.error ?? 'unknown error'}`;
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: ignoredQuarantineCode, reason, target: entry.path, ...stayedIf(!entry.movedTo) });
        forward({ type: 'agent-log', level: 'warn', message: `${ignoredQuarantineCode}: ${reason}` });
      }
    }
    if (gitlinkBaseline && !readOnlyCheckout) {
      // X8 #2c: a repository the agent made in a submodule path (its config can name programs the
      // user's own git would run there: core.fsmonitor, filters) does not stay in the tree.
      const moved = await quarantineGitlinkRepos({ git: rootGit, root: jail.root, before: gitlinkBaseline, agentId: options.agentId }).catch((error: unknown): QuarantinedGitlinkRepo[] => [{ path: '.', error: error instanceof Error ? error.message : String(error) }]);
      for (const entry of moved) {
        const reason = entry.movedTo
          ? `"${entry.path}" (a git repository in a submodule path) was made or changed while the agent ran; git would run what its config names: moved to ${entry.movedTo}`
          : `"${entry.path}" (a git repository in a submodule path) was made or changed while the agent ran, but could not be moved out: ${entry.error ?? 'unknown error'}`;
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: nestedRepoQuarantineCode, reason, target: entry.path, ...stayedIf(!entry.movedTo) });
        forward({ type: 'agent-log', level: 'warn', message: `${nestedRepoQuarantineCode}: ${reason}` });
      }
      planted.push(...moved);
      for (const entry of absentGitlinks) {
        if (!existsSync(path.join(jail.root, entry))) continue;
        const stamp = new Date().toISOString().replace(/[:.]/g, '-');
        const to = path.join(jail.root, '.git', 'polywave', 'quarantine', `${options.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}-gitlinks`, entry);
        let result: QuarantinedGitlinkRepo;
        try {
          result = { path: entry, movedTo: await moveToQuarantine(path.join(jail.root, entry), to) };
        } catch (error) {
          result = { path: entry, error: error instanceof Error ? error.message : String(error) };
        }
        const what = `"${entry}" (a submodule path, absent when the agent started: git status never shows what is in it, and your own tools would run it)`;
        const reason = result.movedTo ? `${what} was made while the agent ran: moved to ${result.movedTo}` : `${what} was made while the agent ran, but could not be moved out: ${result.error ?? 'unknown error'}`;
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: nestedRepoQuarantineCode, reason, target: entry, ...stayedIf(!result.movedTo) });
        forward({ type: 'agent-log', level: 'warn', message: `${nestedRepoQuarantineCode}: ${reason}` });
        planted.push(result);
      }
    }
    if (nestedBaseline) {
      const moved = await quarantineNewNestedRepos({ root: jail.root, commonDir: path.join(jail.root, '.git'), before: nestedBaseline, agentId: options.agentId }).catch((error: unknown): QuarantinedGitlinkRepo[] => [{ path: '.', error: error instanceof Error ? error.message : String(error) }]);
      for (const entry of moved) {
        const what = `"${entry.path}" (a new git repository in the main checkout: git would take it for the repository of the files below it and run what its config and hooks name)`;
        const reason = entry.movedTo ? `${what} was made while the agent ran: moved to ${entry.movedTo}` : `${what} was made while the agent ran, but could not be moved out: ${entry.error ?? 'unknown error'}`;
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: nestedRepoQuarantineCode, reason, target: entry.path, ...stayedIf(!entry.movedTo) });
        forward({ type: 'agent-log', level: 'warn', message: `${nestedRepoQuarantineCode}: ${reason}` });
      }
      planted.push(...moved);
    }
    if (leftoverBaseline) {
      // X44-15: new empty directories are the agent's only where it could make them — not polywave's state (its journal's
      // `tool-results/`), not what its sandbox had read-only
      const notTheAgents = [path.join(jail.root, stateDirName), ...(options.journal ? [options.journal.dir] : []), ...(sandbox?.readOnlyWithin ?? [])].filter((entry) => isInside(entry, jail.root)).map((entry) => path.relative(jail.root, entry).split(path.sep).join('/')).filter((entry) => entry !== '' && !entry.startsWith('..'));
      const left = await quarantineSoloLeftovers({ root: jail.root, jail, before: leftoverBaseline, agentId: options.agentId, ...(options.baseCommit ? { baseCommit: options.baseCommit } : {}), env: options.env, notTheAgents }).catch((error: unknown): SoloLeftover[] => [{ path: '.', why: 'git-dir', error: error instanceof Error ? error.message : String(error) }]);
      for (const entry of left) {
        denied.push({ ts: new Date().toISOString(), attempt: options.attempt ?? 1, tool: 'sandbox', code: soloLeftoverCode, reason: leftoverReason(entry), target: entry.path, ...stayedIf(entry.error !== undefined) });
        forward({ type: 'agent-log', level: 'warn', message: `${soloLeftoverCode}: ${leftoverReason(entry)}` });
      }
      leftovers.push(...left);
    }
    if (options.journal) await appendDenials(options.journal.dir, denied.map((record) => ({ ...record, ...(record.target ? { target: repoRelative(record.target, jail.root) } : {}) }))).catch(() => undefined);
    await releaseScratchDir(scratchDir, { keep: options.keepScratch === true });
  }
  if (timedOut && outcome.status !== 'finished') outcome = { ...outcome, status: 'timeout', failure: { kind: 'transient', message: `wall-clock limit of ${Math.round(limits.timeoutMs / 1000)} s reached` } };
  // What the after-run checks undid (tool 'sandbox') belongs to the outcome's denials too: callers without a journal
  // (run-scout, plan, run-critic) report it from there.
  const undone = denied.filter((record) => record.tool === 'sandbox').map(({ tool, code, reason, target, stayed }) => ({ tool, code, reason, ...(target ? { target: repoRelative(target, jail.root) } : {}), ...(stayed ? { stayed } : {}) }));
  outcome = { ...outcome, durationMs: Math.round(performance.now() - started), ...(undone.length > 0 ? { denials: [...outcome.denials, ...undone] } : {}) };
  // A planted repository fails the agent's stop audit (E42, like an unowned change) though it was moved out.
  const audited = withOrchestratorFilesRestored(withLeftovers(planted.length === 0 ? jail : withPlantedRepos(jail, planted), leftovers), tampered);
  return { outcome, spec, jail: audited, ...(sandbox ? { sandbox } : {}) };
}

/**
 * The outcome's records of what the after-run checks could NOT undo (a leftover neither moved out nor put back): an
 * agent in the main checkout that leaves one fails its run closed (run-scout, plan: SANDBOX_LEFTOVER_STAYED, X29-05/08).
 */
export function leftoversNotUndone(denials: readonly ToolDenial[]): ToolDenial[] {
  return denials.filter((denial) => denial.tool === 'sandbox' && denial.stayed === true);
}

/**
 * What the after-run checks of a Scout, critic or Planner did (the sandbox's after-run records: a change moved out or
 * put back, or one that stayed; a refused plan copy is not one), said one way for all three.
 */
export interface AfterRunChecks {
  /** `<n> change(s) of <who><where> undone[, <m> NOT undone]: <code>: <reason>; …` (undefined: nothing to say). */
  summary: string | undefined;
  /** `<who> left <paths> in the checkout and it could not be undone: look at it before you run anything there` (undefined: nothing stayed; else the run fails closed, SANDBOX_LEFTOVER_STAYED). */
  stayedMessage: string | undefined;
}

/** {@link AfterRunChecks} of `denials` for `who` ("the Scout"); `where` qualifies the changes (" outside its IMPL doc"). */
export function afterRunChecks(denials: readonly ToolDenial[], who: string, where = ''): AfterRunChecks {
  const undone = denials.filter((denial) => denial.tool === 'sandbox' && denial.code !== planCopyRefusedCode);
  const stayed = leftoversNotUndone(undone);
  return {
    summary: undone.length > 0 ? `${undone.length - stayed.length} change(s) of ${who}${where} undone${stayed.length > 0 ? `, ${stayed.length} NOT undone` : ''}: ${undone.map((denial) => `${denial.code}: ${denial.reason}`).join('; ')}` : undefined,
    stayedMessage: stayed.length > 0 ? `${who} left ${stayed.map((denial) => denial.target ?? '?').join(', ')} in the checkout and it could not be undone: look at it before you run anything there` : undefined,
  };
}

/** The `stayed` mark of an after-run record when its change could not be undone. */
const stayedIf = (stayed: boolean): { stayed?: true } => (stayed ? { stayed: true } : {});

/** The code of a journal write refused (a journal file replaced by a symlink or a link leading out). */
export const journalRefusedCode = 'JOURNAL_WRITE_REFUSED';

/** The code of a plan copy (cli backends, plan-redirect.ts) not put in place: a link, not a regular file, too large. */
export const planCopyRefusedCode = 'SANDBOX_PLAN_COPY_REFUSED';

/** The code of a planted submodule-path repository moved out after the agent (X8 #2c). */
export const nestedRepoQuarantineCode = 'SANDBOX_NESTED_REPO_QUARANTINED';

/** `jail` whose audit also reports each planted repository moved out after the agent (JAIL_GIT_INTERNALS). */
function withPlantedRepos(jail: Jail, planted: readonly QuarantinedGitlinkRepo[]): Jail {
  return Object.freeze({
    ...jail,
    async audit(auditOptions?: { baseCommit?: string }) {
      const audit = await jail.audit(auditOptions);
      const violations = [
        ...audit.violations,
        ...planted.map((entry) => ({
          code: 'JAIL_GIT_INTERNALS' as const,
          path: entry.path,
          reason: `"${entry.path}" is a git repository the agent made in the checkout (${entry.movedTo ? `moved to ${entry.movedTo}` : `could not be moved out: ${entry.error ?? 'unknown error'}`}); agents may not make one: git would run what its config and hooks name (${nestedRepoQuarantineCode}).`,
        })),
      ];
      return { ...audit, ok: false, violations };
    },
  });
}

/** The code of a file polywave writes (the IMPL doc, the PROGRAM manifest, a tier's other docs) the agent changed (X43-19). */
export const orchestratorFileRestoredCode = 'SANDBOX_ORCHESTRATOR_FILE_RESTORED';

/** `jail` whose audit also fails for each orchestrator-written file the agent changed (JAIL_UNOWNED_CHANGE, X43-19). */
function withOrchestratorFilesRestored(jail: Jail, tampered: ReadonlyArray<{ path: string; reason: string }>): Jail {
  if (tampered.length === 0) return jail;
  return Object.freeze({
    ...jail,
    async audit(auditOptions?: { baseCommit?: string }) {
      const audit = await jail.audit(auditOptions);
      const violations = [...audit.violations, ...tampered.map((entry) => ({ code: 'JAIL_UNOWNED_CHANGE' as const, path: entry.path, reason: `${entry.reason} (${orchestratorFileRestoredCode}).` }))];
      return { ...audit, ok: false, violations };
    },
  });
}

interface OrchestratorFileBaseline {
  path: string;
  text: string | undefined;
  sequence: number;
}

/**
 * The files polywave writes while an agent in the main checkout runs (its IMPL doc unless it is the Scout, the
 * `orchestratorPaths`), with their text now. Not for the roles that read the checkout (their sandbox holds it all
 * read-only) nor for an agent in a worktree (the manifest is outside its root).
 */
function orchestratorFilesAtStart(root: string, options: RunAgentOptions): OrchestratorFileBaseline[] {
  if (!isMainCheckout(root) || isCheckoutReader(options.role)) return [];
  const own = options.role !== 'scout' && options.implPath ? [options.implPath] : [];
  const files = [...new Set(existingRegularFiles(root, [...own, ...(options.policy.orchestratorPaths ?? [])]))];
  const sequence = atomicWriteSequence();
  return files.map((file) => {
    try {
      return { path: file, text: readFileSync(file, 'utf8'), sequence };
    } catch {
      return { path: file, text: undefined, sequence };
    }
  });
}

/**
 * A guard ({@link guardFile}) on each of `files` with the text it must hold now: the last text this process wrote to it
 * since the baseline was taken (store/atomic-file.ts), else its text then.
 */
function guardOrchestratorFiles(files: readonly OrchestratorFileBaseline[]): FileGuard[] {
  return files.flatMap((file) => {
    const written = lastAtomicWrite(file.path);
    const expected = written && written.sequence > file.sequence ? written.text : file.text;
    return expected === undefined ? [] : [guardFile(file.path, expected)];
  });
}

/**
 * Puts back each guarded file whose text is not polywave's (the last text this process wrote to it while the agent ran,
 * else its text at the start), and releases the guards. Returns those that differed now or at any save meanwhile
 * (X44-01: a change between two saves was put back at the second).
 */
async function restoreOrchestratorFiles(guards: readonly FileGuard[]): Promise<Array<{ path: string; error?: string }>> {
  const changed: Array<{ path: string; error?: string }> = [];
  for (const guard of guards) {
    try {
      const current = await readFile(guard.path, 'utf8').catch(() => undefined);
      const isFile = (() => {
        try {
          return lstatSync(guard.path).isFile();
        } catch {
          return false;
        }
      })();
      // (under the lock: the check puts polywave's text back and marks the guard)
      if (!isFile || current !== guard.expected()) await withFileLock(guard.path, () => checkGuardedFile(guard.path));
      if (guard.tampered()) changed.push({ path: guard.path });
    } catch (error) {
      changed.push({ path: guard.path, error: error instanceof Error ? error.message : String(error) });
    } finally {
      guard.release();
    }
  }
  return changed;
}

/**
 * What binds `files` read-only in the sandbox of an agent in the main checkout: the directory holding each, when the
 * agent owns nothing in it (a save by rename replaces the file, never the directory: X43-19), else the file itself.
 */
function enclosingReadOnly(root: string, files: readonly string[], ownedFiles: readonly string[]): string[] {
  const owned = ownedFiles.map((entry) => path.resolve(root, entry.split(/[*?[{]/, 1)[0] ?? ''));
  return [
    ...new Set(
      files.map((file) => {
        const directory = path.dirname(file);
        if (directory === root || !isInside(directory, root)) return file;
        return owned.some((entry) => isInside(entry, directory) || isInside(directory, entry)) ? file : directory;
      }),
    ),
  ];
}

/** A denial target as a repository-relative path when it is inside the agent's root. */
function repoRelative(target: string, root: string): string {
  const absolute = path.resolve(root, target);
  return isInside(absolute, root) ? path.relative(root, absolute).split(path.sep).join('/') : target;
}

/**
 * The report an agent files carries the writes the jail refused inside the repository in
 * `out_of_scope_deps` (what the merge will lack), whatever the agent wrote there itself.
 */
function withRefusedWrites(report: NonNullable<AgentRunRequest['reportCompletion']>, denied: readonly DenialRecord[], root: string): NonNullable<AgentRunRequest['reportCompletion']> {
  return (input) => {
    const refused = ownershipDenials(denied.map((record) => ({ ...record, ...(record.target ? { target: repoRelative(record.target, root) } : {}) })));
    if (refused.length === 0) return report(input);
    const existing = Array.isArray(input.out_of_scope_deps) ? input.out_of_scope_deps.map(String) : [];
    const lines = refused.map(outOfScopeLine).filter((line) => !existing.includes(line));
    return report({ ...input, out_of_scope_deps: [...existing, ...lines] });
  };
}

/** True when `root` is a main checkout (its `.git` is a directory, not a linked worktree's file). */
function isMainCheckout(root: string): boolean {
  try {
    return lstatSync(path.join(root, '.git')).isDirectory();
  } catch {
    return false;
  }
}

function isInside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

/** Tracked files git status does not look at: marked skip-worktree (`S`) or assume-unchanged (a lower-case tag) in `git ls-files -v`. */
async function hiddenFromStatus(git: ReturnType<typeof createGit>): Promise<string[]> {
  const { stdout } = await git.run(['--no-optional-locks', 'ls-files', '-v', '-z']).catch(() => ({ stdout: '' }));
  return stdout
    .split('\0')
    .filter((record) => record.length > 2 && record[1] === ' ' && (record[0] === 'S' || /[a-z]/.test(record[0]!)))
    .map((record) => record.slice(2));
}

/** The roles that read the checkout and write at most their plan: Scout, critic, Planner. */
function isCheckoutReader(role: AgentRole): boolean {
  return role === 'scout' || role === 'critic' || role === 'planner';
}

/** The untracked entries of `baseline` that are directories (nested repositories: git lists each as one entry), absolute. */
function untrackedDirectories(root: string, baseline: UntrackedBaseline): string[] {
  return existingDirectories(root, [...baseline.untracked].filter((entry) => !(baseline.untrackedFiles?.has(entry) ?? false))).slice(0, unkeptUntrackedLimit);
}

/** The files a checkout reader may write (its plan), made to exist for their writable bind; `restore` undoes what it made. */
interface PlanFiles {
  files: Array<{ absolute: string; created: boolean; mode: number }>;
  restore(): Promise<void>;
}

/**
 * The exact files `jail`'s policy lets its agent write (owned files, file entries of the writable prefixes), each
 * created empty when absent (with its directories) so that it can be bound writable in an otherwise read-only
 * checkout. A path that leads through a link or is not a regular file is left out (the agent cannot write it then).
 */
async function preparePlanFiles(jail: Jail): Promise<PlanFiles> {
  const files: PlanFiles['files'] = [];
  const madeDirs: string[] = [];
  for (const absolute of planFileEntries(jail)) {
    const parts = path.relative(jail.root, absolute).split(path.sep);
    let usable = true;
    for (let index = 1; index < parts.length && usable; index += 1) {
      const dir = path.join(jail.root, ...parts.slice(0, index));
      try {
        if (!lstatSync(dir).isDirectory()) usable = false;
      } catch {
        await mkdir(dir).catch(() => undefined);
        try {
          if (lstatSync(dir).isDirectory()) madeDirs.push(dir);
          else usable = false;
        } catch {
          usable = false;
        }
      }
    }
    if (!usable) continue;
    try {
      const stats = lstatSync(absolute);
      if (stats.isFile()) files.push({ absolute, created: false, mode: stats.mode & 0o7777 });
    } catch {
      try {
        await writeFile(absolute, '', { flag: 'wx', mode: 0o644 });
        files.push({ absolute, created: true, mode: lstatSync(absolute).mode & 0o7777 });
      } catch {
        // could not be made: not writable to the agent
      }
    }
  }
  return {
    files,
    async restore() {
      for (const file of files) {
        try {
          const stats = lstatSync(file.absolute);
          if (!stats.isFile()) continue;
          if (file.created && stats.size === 0) await rm(file.absolute, { force: true });
          else if ((stats.mode & 0o7777) !== file.mode) await chmod(file.absolute, file.mode);
        } catch {
          // gone: nothing to put back
        }
      }
      for (const dir of madeDirs.reverse()) await rmdir(dir).catch(() => undefined);
    },
  };
}

/** At most this many files marked --skip-worktree/--assume-unchanged are bound read-only; more, and the agent is not started. */
const hiddenFromStatusLimit = 256;

/** The code of an agent in the main checkout refused for too many files git status does not look at. */
export const hiddenTooManyCode = 'SANDBOX_HIDDEN_TOO_MANY';

function hiddenTooMany(count: number): PolywaveError {
  return new PolywaveError({
    code: hiddenTooManyCode,
    message: `${count} files of the main checkout are marked --skip-worktree or --assume-unchanged: git status never looks at them, so an agent working in the checkout gets each read-only, and at most ${hiddenFromStatusLimit} can be; clear the marks you do not need (git update-index --no-skip-worktree / --no-assume-unchanged <file>), or run this wave with worktrees (more than one agent)`,
    details: { count, limit: hiddenFromStatusLimit },
  });
}

/** At most this many multiply-linked files of the main checkout are bound read-only; more, and the agent is not started. */
const multiplyLinkedLimit = 256;

/** The code of an agent in the main checkout refused for too many files with other hard links (X46-05). */
export const linkedTooManyCode = 'SANDBOX_LINKED_TOO_MANY';

function linkedTooMany(count: number): PolywaveError {
  return new PolywaveError({
    code: linkedTooManyCode,
    message: `${count} files of the main checkout have other hard links (a write in place would change those paths too, outside the checkout): an agent working in the checkout gets each read-only, and at most ${multiplyLinkedLimit} can be; replace the links with copies or symbolic links, or run this wave with worktrees (more than one agent)`,
    details: { count, limit: multiplyLinkedLimit },
  });
}

/**
 * The regular files of the checkout at `root` — tracked, and untracked but not ignored (ignored ones are read-only to the
 * agent already: sandbox/ignored-paths.ts) — with more than one hard link, as absolute paths (no link followed).
 */
async function multiplyLinkedFiles(git: Git, root: string): Promise<string[]> {
  const { stdout } = await git.run(['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  const found = new Set<string>();
  for (const file of stdout.split('\0')) {
    if (file === '') continue;
    const absolute = path.join(root, file);
    try {
      const stat = lstatSync(absolute);
      if (stat.isFile() && stat.nlink > 1) found.add(absolute);
    } catch {
      // deleted in the working tree
    }
  }
  return [...found];
}

/** Bound read-only for an agent in the main checkout: at most this many untracked files too large to keep. */
const unkeptUntrackedLimit = 256;

/** The untracked files of `baseline` too large to have been kept that `jail` does not let the agent write, as absolute paths. */
async function unkeptUntrackedNotWritable(jail: Jail, baseline: UntrackedBaseline): Promise<string[]> {
  const found: string[] = [];
  for (const entry of untrackedNotKept(baseline)) {
    if (found.length >= unkeptUntrackedLimit) break;
    if ((await jail.checkWrite(entry)).allowed) continue;
    found.push(...existingRegularFiles(jail.root, [entry]));
  }
  return found;
}

/** The repository-relative `entries` that are directories inside `root` now (no link followed), as absolute paths. */
function existingDirectories(root: string, entries: readonly string[]): string[] {
  return entries.flatMap((entry) => {
    const absolute = path.resolve(root, entry);
    if (!isInside(absolute, root) || absolute === root) return [];
    try {
      return lstatSync(absolute).isDirectory() ? [absolute] : [];
    } catch {
      return [];
    }
  });
}

/** The repository-relative `files` that are regular files inside `root` now (no link followed), as absolute paths. */
function existingRegularFiles(root: string, files: readonly string[]): string[] {
  return files.flatMap((file) => {
    const absolute = path.resolve(root, file);
    if (!isInside(absolute, root)) return [];
    try {
      return lstatSync(absolute).isFile() ? [absolute] : [];
    } catch {
      return [];
    }
  });
}
