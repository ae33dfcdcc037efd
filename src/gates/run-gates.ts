import os from 'node:os';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { runGit } from '../git/run-git.js';
import { activityEvent, type E40Labels } from '../protocol/e40.js';
import type { GitRunner } from './cache-key.js';
import { mapBounded } from './concurrency.js';
import { loadRepoRegistry, type RepoRegistry } from './config.js';
import { GateCache, defaultGateCacheTtlMs } from './gate-cache.js';
import type { OutputLimits } from './output.js';
import { disposeCheckouts } from './throwaway-checkout.js';
import { executeGate, skippedResult, type GateEventSink, type GateRunContext, type PlannedGate } from './run-gate.js';
import { gatePhaseOrder, isBlockingFailure, isGateFailure, type GatePhase, type GatePhaseResult, type GateResult, type GateRunResult, type GateSpec, type GateTiming } from './types.js';

/** Default per-gate timeout when a gate has no `timeout_seconds`: 10 minutes. */
export const defaultGateTimeoutMs = 10 * 60_000;

/** Error code for gate definitions the runner refuses (Go: B009_GATE_VALIDATION_FAILED). */
export const gateValidationFailedCode = 'B009_GATE_VALIDATION_FAILED';

/** Options of {@link runGates}. */
export interface RunGatesOptions {
  /** Primary repository: gates without `repo:` run here; the cache and logs live here. */
  repoDir: string;
  gates: readonly GateSpec[];
  /** Run only pre-merge gates (timing empty or `pre-merge`) or only post-merge gates. Default: all. */
  timing?: GateTiming;
  /** Bypass the E38 cache (neither read nor written). */
  noCache?: boolean;
  signal?: AbortSignal;
  /** Receives `gate-start` / `gate-result` events (an `EventBus`). */
  events?: GateEventSink;
  /** Clock for cache timestamps/TTL and log names. */
  now?: () => Date;
  /** Most gates of one parallel_group running at once. Default: number of CPUs. */
  concurrency?: number;
  /** Per-gate timeout for gates without `timeout_seconds`. Default 10 min. */
  defaultTimeoutMs?: number;
  /** Cache entry lifetime. Default 5 min (E38). */
  cacheTtlMs?: number;
  /** Environment of gate commands. Default: this process's environment. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Where to start looking for polywave.config.json (upward, first found wins). Default: [repoDir]. */
  configSearchDirs?: readonly string[];
  /** The wave touches only docs (reference §4.3 step 3): build/test/lint/format gates are skipped as passed. */
  docsOnly?: boolean;
  outputLimits?: Partial<OutputLimits>;
  /** Time between SIGTERM and SIGKILL when a gate is stopped. Default 2 s. */
  killGraceMs?: number;
  /** git runner for the cache key (default: the git CLI). */
  git?: GitRunner;
  /** Run gates inside the OS sandbox when it is available (default true; issue 11). */
  sandbox?: boolean;
  /**
   * Run each sandboxed gate in a throwaway checkout of `repoDir`'s working tree, deleted afterwards
   * (throwaway-checkout.ts): for gates on the main checkout after a merge (post-merge gates, a solo
   * wave's gates), whose writes must not persist there (outside attack X3 #18). Default false.
   */
  throwawayCheckout?: boolean;
  /**
   * Directories around `repoDir` the gates' sandbox hides whole, later entries too, but for the gate's directory and the
   * repository's git directory (a dispatch worker's `--dir`: the other jobs' worktrees, journals, scripts, gate checkouts).
   */
  sandboxHiddenAround?: readonly string[];
  /**
   * Labels of the E40 `gate_executed`/`gate_failed` activity events emitted on `events` after the
   * run, one per gate that ran (IMPL slug, wave, agent, PROGRAM, tier; `scope` = pre-merge,
   * post-merge, tier, baseline). Without labels no E40 event is emitted (a bare `run-gates`).
   */
  labels?: E40Labels & { scope?: string };
}

