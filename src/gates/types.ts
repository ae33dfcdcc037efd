/**
 * Shapes of the quality-gate runner (E21, E21A, E21B, E38). A gate result is data, never an
 * exception (DESIGN §5, execa's result model): the same shape for a pass, a failure, a timeout,
 * a cache hit, a skipped gate and a gate that could not even start.
 */

/** The three E21 phases, in execution order. An empty phase means VALIDATION. */
export const gatePhaseOrder = ['PRE_VALIDATION', 'VALIDATION', 'POST_VALIDATION'] as const;
export type GatePhase = (typeof gatePhaseOrder)[number];

/** When a gate runs: before the merge (default, cacheable) or after it (never cached, E21/E38). */
export type GateTiming = 'pre-merge' | 'post-merge';

/**
 * A gate as the runner takes it: structurally the manifest's `QualityGate` (every field optional,
 * as the tolerant model parses it).
 */
export interface GateSpec {
  type?: string;
  command?: string;
  required?: boolean;
  description?: string;
  repo?: string;
  fix?: boolean;
  timing?: string;
  phase?: string;
  parallel_group?: string;
  timeout_seconds?: number;
}

/** The outcome of one gate. */
export interface GateResult {
  type: string;
  command: string;
  description?: string;
  /** `required: false` failures are warnings: they never fail the run. */
  required: boolean;
  phase: GatePhase;
  parallel_group?: string;
  timing: GateTiming;
  repo?: string;
  /** Directory the command ran in (or would have run in). */
  cwd: string;
  /** Exit code, or -1 when the process did not exit normally (signal, spawn failure, never ran). */
  exit_code: number;
  /** Signal that ended the process (e.g. SIGTERM after a timeout), else null. */
  signal: string | null;
  timed_out: boolean;
  /** The run's AbortSignal fired while this gate was running or before it started. */
  canceled: boolean;
  duration_ms: number;
  passed: boolean;
  skipped: boolean;
  skip_reason?: string;
  from_cache: boolean;
  /** stdout and stderr interleaved; head and tail kept when large (see output_truncated). */
  output: string;
  output_truncated: boolean;
  /** Full output log, written when the output was truncated. */
  full_output_path?: string;
  /** Why the runner itself failed the gate (unknown repo, spawn failure, timeout, …). */
  error?: string;
}

/** One phase of a run. */
export interface GatePhaseResult {
  phase: GatePhase;
  /** No required gate of this phase failed. */
  passed: boolean;
  /** The phase did not run because a required PRE_VALIDATION gate failed (or the run was canceled). */
  skipped: boolean;
  results: GateResult[];
}

/** The outcome of {@link runGates}. */
export interface GateRunResult {
  /** No required gate failed (optional failures are warnings). */
  passed: boolean;
  /** Every gate, in phase order then declaration order. */
  results: GateResult[];
  phases: GatePhaseResult[];
  /** Required gates that failed (skipped gates not counted). */
  required_failures: number;
  /** `required: false` gates that failed. */
  warnings: number;
  canceled: boolean;
  duration_ms: number;
}

/** True when `result` is a real failure (not a skip). */
export function isGateFailure(result: GateResult): boolean {
  return !result.passed && !result.skipped;
}

/** True when `result` fails the run: a required gate that failed or was skipped because of a failure. */
export function isBlockingFailure(result: GateResult): boolean {
  return result.required && !result.passed;
}
