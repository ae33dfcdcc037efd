import type { Dispatcher } from '../dispatch/dispatcher.js';
import { prewarmSandboxStatus } from '../sandbox/sandbox-status.js';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { addUsage, emptyUsage, type AgentBackend, type AgentUsage } from '../agents/contract.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { closeImpl, type CloseImplResult } from '../engine/close-impl.js';
import type { EventBus } from '../engine/events.js';
import type { BudgetTracker } from '../agents/budget.js';
import type { StepResult } from '../engine/step.js';
import { createGit } from '../git/git-cli.js';
import type { Git } from '../git/git-port.js';
import { unmergedAgents } from '../engine/wave-merged.js';
import { implSlugFromPath } from '../protocol/names.js';
import { scaffoldPath, type ImplManifest } from '../protocol/schema/impl-schema.js';
import { isScaffoldCommitted, isWaveComplete, isWaveFinished } from '../protocol/waves.js';
import { loadImpl } from '../store/manifest-file.js';
import { deriveSlug } from './run-scout.js';
import { runWave, type AgentSlots, type RunWaveResult } from './run-wave.js';

/** The plan shown before anything runs (and approved unless `--auto`). */
export interface PlanSummary {
  impl_path: string;
  slug: string;
  title: string;
  verdict: string;
  state: string;
  waves: Array<{ number: number; type?: string; agents: Array<{ id: string; files: string[]; task: string }> }>;
  contracts: string[];
  scaffolds: string[];
  estimated_agents: number;
}

/** One phase of the autopilot, for the final summary. */
export interface AutopilotPhase {
  phase: 'scout' | 'review' | 'scaffold' | 'wave' | 'integration' | 'close';
  wave?: number;
  status: 'done' | 'skipped' | 'failed' | 'paused';
  detail: string;
  duration_ms: number;
}

export interface AutopilotOptions {
  /** Run agents without the OS sandbox (`--unsafe-no-sandbox`): the static checks only, with a warning. */
  unsafeNoSandbox?: boolean;
  /** Issue 17: where wave agents run (`--dispatch redis://…`); default in this process. */
  dispatcher?: Dispatcher;
  /** Takes the run lock of the plan (an existing IMPL, or a feature's IMPL path before its Scout) for the run's life; throws RUN_IN_PROGRESS when another process holds it. Returns its release. */
  lockPlan?: (implPath: string) => () => void;
  /** A feature description (scouted first) or the path of an existing IMPL (resumed). */
  feature?: string;
  /** The IMPL slug for `feature` (default: derived from its text, as run-scout does). */
  slug?: string;
  implPath?: string;
  repoDir: string;
  /** Skip the approval of the plan. */
  auto?: boolean;
  /** Asked before scaffolding and waves unless `auto`; false stops the run (state stays REVIEWED). */
  approve?: (plan: PlanSummary) => Promise<boolean>;
  /** Default model for every role; `models.<role>` overrides it. */
  model?: string;
  models?: Partial<Record<'scout' | 'critic' | 'scaffold' | 'wave' | 'integration', string>>;
  /** Test injection per role (tests pass real backends with mock models). */
  backends?: Partial<Record<'scout' | 'critic' | 'scaffold' | 'integration' | 'wave', AgentBackend>>;
  /** Cost budgets (issue 14), shared by every wave of the run. */
  budget?: BudgetTracker;
  concurrency?: number;
  agentTimeoutMs?: number;
  maxTurns?: number;
  noCritic?: boolean;
  env: Readonly<Record<string, string | undefined>>;
  now?: () => Date;
  events?: EventBus;
  signal?: AbortSignal;
  onStep?: (step: StepResult) => void;
  /** Progress lines ("scout: …", "wave 1: …") for the terminal. */
  onPhase?: (phase: AutopilotPhase) => void;
  retryBackoffMs?: number;
  /** P5: the branch every wave merges into (a PROGRAM tier's IMPL branch); default the checked-out branch. */
  mergeTarget?: string;
  /** Added to every agent's POLYWAVE_PORT (a PROGRAM tier: one block of ports per IMPL running at once). */
  portOffset?: number;
  /** Close the IMPL (E15/E18) after its last wave (default true; a PROGRAM tier closes in finalize-tier). */
  close?: boolean;
  /** A budget of running agents shared with other IMPLs (the PROGRAM tier loop). */
  agentSlots?: AgentSlots;
  /** Other manifests the orchestrator writes meanwhile in the main checkout (finalize-wave's dirty check). */
  orchestratorFiles?: string[];
  /** Ref prefixes other IMPLs of the tier move meanwhile (the tamper check leaves them out). */
  concurrentRefs?: string[];
  /** `--accept-changes`: the changes the tamper check reports are the caller's own (see run-wave). */
  acceptChanges?: boolean;
}

