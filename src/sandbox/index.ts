/**
 * The OS sandbox (DESIGN §3.1, issue 11): bubblewrap on Linux and Seatbelt on macOS through
 * `@anthropic-ai/sandbox-runtime`. It sits below agents/ and gates/ (both run commands in it),
 * like git/: it imports only errors/ and store/ (polywave.config.json's `sandbox` section).
 *
 * - {@link sandboxStatus}: can it run here (cached per process; `POLYWAVE_SANDBOX=off` says no).
 * - {@link agentSandboxPlan} / {@link gatePlan}: what one agent / one quality gate may touch.
 * - {@link makeScratchDir}: a private HOME/TMPDIR under the one scratch parent every plan hides.
 * - {@link wrapInSandbox}: a shell command → the file, arguments and environment to spawn.
 * - SANDBOX_UNAVAILABLE: {@link sandboxUnavailableError}.
 */
export { agentSandboxPlan, defaultBuildCaches, gatePlan, gitConfigMasks, homeSecrets, planWritesIn, type AgentSandboxPlanInput, type GatePlanInput, type SandboxPlan, type SandboxSettings } from './sandbox-plan.js';
export { sandboxOverrideVariable, sandboxStatus, type SandboxStatus } from './sandbox-status.js';
export { sandboxInstallHint, sandboxUnavailableError, sandboxUnavailableMessage } from './sandbox-unavailable-error.js';
export { resetSandboxManager as resetSandbox } from './sandbox-manager.js';
export { isInPinnedCheckout, readSandboxSettings } from './sandbox-settings.js';
export { ensureScratchParent, foreignScratchDirs, makeScratchDir, releaseScratchDir, registeredScratchParents, keepWorkerDirRegistered, registeredWorkerDirs, registerWorkerDir, releaseWorkerDir, scratchParent, WorkerDirError } from './scratch-dirs.js';
export { sandboxCommandVariable, shellQuote, vanishedMountAttempts, vanishedMountPoint, wrapInSandbox, type SandboxedCommand, type WrapInSandboxOptions } from './wrap-in-sandbox.js';
