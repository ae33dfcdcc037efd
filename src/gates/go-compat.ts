import type { GateResult, GateRunResult } from './types.js';

/**
 * A gate result in the JSON shape the Go `polywave-tools run-gates` prints (`{type, command,
 * exit_code, stdout, stderr, required, passed, skipped?, skip_reason?, from_cache?}`), plus our
 * extra keys. We capture stdout and stderr interleaved, so `stdout` holds the command's whole
 * (possibly truncated) output and `stderr` holds only the runner's own message (unknown repo,
 * timeout, spawn failure) — where Go puts such messages too.
 */
export interface GoGateResult {
  type: string;
  command: string;
  exit_code: number;
  stdout: string;
  stderr: string;
  required: boolean;
  passed: boolean;
  skipped?: boolean;
  skip_reason?: string;
  from_cache?: boolean;
  description?: string;
  phase: string;
  parallel_group?: string;
  timing: string;
  repo?: string;
  cwd: string;
  signal: string | null;
  timed_out: boolean;
  canceled: boolean;
  duration_ms: number;
  output_truncated: boolean;
  full_output_path?: string;
}

/** Converts one result to the Go-compatible shape. */
export function toGoGateResult(result: GateResult): GoGateResult {
  return {
    type: result.type,
    command: result.command,
    exit_code: result.exit_code,
    stdout: result.output,
    stderr: result.error ?? '',
    required: result.required,
    passed: result.passed,
    ...(result.skipped ? { skipped: true } : {}),
    ...(result.skip_reason ? { skip_reason: result.skip_reason } : {}),
    ...(result.from_cache ? { from_cache: true } : {}),
    ...(result.description ? { description: result.description } : {}),
    phase: result.phase,
    ...(result.parallel_group ? { parallel_group: result.parallel_group } : {}),
    timing: result.timing,
    ...(result.repo ? { repo: result.repo } : {}),
    cwd: result.cwd,
    signal: result.signal,
    timed_out: result.timed_out,
    canceled: result.canceled,
    duration_ms: result.duration_ms,
    output_truncated: result.output_truncated,
    ...(result.full_output_path ? { full_output_path: result.full_output_path } : {}),
  };
}

/**
 * The `--json-detail` document: the run summary with every result once, and each phase listing
 * the indexes of its gates in `results` (so large outputs are not printed twice).
 */
export function toDetailJson(run: GateRunResult): {
  passed: boolean;
  required_failures: number;
  warnings: number;
  canceled: boolean;
  duration_ms: number;
  results: GateResult[];
  phases: Array<{ phase: string; passed: boolean; skipped: boolean; gates: number[] }>;
} {
  const indexOf = new Map(run.results.map((result, index) => [result, index]));
  return {
    passed: run.passed,
    required_failures: run.required_failures,
    warnings: run.warnings,
    canceled: run.canceled,
    duration_ms: run.duration_ms,
    results: run.results,
    phases: run.phases.map((phase) => ({ phase: phase.phase, passed: phase.passed, skipped: phase.skipped, gates: phase.results.map((result) => indexOf.get(result)!) })),
  };
}