export interface AutopilotResult {
  impl_path: string;
  slug: string;
  state: string;
  success: boolean;
  /** Why the run stopped early (a human must decide), when it did. */
  stopped?: string;
  plan?: PlanSummary;
  phases: AutopilotPhase[];
  waves: RunWaveResult[];
  close?: CloseImplResult;
  merged_agents: string[];
  usage: AgentUsage;
  duration_ms: number;
}

/** The plan of a manifest, as shown for approval. */
export function summarizePlan(implPath: string, manifest: ImplManifest): PlanSummary {
  const waves = (manifest.waves ?? []).map((wave) => ({
    number: wave.number ?? 0,
    ...(wave.type ? { type: wave.type } : {}),
    agents: (wave.agents ?? []).map((agent) => ({ id: agent.id ?? '', files: agent.files ?? [], task: (agent.task ?? '').split('\n')[0]!.slice(0, 160) })),
  }));
  return {
    impl_path: implPath,
    slug: implSlugFromPath(implPath, manifest),
    title: manifest.title ?? '',
    verdict: manifest.verdict ?? '',
    state: manifest.state ?? '',
    waves,
    contracts: (manifest.interface_contracts ?? []).map((contract) => `${contract.name ?? '?'} (${contract.location ?? '?'})`),
    scaffolds: (manifest.scaffolds ?? []).map(scaffoldPath).filter((file) => file !== ''),
    estimated_agents: waves.reduce((sum, wave) => sum + wave.agents.length, 0),
  };
}

async function readManifest(implPath: string): Promise<ImplManifest> {
  const { parsed } = await loadImpl(implPath);
  if (!parsed.manifest) throw new PolywaveError({ code: parsed.findings[0]?.code ?? 'V001_MANIFEST_INVALID', message: `${implPath}: ${parsed.findings[0]?.message ?? 'not a usable IMPL manifest'}` });
  return parsed.manifest;
}


/** `docs/IMPL/IMPL-<slug>.yaml` for a feature description: the same slug run-scout derives. */
export function slugOfFeature(feature: string): string {
  return deriveSlug(feature);
}

/**
 * `polywave run`: scout → show the plan and wait for approval (unless auto) → scaffold → each wave
 * (run-wave, then the integration agent when E25/E35 found gaps) → close-impl. Resumable: every
 * decision is read from the manifest and git each time, so re-running the same command after a
 * crash or Ctrl-C continues where the work stands — finished waves are skipped, complete agents
 * are not relaunched (E9), an interrupted merge is finished.
 */
export async function runAutopilot(options: AutopilotOptions): Promise<AutopilotResult> {
  // The sandbox probe runs while the first steps do (issue 12's bench:program: ~0.3 s off the tier's start).
  if (!options.unsafeNoSandbox) prewarmSandboxStatus(options.env);
  // One run per plan (the CLI's run lock), taken as soon as the plan's path is known — for a feature, its
  // docs/IMPL/IMPL-<slug>.yaml before the Scout writes it — and held for the run's life: a second `polywave run`
  // of the same feature, or `polywave run <IMPL>` while a PROGRAM's tier runs that IMPL, is refused instead of racing.
  const releases: Array<() => void> = [];
  const lock = (implPath: string): void => {
    if (options.lockPlan) releases.push(options.lockPlan(implPath));
  };
  try {
    if (options.implPath) lock(path.resolve(options.repoDir, options.implPath));
    return await autopilotSteps(options, lock);
  } finally {
    for (const release of releases.reverse()) release();
  }
}