/**
 * Runs quality gates (E21 three phases, E21B parallel groups, E38 cache) and returns every
 * result as data. Phases run in order PRE_VALIDATION → VALIDATION → POST_VALIDATION (an empty
 * phase is VALIDATION). PRE_VALIDATION runs one gate at a time; in the other phases gates
 * sharing a `parallel_group` run concurrently (at most `concurrency` at once) and the others one
 * by one, in declaration order. Every gate of a phase runs, so all its failures are reported
 * together; a required PRE_VALIDATION failure skips the later phases. `required: false` failures
 * are warnings. Throws only for gate definitions it refuses (a fix-mode gate outside
 * PRE_VALIDATION, an unknown phase or timing: `B009_GATE_VALIDATION_FAILED`, exit 2).
 */
export async function runGates(options: RunGatesOptions): Promise<GateRunResult> {
  const start = performance.now();
  const repoDir = path.resolve(options.repoDir);
  const now = options.now ?? (() => new Date());
  const plans = planGates(options.gates, options);

  let registryPromise: Promise<RepoRegistry> | undefined;
  const context: GateRunContext = {
    repoDir,
    registry: () => (registryPromise ??= loadRepoRegistry(options.configSearchDirs ?? [repoDir])),
    cache: options.noCache ? undefined : new GateCache(repoDir, { ttlMs: options.cacheTtlMs ?? defaultGateCacheTtlMs, now }),
    fingerprints: new Map(),
    now,
    signal: options.signal,
    events: options.events,
    env: options.env,
    outputLimits: options.outputLimits,
    git: options.git,
    docsOnly: options.docsOnly ?? false,
    killGraceMs: options.killGraceMs,
    logStamp: logStamp(now()),
    sandbox: options.sandbox ?? true,
    sandboxSettings: new Map(),
    throwawayCheckout: options.throwawayCheckout ?? false,
    ...(options.sandboxHiddenAround && options.sandboxHiddenAround.length > 0 ? { hiddenAround: options.sandboxHiddenAround } : {}),
    checkouts: new Map(),
  };
  const concurrency = options.concurrency ?? defaultConcurrency();

  const phases: GatePhaseResult[] = [];
  let blockedBy: GateResult | undefined;
  try {
    for (const phase of gatePhaseOrder) {
      const phasePlans = plans.filter((plan) => plan.phase === phase);
      if (phasePlans.length === 0) continue;
      let results: GateResult[];
      let skipped = false;
      if (blockedBy || options.signal?.aborted) {
        skipped = true;
        const reason = blockedBy ? `skipped: required PRE_VALIDATION gate failed (${blockedBy.type}: ${blockedBy.command})` : 'run canceled';
        results = phasePlans.map((plan) => skippedResult(plan, repoDir, reason, { passed: false, canceled: !blockedBy }));
      } else {
        // A gate of an earlier phase may have changed the tree: fingerprint again.
        context.fingerprints.clear();
        results = await runPhase(phase, phasePlans, context, concurrency);
      }
      const failedRequired = results.find((result) => result.required && isGateFailure(result));
      phases.push({ phase, passed: !skipped && failedRequired === undefined && !results.some((result) => result.required && result.canceled), skipped, results });
      // E21: a failed required PRE_VALIDATION gate blocks VALIDATION and POST_VALIDATION.
      if (phase === 'PRE_VALIDATION' && failedRequired) blockedBy = failedRequired;
    }
  } finally {
    await disposeCheckouts(context.checkouts!);
  }

  const results = phases.flatMap((phase) => phase.results);
  if (options.events && options.labels) emitGateActivities(options.events, options.labels, results);
  return {
    passed: !results.some(isBlockingFailure),
    results,
    phases,
    required_failures: results.filter((result) => result.required && isGateFailure(result)).length,
    warnings: results.filter((result) => !result.required && isGateFailure(result)).length,
    canceled: results.some((result) => result.canceled),
    duration_ms: Math.round(performance.now() - start),
  };
}

