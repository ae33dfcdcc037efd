/** Quality-gate runner: E21 phases, E21A baseline, E21B parallel groups, E38 cache. */
export { runGates, runBaselineGates, planGates, filterGatesByTiming, defaultGateTimeoutMs, gateValidationFailedCode, type RunGatesOptions, type BaselineResult } from './run-gates.js';
export { executeGate, docsOnlySkipReason, type GateEvent, type GateEventSink, type PlannedGate } from './run-gate.js';
export { runShellCommand, gateShell, type ShellCommandOptions, type ShellCommandResult } from './run-command.js';
export { OutputCollector, defaultOutputLimits, type OutputLimits, type CollectedOutput } from './output.js';
export { GateCache, defaultGateCacheTtlMs, gateCacheRelativePath, type GateCacheEntry, type GateCacheOptions } from './gate-cache.js';
export { computeWorkspaceFingerprint, gateCacheKey, gitRunnerFromPort, type WorkspaceFingerprint, type GitRunner } from './cache-key.js';
export { findConfigFile, loadRepoRegistry, resolveGateRepo, configFileName, maxConfigSearchLevels, type RepoEntry, type RepoRegistry, type RepoResolution } from './config.js';
export { detectFormatter, type DetectedFormatter } from './detect-formatter.js';
export { isDocsOnlyWave, type WavesLike } from './docs-only.js';
export { toGoGateResult, toDetailJson, type GoGateResult } from './go-compat.js';
export { mapBounded } from './concurrency.js';
export {
  gatePhaseOrder,
  isGateFailure,
  isBlockingFailure,
  type GatePhase,
  type GateTiming,
  type GateSpec,
  type GateResult,
  type GatePhaseResult,
  type GateRunResult,
} from './types.js';