async function autopilotSteps(options: AutopilotOptions, lock: (implPath: string) => void): Promise<AutopilotResult> {
  const started = performance.now();
  const env = options.env;
  const gitAt = (directory: string): Git => createGit(directory, { env });
  const phases: AutopilotPhase[] = [];
  const record = (phase: AutopilotPhase) => {
    phases.push(phase);
    options.onPhase?.(phase);
  };
  const usage = emptyUsage();
  const result: AutopilotResult = { impl_path: '', slug: '', state: '', success: false, phases, waves: [], merged_agents: [], usage, duration_ms: 0 };
  const finish = () => {
    result.duration_ms = Math.round(performance.now() - started);
    return result;
  };
  const modelFor = (role: 'scout' | 'critic' | 'scaffold' | 'wave' | 'integration') => options.models?.[role] ?? options.model;
  // Every role's model calls are charged to the run's budget (issue 14).
  const base = { env, ...(options.unsafeNoSandbox ? { unsafeNoSandbox: true } : {}), ...(options.now ? { now: options.now } : {}), ...(options.events ? { events: options.events } : {}), ...(options.signal ? { signal: options.signal } : {}), ...(options.budget ? { budget: options.budget } : {}) };

  // 1. Scout (or resume an existing IMPL).
  let implPath = options.implPath ? path.resolve(options.repoDir, options.implPath) : undefined;
  if (!implPath) {
    if (!options.feature?.trim()) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'polywave run needs a feature description or an IMPL path' });
    const slug = options.slug ?? slugOfFeature(options.feature);
    const candidate = path.join(options.repoDir, 'docs', 'IMPL', `IMPL-${slug}.yaml`);
    lock(candidate);
    const scoutNeeded = !existsSync(candidate) || ['', 'SCOUT_PENDING', 'SCOUT_VALIDATING', 'INTERVIEWING'].includes(((await readManifest(candidate).catch(() => undefined))?.state ?? '').trim());
    if (scoutNeeded) {
      const phaseStart = performance.now();
      const { runScout } = await import('./run-scout.js');
      const scout = await runScout({
        feature: options.feature,
        repoDir: options.repoDir,
        slug,
        // What this run's caller writes meanwhile (the daemon: the queue item): not the Scout's, read-only to it.
        ...(options.orchestratorFiles && options.orchestratorFiles.length > 0 ? { concurrentPaths: options.orchestratorFiles.map((file) => path.relative(options.repoDir, path.resolve(options.repoDir, file)).split(path.sep).join('/')).filter((file) => file !== '' && !file.startsWith('../')) } : {}),
        ...base,
        ...(modelFor('scout') ? { model: modelFor('scout')! } : {}),
        ...(options.backends?.scout ? { backend: options.backends.scout } : {}),
        ...(options.backends?.critic ? { criticBackend: options.backends.critic } : {}),
        ...(modelFor('critic') ? { criticModel: modelFor('critic')! } : {}),
        ...(options.noCritic ? { critic: false } : {}),
        ...(options.auto ? { auto: true } : {}),
        ...(options.budget ? { budget: options.budget } : {}),
      });
      addUsage(usage, scout.usage);
      implPath = scout.impl_path;
      if (implPath && path.resolve(implPath) !== path.resolve(candidate)) lock(implPath);
      record({ phase: 'scout', status: scout.success ? 'done' : 'failed', detail: `state ${scout.state} after ${scout.attempts.length} attempt(s)${scout.critic ? `; critic ${scout.critic.verdict}` : ''}`, duration_ms: Math.round(performance.now() - phaseStart) });
      if (!scout.success) {
        result.impl_path = implPath;
        result.state = scout.state;
        result.stopped =
          scout.state === 'NOT_SUITABLE'
            ? `NOT_SUITABLE: ${(scout.not_suitable_reasons ?? []).join('; ')}`
            : scout.error?.code === 'BUDGET_EXCEEDED'
              ? `scout paused — ${scout.error.message}`
              : `scout stopped in state ${scout.state}`;
        return finish();
      }
    } else {
      implPath = candidate;
      record({ phase: 'scout', status: 'skipped', detail: `resuming ${path.relative(options.repoDir, candidate)}`, duration_ms: 0 });
    }
  }
  result.impl_path = implPath;
  let manifest = await readManifest(implPath);
  result.slug = implSlugFromPath(implPath, manifest);
  result.state = manifest.state ?? '';
  const plan = summarizePlan(implPath, manifest);
  result.plan = plan;

  if ((manifest.state ?? '') === 'COMPLETE') {
    result.success = true;
    record({ phase: 'close', status: 'skipped', detail: 'already COMPLETE', duration_ms: 0 });
    return finish();
  }
  if (['NOT_SUITABLE', 'BLOCKED'].includes(manifest.state ?? '')) {
    result.stopped = `the IMPL is ${manifest.state}: a human must decide (see polywave agent-status ${path.relative(options.repoDir, implPath)})`;
    return finish();
  }

  // 2. Approval (only before any wave has started).
  const started_waves = (manifest.waves ?? []).some((wave) => isWaveComplete(manifest, wave)) || ['WAVE_EXECUTING', 'WAVE_MERGING', 'WAVE_VERIFIED'].includes(manifest.state ?? '');
  if (!options.auto && !started_waves) {
    const approved = options.approve ? await options.approve(plan) : false;
    record({ phase: 'review', status: approved ? 'done' : 'paused', detail: approved ? 'plan approved' : 'plan not approved (re-run with --auto/--yes to proceed)', duration_ms: 0 });
    if (!approved) {
      result.stopped = 'waiting for approval of the plan';
      return finish();
    }
  }

  // 3. Scaffolds (E22).
  const pendingScaffolds = (manifest.scaffolds ?? []).filter((scaffold) => !isScaffoldCommitted(scaffold.status));
  if (pendingScaffolds.length > 0) {
    const phaseStart = performance.now();
    const { runScaffold } = await import('./run-scaffold.js');
    const scaffold = await runScaffold({ implPath, repoDir: options.repoDir, ...base, ...(modelFor('scaffold') ? { model: modelFor('scaffold')! } : {}), ...(options.backends?.scaffold ? { backend: options.backends.scaffold } : {}) });
    addUsage(usage, scaffold.agent?.usage);
    record({ phase: 'scaffold', status: scaffold.success ? 'done' : 'failed', detail: scaffold.scaffolds.map((item) => `${item.file}: ${item.status}`).join('; '), duration_ms: Math.round(performance.now() - phaseStart) });
    if (!scaffold.success) {
      result.state = scaffold.state;
      result.stopped = 'a scaffold failed (E22): fix it and re-run';
      return finish();
    }
  }

  // 4. Waves, in order; finished ones are skipped.
  manifest = await readManifest(implPath);
  const waves = [...(manifest.waves ?? [])].sort((left, right) => (left.number ?? 0) - (right.number ?? 0));
  for (const wave of waves) {
    const number = wave.number ?? 0;
    manifest = await readManifest(implPath);
    if (isWaveComplete(manifest, number) && (await waveMerged(gitAt(options.repoDir), manifest, number, result.slug, options.mergeTarget ?? 'HEAD'))) {
      // P14-07: a run killed inside this wave's cleanup (an agent worktree half removed, its removal marker left) — the
      // wave is merged, so nothing else would ever finish it: finished here (the cleanup's own rules: never forced over work).
      const finished = await finishInterruptedCleanup(implPath, options.repoDir, manifest, number, result.slug, options.mergeTarget, base.env);
      record({ phase: 'wave', wave: number, status: 'skipped', detail: `already complete and merged${finished ? `; ${finished}` : ''}`, duration_ms: 0 });
      continue;
    }
    const phaseStart = performance.now();
    const run = await runWave({
      implPath,
      wave: number,
      repoDir: options.repoDir,
      ...base,
      ...(options.onStep ? { onStep: options.onStep } : {}),
      ...(modelFor('wave') ? { model: modelFor('wave')! } : {}),
      ...(options.concurrency ? { concurrency: options.concurrency } : {}),
      ...(options.agentTimeoutMs ? { agentTimeoutMs: options.agentTimeoutMs } : {}),
      ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
      ...(options.auto ? { auto: true } : {}),
      ...(options.noCritic ? { skipCritic: true } : {}),
      ...(options.retryBackoffMs !== undefined ? { retryBackoffMs: options.retryBackoffMs } : {}),
      ...(options.mergeTarget ? { mergeTarget: options.mergeTarget } : {}),
      ...(options.portOffset ? { portOffset: options.portOffset } : {}),
      ...(options.agentSlots ? { agentSlots: options.agentSlots } : {}),
      ...(options.orchestratorFiles ? { orchestratorFiles: options.orchestratorFiles } : {}),
      ...(options.concurrentRefs ? { concurrentRefs: options.concurrentRefs } : {}),
      ...(options.acceptChanges ? { acceptChanges: true } : {}),
      ...(options.budget ? { budget: options.budget } : {}),
      ...(options.backends?.wave ? { backend: options.backends.wave } : {}),
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    });
    result.waves.push(run);
    addUsage(usage, run.usage);
    result.state = run.state;
    record({
      phase: 'wave',
      wave: number,
      status: run.success ? 'done' : 'failed',
      detail: run.success ? `${run.agents.length} agent(s) merged (${run.agents.filter((agent) => agent.resumed).length} kept from an earlier run)` : (run.blocked?.reason ?? run.finalize?.failed_step?.detail ?? 'prepare-wave failed'),
      duration_ms: Math.round(performance.now() - phaseStart),
    });
    if (!run.success) {
      result.stopped = run.budget
        ? `wave ${number} paused — ${run.blocked?.reason ?? run.budget.message}`
        : run.blocked
        ? `wave ${number} BLOCKED: ${run.blocked.agents.map((agent) => `${agent.agent}: ${agent.explanation}`).join('; ')}`
        : `wave ${number} stopped: ${run.finalize?.failed_step?.detail ?? (run.prepare && 'steps' in run.prepare ? (run.prepare.steps.find((step) => step.status === 'failed')?.detail ?? 'prepare failed') : 'prepare failed')}`;
      return finish();
    }
    result.merged_agents.push(...run.agents.map((agent) => agent.agent));

    // E25/E26: an integration agent wires what the wave left unconnected.
    if (run.finalize?.integration_action_required) {
      const phaseStart2 = performance.now();
      const { runIntegrationAgent } = await import('./run-integration.js');
      // In a PROGRAM tier the wave merged into the IMPL branch, checked out in the IMPL's worktree:
      // the integration agent works there, not on the main line (which must not move meanwhile).
      const workDir = options.mergeTarget ? (await gitAt(options.repoDir).worktreeList()).find((entry) => entry.branch === options.mergeTarget)?.path : undefined;
      const integration = await runIntegrationAgent({ implPath, repoDir: options.repoDir, ...(workDir ? { workDir } : {}), wave: number, ...base, ...(modelFor('integration') ? { model: modelFor('integration')! } : {}), ...(options.backends?.integration ? { backend: options.backends.integration } : {}) });
      addUsage(usage, integration.agent?.usage);
      record({ phase: 'integration', wave: number, status: integration.success ? 'done' : 'failed', detail: 'skipped' in integration && integration.skipped ? 'no gaps' : `gaps ${integration.gaps_before ?? '?'} → ${integration.gaps_after ?? '?'}`, duration_ms: Math.round(performance.now() - phaseStart2) });
    }
  }

  // 5. Close (E15, E18) — in a PROGRAM tier, finalize-tier does it after merging the IMPL branch.
  if (options.close === false) {
    result.success = true;
    record({ phase: 'close', status: 'skipped', detail: `every wave merged into ${options.mergeTarget ?? 'the target branch'}; closed by finalize-tier`, duration_ms: 0 });
    return finish();
  }
  const phaseStart = performance.now();
  const date = (options.now ?? (() => new Date()))().toISOString().slice(0, 10);
  const close = await closeImpl({ implPath, date, repoDir: options.repoDir, env, gitAt, ...(options.events ? { events: options.events } : {}) });
  result.close = close;
  result.impl_path = close.archived_path || implPath;
  result.state = 'COMPLETE';
  result.success = close.committed || close.already_complete;
  record({ phase: 'close', status: result.success ? 'done' : 'failed', detail: result.success ? `archived to ${path.relative(options.repoDir, close.archived_path)}` : (close.commit_error ?? 'close-impl did not commit'), duration_ms: Math.round(performance.now() - phaseStart) });
  return finish();
}

