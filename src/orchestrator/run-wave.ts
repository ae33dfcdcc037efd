import { appendFile, mkdir, readFile, rm } from 'node:fs/promises';
import { prewarmSandboxStatus } from '../sandbox/sandbox-status.js';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentBackend, AgentEvent, AgentOutcome, AgentRole, AgentUsage, ModelSpec, ReportCompletionResult } from '../agents/contract.js';
import type { BudgetBreach, BudgetTracker } from '../agents/budget.js';
import { costJournalName, createCostMeter } from '../agents/cost-meter.js';
import { activityEvent, type AgentPerformanceStatus, type CostEvent } from '../protocol/e40.js';
import { addUsage, emptyUsage } from '../agents/contract.js';
import { resolveModelSpec } from '../agents/model-spec.js';
import { renderRolePrompt } from '../agents/prompts/index.js';
import type { WaveRetryContext } from '../agents/prompts/wave.js';
import { decideAgentSandbox } from '../agents/run-agent.js';
import { readAgentCliTemplates } from '../agents/agent-cli-templates.js';
import { inProcessDispatcher, type DispatchRecord, type Dispatcher } from '../dispatch/dispatcher.js';
import { checkAgentStop, type StopCheck } from '../agents/stop-check.js';
import { createJail } from '../agents/jail/jail.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { dispatchCodes } from '../dispatch/codes.js';
import { agentRepoKey, resolveRepoRoot } from '../engine/prepare/preflight-steps.js';
import { ownedFiles, renderAgentBrief } from '../engine/brief.js';
import type { EventBus } from '../engine/events.js';
import { recordRunRepositories } from '../observability/recorder.js';
import { finalizeWave, type FinalizeWaveResult } from '../engine/finalize-wave.js';
import { classifyDirtyTree } from '../engine/prepare/tree-steps.js';
import { addTestCounts, parseTestCounts } from '../gates/test-counts.js';
import { journalPaths, recoverJournalContext } from '../engine/journal.js';
import { openDispatchedAttempt, recordAttempt, settleAttempt } from './attempt-record.js';
import { prepareAgent, prepareWave, type PrepareWaveResult } from '../engine/prepare-wave.js';
import type { EngineRunOptions } from '../engine/run-options.js';
import type { StepResult } from '../engine/step.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { decideFailureAction, type FailureDecision } from '../protocol/e19.js';
import { launchOrder } from '../protocol/launch-order.js';
import { implSlugFromPath } from '../protocol/names.js';
import { parseImpl } from '../protocol/parse-impl.js';
import type { CompletionReportRecord } from '../protocol/completion-report.js';
import { scaffoldPath, type Agent, type ImplManifest } from '../protocol/schema/impl-schema.js';
import { checkTransition } from '../protocol/state-machine.js';
import { findWave, isSoloWave, isWaveFinished, waveBaseCommit } from '../protocol/waves.js';
import { waveFinishInGit } from '../engine/wave-merged.js';
import { codes } from '../errors/codes.js';
import { createBatchedImplEditor } from '../store/batched-edit.js';
import { saveCompletionReport } from '../store/completion-report-file.js';
import { editImpl, loadImpl } from '../store/manifest-file.js';
import { mapBounded } from '../gates/concurrency.js';
import { assertNotNestedRepository } from '../git/nested-repos.js';
import { offloadGitSpawns } from '../git/spawn-server.js';
import { distrustSearchRoot } from '../sandbox/search-path.js';
import { shellQuote } from '../sandbox/wrap-in-sandbox.js';

/** Options of {@link runWave}. */
export interface RunWaveOptions extends EngineRunOptions {
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  /** Absolute path of the IMPL manifest. */
  implPath: string;
  wave: number;
  repoDir?: string;
  mergeTarget?: string;
  /** Added to every agent's POLYWAVE_PORT by the worktree setup (a PROGRAM tier: one block of ports per IMPL). */
  portOffset?: number;
  /** Model for agents without `model:` in the manifest (`--model`). */
  model?: string;
  /** Agents running at once per provider (`--concurrency`; default: every agent of the wave, at most 16). */
  concurrency?: number;
  /** E1 ordering (default true; `--no-prioritize` → false). */
  prioritize?: boolean;
  /** Per-agent wall-clock limit (ms). */
  agentTimeoutMs?: number;
  maxTurns?: number;
  /** E7a `--auto`: fixable failures get up to 2 retries. */
  auto?: boolean;
  /** Run finalize-wave when every agent completed (default true). */
  finalize?: boolean;
  noCache?: boolean;
  skipCritic?: boolean;
  /** Issue 13: run a wave that is already merged and verified again (`--rerun`); refused (WAVE_ALREADY_VERIFIED, exit 1) without it. */
  rerun?: boolean;
  /** Issue 13: finalize-wave's `--strict-ownership` (an agent whose writes the jail refused blocks the merge). */
  strictOwnership?: boolean;
  /** First back-off before relaunching after a transient failure (ms, doubled per attempt; default 2000). */
  retryBackoffMs?: number;
  /**
   * `retry`: launch only these agents; the wave's other agents keep their reports (a complete one
   * still passes E42 and counts; any other leaves the wave blocked). Default: every agent.
   */
  onlyAgents?: readonly string[];
  /** `retry`: the E19 retry context each relaunched agent's first attempt gets (its previous report, the gate output). */
  initialRetry?: Readonly<Record<string, WaveRetryContext>>;
  /** Keep each agent's scratch HOME/TMPDIR. */
  keepScratch?: boolean;
  /**
   * A budget of agents shared with other waves running at the same time (the PROGRAM tier loop
   * runs several IMPLs at once under one global agent limit): each agent holds a slot while it runs.
   */
  agentSlots?: AgentSlots;
  /**
   * Other manifests the orchestrator writes in the main checkout while this wave runs (the PROGRAM
   * manifest and the other IMPLs of a tier): finalize-wave's dirty check counts them as its own.
   */
  orchestratorFiles?: string[];
  /**
   * Ref prefixes other orchestrated work moves while this wave runs (a PROGRAM tier's other IMPLs):
   * left out of the tamper record; the state files then stay uncommitted in the main checkout.
   */
  concurrentRefs?: string[];
  /**
   * The changes the tamper check reports since the wave was prepared are the caller's own (a human's commit on main
   * while a BLOCKED wave waited): prepare-wave's re-entry, or the finalize of a wave whose agents were all done before
   * this run, records the repository as it is now (`--accept-changes`). Never the finalize after agents ran in this
   * run: what they changed is checked as always.
   */
  acceptChanges?: boolean;
  /** Cost budgets of the run (issue 14): agents over a limit are stopped, no launch once the run's money is spent. */
  budget?: BudgetTracker;
  /** The backend of the wave's agents instead of the one their model names (tests: ai-sdk with a mock model). */
  backend?: AgentBackend;
  /** Issue 17: where agents run (`--dispatch redis://…`); default: in this process, exactly as before. */
  dispatcher?: Dispatcher;
}

/** A shared, fair budget of running agents ({@link createAgentSlots}). */
export interface AgentSlots {
  acquire(): Promise<() => void>;
}

/** A FIFO budget of `limit` agents running at once, shared by every wave it is given to. */
export function createAgentSlots(limit: number): AgentSlots {
  const waiting: Array<() => void> = [];
  let active = 0;
  return {
    async acquire() {
      if (active >= limit) await new Promise<void>((resolve) => waiting.push(resolve));
      else active += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const next = waiting.shift();
        if (next) next();
        else active -= 1;
      };
    },
  };
}

/** One launch of one agent. */
export interface AgentAttempt {
  attempt: number;
  outcome: AgentOutcome['status'];
  failure?: string;
  report_status?: string;
  failure_type?: string;
  stop_check?: Pick<StopCheck, 'ok' | 'problems' | 'commits'>;
  decision?: FailureDecision;
  turns: number;
  usage: AgentUsage;
  duration_ms: number;
  /** Issue 17: the job that ran this attempt on a worker (stalls = E19 transient failures BullMQ recovered). */
  dispatch?: DispatchRecord;
}