/**
 * E40: gate_executed / gate_failed on `events`, one per gate of `results` that ran, in declaration
 * order (`worker`: the gates ran on that `polywave worker`, issue 17 gate jobs — emitted here, on the
 * orchestrator, from the job's results).
 */
export function emitGateActivities(events: GateEventSink, labels: E40Labels & { scope?: string; worker?: string }, results: readonly GateResult[]): void {
  const { scope, ...rest } = labels;
  for (const result of results) {
    if (result.skipped) continue;
    const passed = result.passed && !result.canceled;
    events.emit(
      activityEvent(passed ? 'gate_executed' : 'gate_failed', {
        ...rest,
        gate: result.type,
        command: result.command,
        from_cache: result.from_cache,
        duration_ms: result.duration_ms,
        ...(scope ? { gate_scope: scope } : {}),
        details: `gate=${result.type} passed=${passed}${result.required ? '' : ' (optional)'}${passed ? '' : ` exit=${result.timed_out ? 'timeout' : result.exit_code}`}`,
      }),
    );
  }
}

/** What {@link runBaselineGates} returns (E21A; the shape of Go's BaselineData plus `failing`). */
export interface BaselineResult {
  passed: boolean;
  gate_results: GateResult[];
  /** `baseline_verification_failed` when a required gate failed. */
  reason: 'baseline_verification_failed' | undefined;
  /** The failing required gates, for the human report. */
  failing: Array<{ type: string; command: string; exit_code: number; output: string }>;
  /** Every result came from the cache. */
  from_cache: boolean;
  /** HEAD of the repository when the baseline was checked (when it is a git repository). */
  commit_sha?: string;
  duration_ms: number;
}

/**
 * E21A pre-wave baseline: runs the pre-merge gates (timing empty or `pre-merge`) against the
 * current checkout through {@link runGates} (so E21B parallelism and the E38 cache apply). No
 * gates → passed (E21A is a no-op). The caller decides about solo waves.
 */