/**
 * True when the wave was finalized: the manifest says so (a verified state, or a later wave has
 * reports or was prepared — its `base_commit` recorded) and git agrees — every agent's commit is
 * reachable from the target (issue 13, F1: a wave that reported complete but was never merged is
 * finalized by run-wave, not skipped). The same rule as run-wave's WAVE_ALREADY_VERIFIED refusal
 * ({@link isWaveFinished}): a run killed after wave N+1 was prepared (state WAVE_EXECUTING, no
 * wave N+1 report yet) resumes at wave N+1 instead of asking for `--rerun` of wave N (X7 #1).
 */
async function waveMerged(git: Git, manifest: ImplManifest, wave: number, slug: string, target: string): Promise<boolean> {
  const state = (manifest.state ?? '').trim();
  const later = (manifest.waves ?? []).some((item) => (item.number ?? 0) > wave && (item.agents ?? []).some((agent) => manifest.completion_reports?.[agent.id ?? ''] !== undefined));
  if (!later && state !== 'WAVE_VERIFIED' && state !== 'COMPLETE' && !isWaveFinished(manifest, wave)) return false;
  return (await unmergedAgents(git, manifest, slug, [wave], target)).length === 0;
}

/**
 * Outside round P14 (P14-07): a run SIGKILLed inside a wave's cleanup left an agent's worktree half removed, its branch and
 * its removal marker (`<git common dir>/polywave/removing/`); the re-run skipped the wave ("already complete and merged")
 * and nothing finished it. When a removal marker of one of the wave's agent worktrees is there, the wave's cleanup runs
 * again (cleanup.ts: a wreck is removed only when what is left is the merged tip's; work is kept and reported). Returns
 * what it did, or undefined when there was nothing to finish.
 */