/** How one agent ended up. */
export interface AgentRunSummary {
  agent: string;
  model: string;
  backend: string;
  /** complete = reported complete and passed E42; the rest say why not. */
  status: 'complete' | 'partial' | 'blocked' | 'failed' | 'not-run';
  attempts: AgentAttempt[];
  /** The E19 decision that ended the agent's run (when it did not complete). */
  decision?: FailureDecision;
  explanation?: string;
  /** True when a complete report from an earlier run was kept (E9 re-entry). */
  resumed?: boolean;
  usage: AgentUsage;
  turns: number;
  duration_ms: number;
}

/** The run-wave result (printed as JSON by the CLI). */
export interface RunWaveResult {
  wave: number;
  slug: string;
  impl_path: string;
  success: boolean;
  state: string;
  launch_order: string[];
  launch_reason: string;
  concurrency: number;
  prepare?: PrepareWaveResult | { steps: StepResult[]; success: boolean };
  agents: AgentRunSummary[];
  finalize?: FinalizeWaveResult;
  blocked?: { reason: string; agents: Array<{ agent: string; status: string; explanation: string; action?: string }> };
  /** The budget limit that stopped agents or paused the run (code BUDGET_EXCEEDED). */
  budget?: BudgetBreach;
  usage: AgentUsage;
  duration_ms: number;
}

interface AgentPlan {
  agent: Agent;
  id: string;
  cwd: string;
  branch?: string;
  base: string;
  git: Git;
  spec: ModelSpec;
  role: AgentRole;
  solo: boolean;
  root: string;
  /**
   * A solo agent's (the main checkout's) files the orchestrators write: this IMPL doc, and the other IMPL and PROGRAM
   * manifests that had uncommitted changes when the wave started (another IMPL's BLOCKED state record: outside attack
   * X35-08 found every solo wave refused for it with a false I1). Read-only in its sandbox, not judged as its changes.
   */
  orchestratorPaths?: string[];
}


/** The provider key a concurrency bound and back-off apply to. */
function providerKey(spec: ModelSpec): string {
  switch (spec.backend) {
    case 'ai-sdk':
      return `${spec.provider}${spec.baseURL ? `@${spec.baseURL}` : ''}`;
    case 'cli':
      return `cli:${spec.command}`;
    default:
      return spec.backend;
  }
}