export async function runBaselineGates(options: Omit<RunGatesOptions, 'timing'>): Promise<BaselineResult> {
  const commitSha = await runGit(['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd: options.repoDir }).then(
    (text) => text.trim() || undefined,
    () => undefined,
  );
  const run = await runGates({ ...options, timing: 'pre-merge' });
  const failing = run.results
    .filter((result) => result.required && isGateFailure(result))
    .map((result) => ({ type: result.type, command: result.command, exit_code: result.exit_code, output: result.output }));
  return {
    passed: run.passed,
    gate_results: run.results,
    reason: run.passed ? undefined : 'baseline_verification_failed',
    failing,
    from_cache: run.results.length > 0 && run.results.every((result) => result.from_cache),
    ...(commitSha ? { commit_sha: commitSha } : {}),
    duration_ms: run.duration_ms,
  };
}

/** Keeps the gates of one timing: pre-merge = timing empty or `pre-merge`. */
export function filterGatesByTiming<Gate extends GateSpec>(gates: readonly Gate[], timing: GateTiming | undefined): Gate[] {
  if (timing === undefined) return [...gates];
  return gates.filter((gate) => normalizeTiming(gate.timing) === timing);
}

/** Validates and normalizes gates (throws B009 for definitions the runner refuses). */
export function planGates(gates: readonly GateSpec[], options: Pick<RunGatesOptions, 'timing' | 'defaultTimeoutMs'> = {}): PlannedGate[] {
  const problems: string[] = [];
  gates.forEach((gate, index) => {
    const phase = gate.phase?.trim() ?? '';
    if (phase !== '' && !(gatePhaseOrder as readonly string[]).includes(phase)) {
      problems.push(`gates[${index}]: phase "${phase}" is invalid — must be PRE_VALIDATION, VALIDATION or POST_VALIDATION (or empty)`);
    }
    const timing = gate.timing?.trim() ?? '';
    if (timing !== '' && timing !== 'pre-merge' && timing !== 'post-merge') {
      problems.push(`gates[${index}]: timing "${timing}" is invalid — must be pre-merge or post-merge (or empty)`);
    }
    // E21 (BLOCKER 2): fix-mode gates rewrite files and must run alone, in PRE_VALIDATION.
    if (gate.fix === true && phase !== 'PRE_VALIDATION') {
      problems.push(`gates[${index}]: gates with fix=true must be in PRE_VALIDATION phase (got ${phase === '' ? 'empty phase' : phase})`);
    }
  });
  if (problems.length > 0) {
    throw new PolywaveError({ code: gateValidationFailedCode, message: `invalid quality gates: ${problems.join('; ')}`, exitCode: 2, details: { problems } });
  }

  const selected = filterGatesByTiming(gates, options.timing);
  const typeCounts = new Map<string, number>();
  for (const gate of selected) typeCounts.set(gateType(gate), (typeCounts.get(gateType(gate)) ?? 0) + 1);
  const defaultTimeoutMs = options.defaultTimeoutMs ?? defaultGateTimeoutMs;
  return selected.map((gate, index) => {
    const type = gateType(gate);
    const phase = (gate.phase?.trim() || 'VALIDATION') as GatePhase;
    const group = gate.parallel_group?.trim();
    const timeoutSeconds = gate.timeout_seconds;
    const safeType = type.replace(/[^A-Za-z0-9_-]/g, '_') || 'gate';
    return {
      index,
      spec: gate,
      type,
      command: gate.command ?? '',
      required: gate.required === true,
      phase,
      timing: normalizeTiming(gate.timing),
      ...(group ? { parallelGroup: group } : {}),
      ...(gate.repo?.trim() ? { repo: gate.repo.trim() } : {}),
      fix: gate.fix === true,
      timeoutMs: typeof timeoutSeconds === 'number' && timeoutSeconds > 0 ? timeoutSeconds * 1000 : defaultTimeoutMs,
      logName: (typeCounts.get(type) ?? 0) > 1 ? `${safeType}-${index + 1}` : safeType,
    };
  });
}

async function runPhase(phase: GatePhase, plans: PlannedGate[], context: GateRunContext, concurrency: number): Promise<GateResult[]> {
  // E21: PRE_VALIDATION is sequential (fix-mode gates rewrite files).
  if (phase === 'PRE_VALIDATION') {
    const results: GateResult[] = [];
    for (const plan of plans) results.push(await executeGate(plan, context));
    return results;
  }
  // E21B: a parallel_group runs concurrently, placed where its first gate is declared; gates
  // without a group run one by one.
  const units: PlannedGate[][] = [];
  const groups = new Map<string, PlannedGate[]>();
  for (const plan of plans) {
    if (!plan.parallelGroup) {
      units.push([plan]);
      continue;
    }
    const existing = groups.get(plan.parallelGroup);
    if (existing) existing.push(plan);
    else {
      const unit = [plan];
      groups.set(plan.parallelGroup, unit);
      units.push(unit);
    }
  }
  const byIndex = new Map<number, GateResult>();
  for (const unit of units) {
    const results = await mapBounded(unit, concurrency, (plan) => executeGate(plan, context));
    unit.forEach((plan, position) => byIndex.set(plan.index, results[position]!));
  }
  // Results in declaration order, whatever order the gates finished in.
  return plans.map((plan) => byIndex.get(plan.index)!);
}

function gateType(gate: GateSpec): string {
  return gate.type?.trim() || 'custom';
}

function normalizeTiming(timing: string | undefined): GateTiming {
  return timing?.trim() === 'post-merge' ? 'post-merge' : 'pre-merge';
}

function defaultConcurrency(): number {
  return typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length || 1;
}

function logStamp(date: Date): string {
  // 2026-01-02T03:04:05.678Z → 20260102T030405.678Z (no colons: valid file names everywhere).
  return date.toISOString().replace(/[-:]/g, '');
}