async function finishInterruptedCleanup(implPath: string, repoDir: string, manifest: ImplManifest, wave: number, slug: string, mergeTarget: string | undefined, env: Readonly<Record<string, string | undefined>> | undefined): Promise<string | undefined> {
  const agents = (manifest.waves ?? []).find((candidate) => candidate.number === wave)?.agents ?? [];
  if (agents.length === 0) return undefined;
  const { readRemovalMarkers } = await import('../store/removal-markers.js');
  const { worktreePath } = await import('../protocol/names.js');
  const paths = agents.flatMap((agent) => (agent.id ? [worktreePath(repoDir, slug, wave, agent.id)] : []));
  const markers = await readRemovalMarkers(paths).catch(() => new Map());
  if (markers.size === 0) return undefined;
  try {
    const { cleanupWaveWorktrees } = await import('../engine/finalize-wave.js');
    const cleaned = await cleanupWaveWorktrees({ implPath, wave, repoDir, ...(mergeTarget ? { mergeTarget } : {}), ...(env ? { env: env as NodeJS.ProcessEnv } : {}) });
    const removed = (cleaned.result?.agents ?? []).filter((agent) => agent.worktree_removed || agent.branch_deleted).map((agent) => agent.agent);
    const kept = (cleaned.result?.agents ?? []).filter((agent) => agent.kept).map((agent) => `${agent.agent}: ${agent.kept}`);
    return `finished the cleanup a killed run left half done${removed.length > 0 ? ` (removed: ${removed.join(', ')})` : ''}${kept.length > 0 ? `; kept: ${kept.join('; ')}` : ''}`;
  } catch (error) {
    return `the cleanup a killed run left half done could not be finished: ${error instanceof Error ? error.message : String(error)}`;
  }
}