/** A counting semaphore per provider. */
class ProviderLimiter {
  private readonly active = new Map<string, number>();
  private readonly waiting = new Map<string, Array<() => void>>();
  constructor(private readonly limit: number) {}
  async acquire(key: string): Promise<() => void> {
    if ((this.active.get(key) ?? 0) >= this.limit) {
      await new Promise<void>((resolve) => {
        const queue = this.waiting.get(key) ?? [];
        queue.push(resolve);
        this.waiting.set(key, queue);
      });
    }
    this.active.set(key, (this.active.get(key) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active.set(key, (this.active.get(key) ?? 1) - 1);
      this.waiting.get(key)?.shift()?.();
    };
  }
}

/**
 * E1 launch order under a concurrency bound: each agent's first launch queues for a slot only after
 * every agent before it in the order has queued (or needs no launch). Without it the agents reach the
 * slot queue in the order their preparation (journal recovery, an E9 check) happens to finish, and
 * with fewer slots than agents a later agent takes an earlier one's slot.
 */
export function createLaunchSequencer(order: readonly string[]): { turn(id: string): Promise<void>; queued(id: string): void } {
  const gates = new Map(
    order.map((id) => {
      let resolve!: () => void;
      const promise = new Promise<void>((done) => (resolve = done));
      return [id, { promise, resolve }] as const;
    }),
  );
  return {
    turn(id) {
      const index = order.indexOf(id);
      return index > 0 ? gates.get(order[index - 1]!)!.promise : Promise.resolve();
    },
    // Idempotent; an agent that is skipped or fails before launching calls it too, so nobody waits on it.
    queued(id) {
      const index = order.indexOf(id);
      if (index < 0) return;
      // Queued only once every agent before it is: a gate resolves in order.
      void (index > 0 ? gates.get(order[index - 1]!)!.promise : Promise.resolve()).then(() => gates.get(id)!.resolve());
    },
  };
}

/**
 * Parsed manifests by their exact text: sixteen agents asking "is my report there?" at the same
 * moment parse the file once per change (the parse itself is shared while in flight).
 */
const parsedByText = new Map<string, ImplManifest>();

async function readManifest(implPath: string): Promise<ImplManifest> {
  const text = await readFile(implPath, 'utf8').catch(() => undefined);
  if (text === undefined) {
    const { parsed } = await loadImpl(implPath);
    if (!parsed.manifest) throw new PolywaveError({ code: parsed.findings[0]?.code ?? 'V001_MANIFEST_INVALID', message: `${implPath}: ${parsed.findings[0]?.message ?? 'not a usable IMPL manifest'}` });
    return parsed.manifest;
  }
  const key = `${implPath}\0${text}`;
  const cached = parsedByText.get(key);
  if (cached) return cached;
  const parsed = parseImpl(text);
  if (!parsed.manifest) throw new PolywaveError({ code: parsed.findings[0]?.code ?? 'V001_MANIFEST_INVALID', message: `${implPath}: ${parsed.findings[0]?.message ?? 'not a usable IMPL manifest'}` });
  if (parsedByText.size > 32) parsedByText.clear();
  parsedByText.set(key, parsed.manifest);
  return parsed.manifest;
}

/** Moves the IMPL's state (legal hops only); a no-op when it is already there. */
async function moveState(implPath: string, to: 'WAVE_EXECUTING' | 'BLOCKED'): Promise<string> {
  return editImpl(implPath, (parsed) => {
    const current = (parsed.manifest?.state ?? '').trim();
    if (current === to) return { edits: [], outcome: current };
    const check = checkTransition(current, to);
    if (!check.ok) throw new PolywaveError({ code: check.finding.code, message: check.finding.message, exitCode: 1 });
    // A new wave starts with no merge in flight (the previous wave left `completed`, V023).
    const mergeState = parsed.manifest?.merge_state;
    const resetMerge = to === 'WAVE_EXECUTING' && mergeState !== undefined && mergeState !== 'idle';
    return { edits: [{ path: ['state'], value: to }, ...(resetMerge ? [{ path: ['merge_state'], value: 'idle' }] : [])], outcome: to };
  });
}

function describeProblems(check: StopCheck): string {
  return check.problems.map((problem) => problem.message).join('; ');
}

/** E19 failure type of an attempt that produced no usable report. */
function failureTypeOfOutcome(outcome: AgentOutcome): string {
  if (outcome.status === 'timeout' || outcome.status === 'max-turns') return 'timeout';
  if (outcome.failure?.kind === 'transient') return 'transient';
  return 'escalate';
}

/**
 * run-wave: prepare-wave → launch every agent (E1 order, bounded per provider, one agent's failure
 * never cancels its siblings) → E42 checks as each stops → E19 reactions (relaunch with the journal's
 * recovered context and the retry note, or pause) → finalize-wave when every agent completed, else
 * BLOCKED with a per-agent explanation and nothing merged (E7). Solo waves (I6) and integration
 * waves (E27) run their agents in the repository root on the merge target, without worktrees.
 * Never prints; progress goes to `events`.
 */
export async function runWave(options: RunWaveOptions): Promise<RunWaveResult> {
  // The sandbox probe runs while the first steps do (issue 12's bench:program: ~0.3 s off the tier's start).
  if (!options.unsafeNoSandbox) prewarmSandboxStatus(options.env);
  const started = performance.now();
  // X42-11/12: no host program is looked up inside the repository (an agent can write it).
  distrustSearchRoot(path.dirname(path.resolve(options.implPath)));
  // The wave's agents run at once in this process, each audited with git after its tool calls: their git
  // commands are started by a small helper process, not by this (large) one's main thread, where each fork
  // held every agent's tool calls and every event for 5–17 ms (a 16-agent wave: ~9 s of its main thread).
  offloadGitSpawns();
  const env = options.env ?? {};
  const implPath = options.implPath;
  const events: EventBus | undefined = options.events;
  let manifest = await readManifest(implPath);
  const slug = implSlugFromPath(implPath, manifest);
  const waveData = findWave(manifest, options.wave);
  if (!waveData) throw new PolywaveError({ code: 'P011_WAVE_NOT_FOUND', message: `wave ${options.wave} not found in ${path.basename(implPath)}` });
  // Issue 13 (F1): "merged" is decided from git. A wave whose agents all reported complete but whose
  // commits are not in the target was never finalized (the orchestrator stopped before the merge): finalize it below.
  const finishState = isWaveFinished(manifest, options.wave) && options.rerun !== true
    ? (await waveFinishInGit((options.gitAt ?? ((directory: string) => createGit(directory, { env: options.env ?? {} })))(options.repoDir ?? path.dirname(implPath)), manifest, slug, options.wave, options.mergeTarget ?? 'HEAD')).finish
    : 'not-finished';
  if (finishState === 'finished') {
    throw new PolywaveError({ code: codes.waveAlreadyVerified, message: `wave ${options.wave} of ${path.basename(implPath)} is already merged and verified; nothing changed — pass --rerun to run it again`, exitCode: 1 });
  }
  const order = launchOrder(manifest, options.wave, { prioritize: options.prioritize !== false });
  const result: RunWaveResult = {
    wave: options.wave,
    slug,
    impl_path: implPath,
    success: false,
    state: manifest.state ?? '',
    launch_order: order.order,
    launch_reason: order.reason,
    concurrency: 0,
    agents: [],
    usage: emptyUsage(),
    duration_ms: 0,
  };
  const budget = options.budget;
  // E40 agent_performance, one per launched agent, sent when the wave ends: its test counts come from the
  // agent's gate outputs, which finalize-wave produces after the agents are done.
  const performanceEvents: Array<ReturnType<typeof agentPerformanceEvent>> = [];
  const finish = () => {
    if (!result.budget && budget && budget.breaches.length > 0) result.budget = budget.breaches.find((breach) => breach.slug === slug) ?? budget.breaches[0];
    for (const event of performanceEvents.splice(0)) events?.emit(withTestCounts(event, result.finalize, result.agents.length === 1));
    result.duration_ms = Math.round(performance.now() - started);
    events?.emit({ v: 1, type: 'wave-run-end', slug, wave: options.wave, success: result.success, state: result.state, duration_ms: result.duration_ms, cost_usd: result.usage.costUsd });
    return result;
  };
  const engine = { ...(options.env ? { env: options.env } : {}), ...(options.now ? { now: options.now } : {}), ...(options.signal ? { signal: options.signal } : {}), ...(events ? { events } : {}), ...(options.onStep ? { onStep: options.onStep } : {}), ...(options.gitAt ? { gitAt: options.gitAt } : {}), ...(options.gateTimeoutMs ? { gateTimeoutMs: options.gateTimeoutMs } : {}) };
  const gitAt = options.gitAt ?? ((directory: string) => createGit(directory, { env }));
  const repoDir = options.repoDir ?? (await gitAt(path.dirname(implPath)).topLevel());
  // X13 #1/#2: never a repository an agent nested in the checkout (docs/.git), before anything runs there.
  await assertNotNestedRepository(repoDir, env);
  // The run record names the repositories the run works on (polywave serve matches runs to repositories by them).
  recordRunRepositories(events, [repoDir]);
  // A one-agent wave works in the main checkout — unless the wave merges into another branch than
  // the one checked out there (a PROGRAM tier's IMPL branch): then it gets a worktree like any wave.
  const mergesElsewhere = options.mergeTarget !== undefined && options.mergeTarget !== (await gitAt(repoDir).currentBranch().catch(() => undefined));
  const solo = (isSoloWave(manifest, options.wave) && !mergesElsewhere) || waveData.type === 'integration';

  // A crash during the merge (E9), or a wave reported but never finalized (F1): the agents are done; finish the merge.
  if ((manifest.state ?? '').trim() === 'WAVE_MERGING' || finishState === 'unmerged') {
    const finalized = await finalizeWave({ ...engine, ...remoteGatesOf(options.dispatcher), implPath, wave: options.wave, ...(options.concurrentRefs ? { concurrentRefs: options.concurrentRefs } : {}), ...(options.orchestratorFiles ? { orchestratorFiles: options.orchestratorFiles } : {}), ...(options.repoDir ? { repoDir: options.repoDir } : {}), ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}), ...(options.strictOwnership ? { strictOwnership: true } : {}), ...(options.acceptChanges ? { acceptChanges: true } : {}) });
    result.finalize = finalized;
    result.state = finalized.state || result.state;
    result.success = finalized.success;
    return finish();
  }

  // A20-34: a cross-repo wave (E51) through the Redis dispatcher is refused before anything is prepared: the dispatcher
  // pushes each repository's wave base to the one `refs/polywave/base/<slug>/wave<N>` of the shared remote, where the
  // pushes race (the loser failed as DISPATCH_REMOTE_UNREACHABLE) and a later one moves the ref under the other's jobs.
  if (options.dispatcher?.name === 'redis' && !solo) {
    const roots = new Map<string, string>();
    for (const agent of waveData.agents ?? []) {
      const key = agentRepoKey(manifest, options.wave, agent.id ?? '');
      const root = (await resolveRepoRoot(manifest, key, repoDir, path.dirname(implPath))) ?? key;
      if (!roots.has(root)) roots.set(root, key === '' ? path.basename(repoDir) : key);
    }
    if (roots.size > 1) {
      throw new PolywaveError({
        code: dispatchCodes.crossRepo,
        message: `wave ${options.wave} of ${path.basename(implPath)} is a cross-repo wave (E51: its agents work in ${[...roots.values()].join(', ')}), which the Redis dispatcher does not run: each repository's wave base would go to the one ref refs/polywave/base/${slug}/wave${options.wave} of the shared remote; nothing was started — run it in-process (--dispatch inprocess)`,
        exitCode: 2,
      });
    }
  }

  // Other IMPL and PROGRAM manifests with uncommitted changes at the start (another IMPL's BLOCKED state record, which
  // run-wave leaves uncommitted): the orchestrators', not this wave's agents' — read-only to a solo agent, and no
  // tamper at finalize while their content is what it was here (outside attack X35-08: every wave was refused for it).
  const otherDirtyManifests = await uncommittedManifests(gitAt(repoDir), repoDir, implPath);

  // Issue 14: a run whose money is spent pauses before the wave starts (nothing prepared, state unchanged).
  const spent = budget?.checkLaunch({ slug, wave: options.wave });
  if (spent) {
    result.budget = spent;
    result.blocked = { reason: `${spent.message}; wave ${options.wave} not started (raise the budget and re-run)`, agents: [] };
    return finish();
  }

  // 1. Prepare: worktrees and briefs (or, for solo/integration waves, briefs in the journal dir).
  const plans: AgentPlan[] = [];
  const agents = waveData.agents ?? [];
  const specOf = (agent: Agent) => resolveModelSpec(agent.model?.trim() || options.model, env);
  // Issue 11: a model-backed agent without the OS sandbox refuses (SANDBOX_UNAVAILABLE) before any worktree exists.
  for (const agent of agents) await decideAgentSandbox({ backend: specOf(agent).backend, env, ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}) });
  // X19: a cli agent's `agent_clis` template (the committed root config's) that is invalid refuses now (N014_CONFIG_INVALID, exit 2), not per agent after the worktrees exist.
  if (options.backend === undefined && agents.some((agent) => specOf(agent).backend === 'cli')) await readAgentCliTemplates(repoDir, env);
  if (solo) {
    const steps: StepResult[] = [];
    const rootGit = gitAt(repoDir);
    // The agent works in this checkout: the user's own uncommitted changes there would be taken for the
    // agent's (E42) and refused at the merge (tamper check) after the agent has run — refuse them now, as
    // prepare-wave does for a worktree wave.
    const dirty = await classifyDirtyTree({ key: '', root: repoDir, git: rootGit, primary: true }, implPath);
    if (dirty.blocking.length > 0) {
      const detail = `working tree has uncommitted changes: ${dirty.blocking.slice(0, 30).join(', ')}${dirty.blocking.length > 30 ? ` and ${dirty.blocking.length - 30} more` : ''} — commit or stash them before running wave ${options.wave} (a ${waveData.type === 'integration' ? 'integration' : 'solo'} wave's agent works in this checkout)`;
      result.prepare = { steps: [{ step: 'working_dir_check', status: 'failed', detail, data: { files: dirty.blocking } }], success: false };
      return finish();
    }
    const base = await rootGit.headCommit();
    const soloOrchestratorPaths = [path.relative(repoDir, implPath).split(path.sep).join('/'), ...otherDirtyManifests.keys()];
    for (const agent of agents) {
      const prepared = await prepareAgent({ ...engine, implPath, wave: options.wave, agent: agent.id ?? '', noWorktree: true, ...(options.rerun ? { rerun: true } : {}), ...(options.repoDir ? { repoDir: options.repoDir } : {}), ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}), ...(options.portOffset ? { portOffset: options.portOffset } : {}) });
      steps.push(...prepared.steps);
      if (!prepared.success) {
        result.prepare = { steps, success: false };
        return finish();
      }
      plans.push({ agent, id: agent.id ?? '', cwd: repoDir, base, git: rootGit, spec: specOf(agent), role: waveData.type === 'integration' ? 'integration' : 'wave', solo: true, root: repoDir, orchestratorPaths: soloOrchestratorPaths, ...((await rootGit.currentBranch()) ? { branch: (await rootGit.currentBranch())! } : {}) });
    }
    result.prepare = { steps, success: true };
  } else {
    const prepared = await prepareWave({ ...engine, implPath, wave: options.wave, ...(options.dispatcher?.name === 'redis' ? { setupOnWorkers: true } : {}), ...(options.concurrentRefs ? { concurrentRefs: options.concurrentRefs, leaveStateUncommitted: true } : {}), ...(options.repoDir ? { repoDir: options.repoDir } : {}), ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}), ...(options.portOffset ? { portOffset: options.portOffset } : {}), ...(options.noCache ? { noCache: true } : {}), ...(options.skipCritic ? { skipCritic: true } : {}), ...(options.rerun ? { rerun: true } : {}), ...(options.acceptChanges ? { acceptChanges: true } : {}) });
    result.prepare = prepared;
    if (!prepared.success) return finish();
    const preparedManifest = await readManifest(implPath);
    const recordedBase = waveBaseCommit(preparedManifest, options.wave);
    for (const worktree of prepared.worktrees) {
      const agent = agents.find((item) => item.id === worktree.agent);
      if (!agent) continue;
      const git = gitAt(worktree.path);
      let root = repoDir;
      let base = recordedBase;
      if (worktree.repo || !base) {
        // Another repository (cross-repo wave), or no recorded base: where its worktree branched off.
        const commonDir = await git.commonDir();
        root = path.dirname(path.resolve(worktree.path, commonDir));
        const mainHead = await gitAt(root).headCommit();
        base = (await git.run(['merge-base', 'HEAD', mainHead])).stdout.trim();
      }
      plans.push({ agent, id: worktree.agent, cwd: worktree.path, branch: worktree.branch, base, git, spec: specOf(agent), role: 'wave', solo: false, root });
      // No agent runs in this worktree yet: an index.lock there is the leftover of a git process
      // killed with an earlier run (E9 re-entry after a SIGKILL); every git write would fail on it.
      const gitDir = worktreeGitDirOf(worktree.path) ?? path.resolve(worktree.path, (await git.run(['rev-parse', '--git-dir'])).stdout.trim());
      if (await rm(path.join(gitDir, 'index.lock')).then(() => true, () => false)) {
        events?.emit({ v: 1, type: 'step-end', command: 'run-wave', slug, step: { step: 'stale_index_lock', status: 'warning', detail: `agent ${worktree.agent}: removed a stale index.lock in ${gitDir} (left by a git process of a killed run)`, duration_ms: 0 } });
      }
    }
  }
  manifest = await readManifest(implPath);
  result.state = await moveState(implPath, 'WAVE_EXECUTING');

  // 2. Launch (E1 order; bounded per provider; agents of a solo/integration wave share one checkout, so one at a time).
  const byId = new Map(plans.map((plan) => [plan.id, plan]));
  const ordered = order.order.map((id) => byId.get(id)).filter((plan): plan is AgentPlan => plan !== undefined);
  const concurrency = solo ? 1 : Math.max(1, Math.min(options.concurrency ?? Math.min(ordered.length, 16), 64));
  result.concurrency = concurrency;
  const limiter = new ProviderLimiter(concurrency);
  const sequencer = createLaunchSequencer(ordered.map((plan) => plan.id));
  recordRunRepositories(events, plans.map((plan) => plan.root));
  events?.emit({ v: 1, type: 'wave-run-start', slug, wave: options.wave, agents: ordered.map((plan) => plan.id), order: order.order, reordered: order.reordered, concurrency });
  // E40: agents start (one wave_start per wave, not per agent).
  events?.emit(activityEvent('wave_start', { slug, wave: options.wave, details: `${ordered.length} agent(s): ${ordered.map((plan) => plan.id).join(', ')}` }));

  const scaffoldFiles = (manifest.scaffolds ?? []).map(scaffoldPath).filter((file) => file !== '');
  const gateCommands = (manifest.quality_gates?.gates ?? []).map((gate) => gate.command ?? '').filter((command) => command !== '');
  const backoffBase = options.retryBackoffMs ?? 2000;
  // Agents that report at the same moment share one locked write (group commit).
  const reportEditor = createBatchedImplEditor(implPath);
  const stopReasons = new Map<string, string>();

  const runOne = async (plan: AgentPlan): Promise<AgentRunSummary> => {
    const summary: AgentRunSummary = { agent: plan.id, model: plan.spec.raw, backend: plan.spec.backend, status: 'not-run', attempts: [], usage: emptyUsage(), turns: 0, duration_ms: 0 };
    const agentStarted = performance.now();
    const owned = ownedFiles(manifest, options.wave, plan.id);
    const journal = journalPaths(plan.root, slug, options.wave, plan.id);
    let previousReport = JSON.stringify(manifest.completion_reports?.[plan.id] ?? null);
    // Outside attack N5: what E42 found wrong with the last report this run refused (a later attempt
    // that files nothing new is diagnosed with it, not with "no completion report").
    let refusedReport: string | undefined;
    let retry: WaveRetryContext | undefined = options.initialRetry?.[plan.id];
    // E9 re-entry: an agent whose complete report still passes E42 is not launched again.
    const existing = manifest.completion_reports?.[plan.id] as CompletionReportRecord | undefined;
    // A17-34: a report a dispatched agent sent early, whose job still runs on a worker (the orchestrator was killed
    // after the report arrived): that job is awaited — the agent may commit more after reporting — not taken as done.
    // And whatever the report (none yet: A18-17, `retry` after the kill), an attempt of the agent still in flight is
    // the one this run goes on with: the dispatcher awaits that job (A18-09: a re-run's request for it differs — the
    // killed run's fix context is gone — yet it is the same run of the agent), never a second run beside it.
    // (A19-21: when it cannot be told, the agent counts as in flight at the attempt this run would make — never an early
    // report taken as final because a listing was slow)
    const stillRunning = options.dispatcher?.inFlight && !plan.solo && plan.branch ? await options.dispatcher.inFlight({ slug, wave: options.wave, agentId: plan.id, baseCommit: plan.base, worktree: plan.cwd }).catch(() => retry?.attempt ?? 1) : undefined;
    // A19-11/A19-19: a complete report whose job then failed (or was refused) while no orchestrator ran is a lost run's:
    // not taken as final — the agent is launched again (the failed job runs again, E9 never reuses a failure).
    // A20-49: the agent's last attempt was dispatched (a job on a worker) and never ended here — its orchestrator was
    // killed — and this run cannot ask that job's queue (in-process: `--dispatch inprocess`, or no --dispatch flags):
    // the job may still run, so a report its progress wrote early is not final. It is withdrawn and the agent runs again here.
    const uncheckable = existing?.status === 'complete' && !options.dispatcher?.lostRun && !plan.solo && plan.branch ? await openDispatchedAttempt(journal.dir) : undefined;
    const lostRun =
      uncheckable !== undefined
        ? `its attempt ${uncheckable.attempt} ran as a job on a worker (${uncheckable.dispatched.flags}) that may still run, and this run (in-process) cannot check it — withdrawn and run again here; re-run with those flags instead to await that job`
        : existing?.status === 'complete' && stillRunning === undefined && options.dispatcher?.lostRun && !plan.solo && plan.branch
          ? await options.dispatcher.lostRun({ slug, wave: options.wave, agentId: plan.id, baseCommit: plan.base }).catch((error: unknown) => `its jobs could not be read to prove it final (${error instanceof Error ? error.message.slice(0, 200) : String(error)})`)
          : undefined;
    if (lostRun !== undefined) events?.emit({ v: 1, type: 'step-end', command: 'run-wave', slug, step: { step: 'lost_run', status: 'warning', detail: `agent ${plan.id}: its report is not taken as final — ${lostRun}`, duration_ms: 0 } });
    if (lostRun !== undefined) {
      // Withdrawn before anything else is recorded (a `blocked` report at the base): whatever this run does next, no
      // finalize-wave, `retry` or re-run (E9) takes the killed run's report for the agent's. (A23-04: also when the
      // dispatcher judged it — a job of another request left in flight, not adopted: the attempt run instead failed
      // without filing a report, and finalize-wave then merged the early one while the job's later commits were lost.)
      const notes = uncheckable !== undefined ? `withdrawn by the orchestrator: the report came from attempt ${uncheckable.attempt}, a job on a worker (${uncheckable.dispatched.flags}) that an in-process run cannot check` : `withdrawn by the orchestrator: the report is not final — ${lostRun.slice(0, 300)}`;
      await saveCompletionReport(implPath, plan.id, { status: 'blocked', failure_type: 'transient', commit: plan.base, notes, worktree: plan.cwd, ...(plan.branch ? { branch: plan.branch } : {}) }, { editor: reportEditor });
      previousReport = JSON.stringify((await readManifest(implPath)).completion_reports?.[plan.id] ?? null);
    }
    if (existing?.status === 'complete' && stillRunning === undefined && lostRun === undefined) {
      const jail = await createJail({ root: plan.cwd, ownedFiles: owned, ...(plan.branch ? { branch: plan.branch } : {}), ...(plan.orchestratorPaths ? { orchestratorPaths: plan.orchestratorPaths } : {}) }, { env });
      const check = await checkAgentStop({ git: plan.git, jail, baseCommit: plan.base, report: existing });
      if (check.ok) {
        // (final: a dispatched attempt's job was proven to have ended with a complete result, or it ran here)
        await settleAttempt(journal.dir).catch(() => undefined);
        summary.status = 'complete';
        summary.resumed = true;
        summary.explanation = 'already complete (E9: not relaunched)';
        events?.emit({ v: 1, type: 'agent-end', slug, wave: options.wave, agent: plan.id, attempt: 0, status: 'complete', turns: 0, input_tokens: 0, output_tokens: 0, duration_ms: 0, explanation: summary.explanation });
        return summary;
      }
    }
    // (an agent outside the retry whose job is still in flight is awaited all the same: its work is not dropped)
    if (options.onlyAgents && !options.onlyAgents.includes(plan.id) && stillRunning === undefined && lostRun === undefined) {
      const status = existing?.status;
      summary.status = status === 'blocked' ? 'blocked' : status === 'partial' ? 'partial' : 'failed';
      summary.explanation = `not relaunched (retry of ${options.onlyAgents.join(', ')} only); report: ${status ?? 'none'}`;
      return summary;
    }
    // `retry` continues the agent's numbering (attack F20: a dispatched relaunch numbered 1 again was the first run's job);
    // a job still in flight is that attempt's (E9: the same request is the same job, awaited).
    const firstAttempt = stillRunning ?? retry?.attempt ?? 1;
    // Whether the current attempt filed a report (the agent's set_completion, or the dispatcher for a job's result).
    let filedThisAttempt = false;
    for (let attempt = firstAttempt; ; attempt += 1) {
      filedThisAttempt = false;
      if (options.signal?.aborted) {
        summary.status = 'failed';
        summary.explanation = 'the run was interrupted before this agent finished';
        break;
      }
      const current = await readManifest(implPath);
      const recovered = await recoverJournalContext(journal, { scaffoldFiles, gateCommands, completionReportWritten: current.completion_reports?.[plan.id] !== undefined });
      const brief = renderAgentBrief({
        manifest: current,
        implPath,
        wave: options.wave,
        agent: plan.agent,
        ...(plan.solo ? {} : { worktreePath: plan.cwd, ...(plan.branch ? { branch: plan.branch } : {}) }),
        ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}),
        ...(recovered.markdown ? { recoveredContext: recovered.markdown } : {}),
      });
      const reportVia = plan.spec.backend === 'cli' ? 'cli' : 'tool';
      const prompt = renderRolePrompt('wave', {
        brief,
        agentId: plan.id,
        wave: options.wave,
        implPath,
        ownedFiles: owned,
        ...(plan.solo ? { repoRoot: plan.root } : { worktreePath: plan.cwd, ...(plan.branch ? { branch: plan.branch } : {}) }),
        reportVia,
        ...(recovered.markdown ? { recoveredContext: recovered.markdown } : {}),
        ...(retry ? { retry } : {}),
      });
      // E1: the first launch queues in launch order (acquire() queues synchronously, before its first await).
      if (attempt === firstAttempt) await sequencer.turn(plan.id);
      const providerSlot = limiter.acquire(providerKey(plan.spec));
      sequencer.queued(plan.id);
      const releaseProvider = await providerSlot;
      const releaseSlot = options.agentSlots ? await options.agentSlots.acquire() : () => undefined;
      const release = () => {
        releaseSlot();
        releaseProvider();
      };
      // Issue 14: no launch once the run's (or the wave's) budget is spent; the run pauses.
      const noMoney = budget?.checkLaunch({ slug, wave: options.wave, agent: plan.id });
      if (noMoney) {
        release();
        result.budget ??= noMoney;
        summary.status = summary.attempts.length > 0 ? summary.status : 'not-run';
        if (summary.status === 'complete') summary.status = 'failed';
        summary.explanation = `${noMoney.message}; not launched${attempt > 1 ? ` again (attempt ${attempt})` : ''}`;
        break;
      }
      const attemptStarted = performance.now();
      // Issue 17: where it runs (solo/integration agents and agents without a branch never leave this process).
      const dispatcher = options.dispatcher && !plan.solo && plan.branch ? options.dispatcher.name : 'in-process';
      // A20-49: a dispatched attempt is recorded as such until it ends here (a re-run of a killed run reads it).
      // (A23-04: with the run's `--model`, which the re-run a refusal names must give again — another model is another
      // request, whose job is not the one in flight)
      await recordAttempt(journal.dir, attempt, dispatcher === 'redis' ? { dispatcher: 'redis', flags: `${options.dispatcher?.flags ?? '--dispatch redis://…'}${options.model ? ` --model ${/^[\w@%+=:,./-]+$/.test(options.model) ? options.model : shellQuote(options.model)}` : ''}` } : undefined).catch(() => undefined);
      events?.emit({ v: 1, type: 'agent-launch', slug, wave: options.wave, agent: plan.id, attempt, model: plan.spec.raw, backend: plan.spec.backend, dispatcher });
      let turns = 0;
      const usage = emptyUsage();
      // Issue 14: a budget stop aborts this attempt only (siblings go on unless the limit covers them).
      const budgetStop = new AbortController();
      const account = budget?.startAgent({ slug, wave: options.wave, agent: plan.id }, (breach) => budgetStop.abort(Object.assign(new Error(breach.message), { name: 'BudgetExceeded' })));
      // E40: one `cost` event per model call, from the backend's running totals.
      const meter = createCostMeter({
        spec: plan.spec,
        ...(options.backend ? { backend: options.backend.name } : {}),
        role: plan.role,
        attempt,
        labels: { slug, wave: options.wave, agent: plan.id },
        ...(events ? { emit: (event) => events.emit(event) } : {}),
        ...(account ? { onCost: (usd: number) => account.charge(usd) } : {}),
      });
      // (A dispatched agent's events come from its worker: `at` is when they happened there, `worker` its id.)
      // N5: the last set_completion call of this attempt that the tool or the writer refused (its error text).
      let refusedCall: string | undefined;
      const onEvent = (event: AgentEvent, meta: { at?: number; worker?: string } = {}) => {
        const where = { ...(meta.at !== undefined ? { at: meta.at } : {}), ...(meta.worker ? { worker: meta.worker } : {}) };
        if (event.type === 'tool-call-end' && event.tool === 'set_completion') refusedCall = event.isError ? event.output.split('\n')[0]!.slice(0, 400) : undefined;
        if (event.type === 'turn-end') {
          turns = event.turn;
          Object.assign(usage, event.usage);
          meter.observe(event.turn, event.usage);
          events?.emit({ v: 1, type: 'agent-progress', slug, wave: options.wave, agent: plan.id, attempt, turns, input_tokens: usage.inputTokens, output_tokens: usage.outputTokens, cost_usd: usage.costUsd, ...where });
        } else if (event.type === 'tool-call-end') {
          events?.emit({ v: 1, type: 'agent-tool-call', slug, wave: options.wave, agent: plan.id, attempt, tool: event.tool, is_error: event.isError, duration_ms: event.durationMs, ...where });
        } else if (event.type === 'tool-call-deny') {
          events?.emit({ v: 1, type: 'agent-tool-call', slug, wave: options.wave, agent: plan.id, attempt, tool: event.denial.tool, is_error: true, denied: `${event.denial.code}: ${event.denial.reason}`, duration_ms: 0, ...where });
        }
      };
      let outcome: AgentOutcome;
      try {
        const run = await (options.dispatcher ?? inProcessDispatcher).runAgentJob({ context: { slug, wave: options.wave, agentId: plan.id, attempt, baseCommit: plan.base, ...(plan.branch ? { branch: plan.branch } : {}), repoRoot: plan.root, primaryRoot: repoDir, solo: plan.solo }, options: {
          ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}),
          agentId: plan.id,
          role: plan.role,
          wave: options.wave,
          attempt,
          model: plan.spec,
          systemPrompt: prompt.system,
          prompt: prompt.user,
          cwd: plan.cwd,
          ...(plan.branch ? { branch: plan.branch } : {}),
          baseCommit: plan.base,
          implPath,
          policy: {
            root: plan.cwd,
            ownedFiles: owned,
            frozenPaths: scaffoldFiles.filter((file) => !owned.includes(file)),
            ...(plan.branch ? { branch: plan.branch } : {}),
            readablePaths: [implPath],
            // Solo/integration agents share the checkout with the manifest the orchestrator writes.
            ...(plan.orchestratorPaths ? { orchestratorPaths: plan.orchestratorPaths } : {}),
          },
          limits: { ...(options.agentTimeoutMs ? { timeoutMs: options.agentTimeoutMs } : {}), ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}) },
          env: { ...env, POLYWAVE_REPO_ROOT: plan.root, ...(plan.solo ? { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } : {}) },
          ...(account ? { signal: options.signal ? AbortSignal.any([options.signal, budgetStop.signal]) : budgetStop.signal } : options.signal ? { signal: options.signal } : {}),
          ...(options.backend ? { backend: options.backend } : {}),
          onEvent,
          journal,
          reportCompletion: async (input): Promise<ReportCompletionResult> => {
            try {
              const report = await saveCompletionReport(implPath, plan.id, { worktree: plan.cwd, ...(plan.branch ? { branch: plan.branch } : {}), ...input }, { editor: reportEditor });
              filedThisAttempt = true;
              return { ok: true, status: report.status ?? '' };
            } catch (error) {
              return PolywaveError.isInstance(error) ? { ok: false, code: error.code, message: error.message } : { ok: false, code: 'X001_INVALID_INPUT', message: String(error) };
            }
          },
          hasCompletionReport: async () => filedThisAttempt || JSON.stringify((await readManifest(implPath)).completion_reports?.[plan.id] ?? null) !== previousReport,
          ...(options.keepScratch ? { keepScratch: true } : {}),
        }, onWorkerEvent: onEvent, onPlaced: (placed) => events?.emit({ v: 1, type: 'agent-running', slug, wave: options.wave, agent: plan.id, attempt, dispatcher: 'redis', job_id: placed.job_id, worker: placed.worker, ...(placed.host ? { host: placed.host } : {}) }) });
        outcome = run.outcome;
        // A19-09: a killed run's job of this agent with another request (another --model) was not adopted: said, with its model.
        for (const left of run.dispatch?.not_adopted ?? []) events?.emit({ v: 1, type: 'step-end', command: 'run-wave', slug, step: { step: 'not_adopted', status: 'warning', detail: notAdoptedWarning(plan.id, plan.spec.raw, left), duration_ms: 0 } });
        // A23-04: a report on record that this attempt did not file, beside a job it did not adopt, is that job's early
        // report (the killed run wrote it from the job's progress): never final — the job may still commit, and nothing
        // here will collect its result. Withdrawn, so that no finalize-wave merges it once this attempt failed.
        if ((run.dispatch?.not_adopted?.length ?? 0) > 0 && !filedThisAttempt) {
          const onRecord = (await readManifest(implPath)).completion_reports?.[plan.id] as CompletionReportRecord | undefined;
          if (onRecord?.status === 'complete' && JSON.stringify(onRecord) === previousReport) {
            await saveCompletionReport(implPath, plan.id, { status: 'blocked', failure_type: 'transient', commit: plan.base, notes: `withdrawn by the orchestrator: the report came from job ${run.dispatch!.not_adopted![0]!.job_id} of a killed run, left in flight and not adopted (another request) — its result is never collected`, worktree: plan.cwd, ...(plan.branch ? { branch: plan.branch } : {}) }, { editor: reportEditor });
            previousReport = JSON.stringify((await readManifest(implPath)).completion_reports?.[plan.id] ?? null);
          }
        }
        // E42 whatever the backend: ownership, commit, report, stubs.
        const after = await readManifest(implPath);
        const reportValue = after.completion_reports?.[plan.id] as CompletionReportRecord | undefined;
        // E42/I4: filed in this attempt, even when it reads exactly as the one on record (A17-35: an orchestrator restarted after a
        // dispatched agent's early report awaits the same job, whose result files that report again — taken for "no
        // report", the agent was run a second time with a fix prompt).
        const fresh = filedThisAttempt || JSON.stringify(reportValue ?? null) !== previousReport;
        const report = fresh ? reportValue : undefined;
        if (fresh) previousReport = JSON.stringify(reportValue ?? null);
        const check = await checkAgentStop({ git: plan.git, jail: run.jail, baseCommit: plan.base, report });
        // The agent's cost IS the sum of its `cost` events (the remainder beyond the last turn is emitted now).
        outcome = { ...outcome, usage: meter.settle(outcome.usage, outcome.turns) };
        // The actuals stay with the journal (estimate's history when no event store is around).
        if (meter.events.length > 0) await appendCostJournal(journal.dir, meter.events);
        account?.end();
        const budgetBreach = account?.breach;
        if (budgetBreach) {
          result.budget ??= budgetBreach;
          stopReasons.set(plan.id, 'budget_exceeded');
        }
        const attemptSummary: AgentAttempt = {
          attempt,
          outcome: outcome.status,
          ...(outcome.failure ? { failure: `${outcome.failure.kind}: ${outcome.failure.message}` } : {}),
          ...(report?.status ? { report_status: report.status } : {}),
          ...(report?.failure_type ? { failure_type: report.failure_type } : {}),
          stop_check: { ok: check.ok, problems: check.problems, commits: check.commits },
          turns: outcome.turns,
          usage: outcome.usage,
          duration_ms: Math.round(performance.now() - attemptStarted),
          ...(run.dispatch ? { dispatch: run.dispatch } : {}),
        };
        summary.attempts.push(attemptSummary);
        addUsage(summary.usage, outcome.usage);
        summary.turns += outcome.turns;

        // What happened, as an E19 failure type (or success).
        let failureType: string | undefined;
        let explanation = '';
        let fixDetails: string | undefined;
        // A20-33/A20-28/A20-17: a dispatched attempt's report is final only when its job ended with its result (the
        // worker's push went through, the result reached this orchestrator and its commits were taken). A report the
        // job's progress wrote early belongs to a run that may never have finished — its job removed (the last capable
        // worker died), Redis lost, its push refused or the remote gone after the pack brought its commits: such an
        // attempt is judged by its failure, and the early report is withdrawn (a `blocked` report at the base), so no
        // finalize-wave, `retry` or re-run (E9) ever merges it. Fail closed: only the dispatcher's `job_result` counts.
        // (A job that returned its result after the agent failed past its report is judged by the report, as in-process.)
        let withdrawFailed = false;
        const earlyOnly = run.dispatch !== undefined && report?.status === 'complete' && run.dispatch.job_result !== true;
        if (earlyOnly) {
          failureType = failureTypeOfOutcome(outcome);
          const failure = outcome.failure?.message ?? outcome.status;
          explanation = `reported complete on ${run.dispatch?.worker ?? 'a worker'}, but its job ended without a complete result: ${failure}`;
          const withdrawn = await saveCompletionReport(implPath, plan.id, { status: 'blocked', failure_type: failureType === 'transient' ? 'transient' : 'escalate', commit: plan.base, notes: `withdrawn by the orchestrator: the report came from a run of job ${run.dispatch?.job_id ?? '?'} that did not end with a complete result (${failure.slice(0, 300)})`, worktree: plan.cwd, ...(plan.branch ? { branch: plan.branch } : {}) }, { editor: reportEditor }).catch(() => undefined);
          if (withdrawn) previousReport = JSON.stringify((await readManifest(implPath)).completion_reports?.[plan.id] ?? null);
          else withdrawFailed = true;
        } else if (report?.status === 'complete' && check.ok) {
          summary.status = 'complete';
        } else if (report?.status === 'complete') {
          // The agent claimed completion but E42 refused it: a fixable failure with the problems as the fix.
          failureType = 'fixable';
          explanation = `reported complete, but E42 refused it: ${describeProblems(check)}`;
          fixDetails = explanation;
          refusedReport = describeProblems(check);
        } else if (report && (report.status === 'partial' || report.status === 'blocked')) {
          failureType = report.failure_type ?? '';
          explanation = `reported ${report.status}${report.failure_type ? ` (${report.failure_type})` : ''}${report.notes ? `: ${report.notes}` : ''}`;
          if (!check.ok) explanation += `; E42: ${describeProblems(check)}`;
        } else if (budgetBreach) {
          // E19 has no budget type: escalate (a human raises the budget and re-runs; never relaunched automatically).
          failureType = 'escalate';
          explanation = `stopped by the budget: ${budgetBreach.message}${report ? '' : '; no completion report'} (journal kept)`;
        } else {
          failureType = failureTypeOfOutcome(outcome);
          // N5: a report that exists but failed a check is named by that check, not as "no completion report".
          const others = check.problems.filter((problem) => problem.code !== 'E42_I4_NO_REPORT').map((problem) => problem.message);
          const why =
            refusedCall !== undefined
              ? `its set_completion call was refused: ${refusedCall}`
              : reportValue !== undefined && refusedReport !== undefined
                ? `the completion report on record is the one E42 refused before (${refusedReport}) and was not filed again with a fix`
                : reportValue !== undefined
                  ? 'the completion report on record is from before this attempt; it filed none'
                  : undefined;
          explanation =
            outcome.status === 'finished'
              ? why !== undefined
                ? `stopped without an accepted completion report (E42/I4): ${why}${others.length > 0 ? `; ${others.join('; ')}` : ''}`
                : `stopped without a completion report (E42/I4)${check.ok ? '' : `: ${describeProblems(check)}`}`
              : `${outcome.status}${outcome.failure ? `: ${outcome.failure.message}` : ''}; ${why ?? 'no completion report'}`;
          if (outcome.status === 'finished') {
            failureType = 'fixable';
            fixDetails = why !== undefined ? `Your previous run ended without an accepted completion report: ${why}. Fix that, commit, and call set_completion again.` : 'Your previous run ended without a completion report. Commit your work and call set_completion.';
          }
        }
        // A20-49: the job's outcome was taken here and its early report judged (kept with the job's result, withdrawn
        // otherwise): the attempt is no longer open. An interrupted run's job goes on: its attempt stays open.
        if (dispatcher === 'redis' && outcome.status !== 'aborted' && !withdrawFailed) await settleAttempt(journal.dir).catch(() => undefined);
        events?.emit({ v: 1, type: 'agent-end', slug, wave: options.wave, agent: plan.id, attempt, status: summary.status === 'complete' ? 'complete' : (report?.status ?? outcome.status), ...(failureType !== undefined ? { failure_type: failureType } : {}), turns: outcome.turns, input_tokens: outcome.usage.inputTokens, output_tokens: outcome.usage.outputTokens, cost_usd: outcome.usage.costUsd, duration_ms: attemptSummary.duration_ms, ...(explanation ? { explanation } : {}), ...(run.dispatch ? { dispatch: run.dispatch } : {}) });
        if (summary.status === 'complete') break;

        const decision = decideFailureAction({ failureType, attempt, ...(manifest.reactions ? { reactions: manifest.reactions } : {}), ...(options.auto ? { auto: true } : {}) });
        attemptSummary.decision = decision;
        summary.decision = decision;
        summary.explanation = `${explanation} → E19 ${decision.action}: ${decision.note}`;
        summary.status = outcome.status === 'finished' || report ? (report?.status === 'blocked' ? 'blocked' : report?.status === 'partial' ? 'partial' : 'failed') : 'failed';
        if (!decision.retry || options.signal?.aborted) break;
        const backoff = decision.failureType === 'transient' ? Math.min(30_000, backoffBase * 2 ** (attempt - firstAttempt)) : 0;
        events?.emit({ v: 1, type: 'agent-retry', slug, wave: options.wave, agent: plan.id, attempt, next_attempt: attempt + 1, failure_type: decision.failureType, action: decision.action, note: decision.note, backoff_ms: backoff });
        retry = {
          attempt: attempt + 1,
          failureType: decision.failureType,
          ...(report?.notes ? { previousNotes: report.notes } : {}),
          ...(fixDetails || report?.verification ? { details: [fixDetails, report?.verification ? `verification: ${report.verification}` : undefined].filter(Boolean).join('\n') } : {}),
        };
        if (backoff > 0) await sleep(backoff, undefined, options.signal ? { signal: options.signal } : {}).catch(() => undefined);
      } finally {
        account?.end();
        release();
      }
    }
    summary.duration_ms = Math.round(performance.now() - agentStarted);
    if (summary.attempts.length > 0) performanceEvents.push(agentPerformanceEvent(summary, { slug, wave: options.wave, files: await readReportFiles(implPath, plan.id), stopReason: stopReasons.get(plan.id) }));
    return summary;
  };

  // One agent failing never cancels the others: runOne returns data; an unexpected error becomes a failed summary.
  result.agents = await mapBounded(ordered, ordered.length, (plan) =>
    runOne(plan)
      .finally(() => sequencer.queued(plan.id))
      .catch((error: unknown): AgentRunSummary => ({
      agent: plan.id,
      model: plan.spec.raw,
      backend: plan.spec.backend,
      status: 'failed',
      attempts: [],
      explanation: `orchestrator error: ${error instanceof Error ? error.message : String(error)}`,
      usage: emptyUsage(),
      turns: 0,
      duration_ms: 0,
    })),
  );
  for (const agent of result.agents) addUsage(result.usage, agent.usage);

  // 3. Every agent complete → finalize; else BLOCKED, nothing merged (E7).
  const incomplete = result.agents.filter((agent) => agent.status !== 'complete');
  if (incomplete.length > 0) {
    result.blocked = {
      reason: `E7: ${incomplete.length} of ${result.agents.length} agent(s) did not complete; nothing was merged`,
      agents: incomplete.map((agent) => ({ agent: agent.agent, status: agent.status, explanation: agent.explanation ?? agent.status, ...(agent.decision ? { action: agent.decision.action } : {}) })),
    };
    // Interrupted (Ctrl-C): the agents were stopped, they did not fail — the wave stays as a kill
    // leaves it (WAVE_EXECUTING), which a re-run resumes, not BLOCKED for a human to decide.
    if (options.signal?.aborted) {
      result.blocked.reason = `interrupted: ${result.blocked.reason}`;
      return finish();
    }
    result.state = await moveState(implPath, 'BLOCKED').catch(() => result.state);
    if (result.budget && incomplete.some((agent) => stopReasons.has(agent.agent) || agent.status === 'not-run')) result.blocked.reason = `${result.budget.message}: the run paused (raise the budget and re-run); ${result.blocked.reason}`;
    events?.emit(activityEvent('wave_failed', { slug, wave: options.wave, details: result.blocked.reason }));
    return finish();
  }
  if (options.finalize === false) {
    result.success = true;
    return finish();
  }
  const unchangedManifests = [...otherDirtyManifests].filter(([relative, digest]) => contentDigest(path.join(repoDir, relative)) === digest).map(([relative]) => path.join(repoDir, relative));
  const orchestratorFiles = [...(options.orchestratorFiles ?? []), ...unchangedManifests];
  const finalized = await finalizeWave({ ...engine, ...remoteGatesOf(options.dispatcher), implPath, wave: options.wave, ...(options.concurrentRefs ? { concurrentRefs: options.concurrentRefs } : {}), ...(orchestratorFiles.length > 0 ? { orchestratorFiles } : {}), ...(options.repoDir ? { repoDir: options.repoDir } : {}), ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}), ...(options.noCache ? { noCache: true } : {}), ...(options.strictOwnership ? { strictOwnership: true } : {}) });
  result.finalize = finalized;
  result.state = finalized.state || result.state;
  result.success = finalized.success;
  return finish();
}

/** Appends `events` to the agent's `cost.jsonl` in its journal directory (best effort: never fails the wave). */
async function appendCostJournal(directory: string, events: readonly CostEvent[]): Promise<void> {
  try {
    await mkdir(directory, { recursive: true });
    await appendFile(path.join(directory, costJournalName), events.map((event) => `${JSON.stringify(event)}\n`).join(''));
  } catch {
    // the journal is informational here
  }
}

/** The agent's report's files and tests (E40 `agent_performance`), read once at the agent's end. */
async function readReportFiles(implPath: string, agentId: string): Promise<{ files: string[]; tests: number }> {
  const report = (await readManifest(implPath).catch(() => undefined))?.completion_reports?.[agentId] as CompletionReportRecord | undefined;
  return { files: [...new Set([...(report?.files_changed ?? []), ...(report?.files_created ?? [])])], tests: report?.tests_added?.length ?? 0 };
}

/**
 * The agent's tests as its gates reported them (pre-merge gates run in its worktree carry its id; in a
 * solo wave the gates on the target are its own). Gates whose output has no known test summary add
 * nothing; when none has one, the counts stay 0 and `tests_reported` is false.
 */
function withTestCounts(event: ReturnType<typeof agentPerformanceEvent>, finalize: FinalizeWaveResult | undefined, soleAgent: boolean) {
  const outputs = Object.values(finalize?.gate_results ?? {})
    .flat()
    .filter((gate) => !gate.skipped && ((gate as { agent?: string }).agent === event.agent || (soleAgent && (gate as { agent?: string }).agent === undefined)))
    .map((gate) => parseTestCounts(gate.stdout ?? ''));
  const counts = addTestCounts(outputs);
  return counts ? { ...event, tests_passed: counts.passed, tests_failed: counts.failed, tests_reported: true } : { ...event, tests_reported: false };
}

/** E40 `agent_performance` of an agent's run (its last attempt decides the status). */
function agentPerformanceEvent(summary: AgentRunSummary, context: { slug: string; wave: number; files: { files: string[]; tests: number }; stopReason: string | undefined }) {
  const last = summary.attempts.at(-1);
  const status: AgentPerformanceStatus = summary.status === 'complete' ? 'success' : summary.status === 'partial' ? 'partial' : summary.status === 'blocked' ? 'blocked' : 'failed';
  const failureType = status === 'success' ? undefined : (summary.decision?.failureType ?? last?.failure_type);
  return {
    v: 1 as const,
    e40: true as const,
    type: 'agent_performance' as const,
    slug: context.slug,
    wave: context.wave,
    agent: summary.agent,
    status,
    ...(failureType ? { failure_type: failureType } : {}),
    ...(context.stopReason ? { stop_reason: context.stopReason } : {}),
    retry_count: Math.max(0, summary.attempts.length - 1),
    duration_ms: summary.duration_ms,
    duration_seconds: Math.round(summary.duration_ms / 100) / 10,
    files_modified: context.files.files,
    tests_added: context.files.tests,
    tests_passed: 0,
    tests_failed: 0,
    model: summary.model,
    backend: summary.backend,
    turns: summary.turns,
    input_tokens: summary.usage.inputTokens,
    output_tokens: summary.usage.outputTokens,
    cost_usd: summary.usage.costUsd ?? null,
  };
}

/** Issue 17: the dispatcher's gate jobs, when its pre-merge gates run on workers (`dispatch.gates: "workers"`). */
function remoteGatesOf(dispatcher: Dispatcher | undefined): { remoteGates?: NonNullable<Dispatcher['runGateJob']> } {
  const runGateJob = dispatcher?.runGateJob;
  return runGateJob ? { remoteGates: (job) => runGateJob.call(dispatcher, job) } : {};
}

/**
 * The git directory of a linked worktree from its `.git` file (`gitdir: <path>`, as git itself
 * reads it), without a `rev-parse` process per agent; undefined when `.git` is not such a file.
 */
function worktreeGitDirOf(worktreePath: string): string | undefined {
  try {
    const match = /^gitdir: (.+)$/m.exec(readFileSync(path.join(worktreePath, '.git'), 'utf8'));
    return match ? path.resolve(worktreePath, match[1]!.trim()) : undefined;
  } catch {
    return undefined;
  }
}

/** The content's digest (undefined: unreadable or gone). */
function contentDigest(file: string): string | undefined {
  try {
    return createHash('sha256').update(readFileSync(file)).digest('hex');
  } catch {
    return undefined;
  }
}

/** IMPL and PROGRAM manifests under docs/ other than `implPath` with uncommitted changes, with their content's digest. */
async function uncommittedManifests(git: Git, repoDir: string, implPath: string): Promise<Map<string, string>> {
  const own = path.relative(repoDir, implPath).split(path.sep).join('/');
  const found = new Map<string, string>();
  const listed = await git.run(['status', '--porcelain', '-z', '--untracked-files=all', '--', 'docs/IMPL', 'docs/PROGRAM'], { allowExitCodes: [128] });
  for (const entry of listed.stdout.split('\0')) {
    const file = entry.slice(3);
    if (entry.length <= 3 || file === own || !/^docs\/(IMPL|PROGRAM)\/[^/]+\.ya?ml$/.test(file)) continue;
    const digest = contentDigest(path.join(repoDir, file));
    if (digest !== undefined) found.set(file, digest);
  }
  return found;
}

/**
 * A19-09: the warning for a killed run's job of `agent` that an attempt did not adopt (another request): the model it ran
 * is named, and that this attempt's model ran as a new job beside it (its work is not this attempt's).
 */
export function notAdoptedWarning(agent: string, model: string, left: { job_id: string; model: string; differs: readonly string[] }): string {
  return `agent ${agent}: job ${left.job_id} of an earlier run (model ${left.model}${left.differs.length > 0 ? `; its ${left.differs.join(', ')} ${left.differs.length === 1 ? 'differs' : 'differ'} from this attempt's` : ''}) was left in flight by a killed orchestrator and not adopted — this attempt ran ${model} as a new job beside it; nothing of that job is this attempt's`;
}
