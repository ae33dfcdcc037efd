/**
 * The OS sandbox for everything an agent runs (DESIGN §3.1, issue 11): bubblewrap on Linux and
 * Seatbelt on macOS through `@anthropic-ai/sandbox-runtime`. The sandbox is the boundary; the
 * jail's static checks stay in front as early, well-worded refusals.
 *
 * - {@link sandboxStatus}: can it run here (cached per process; `POLYWAVE_SANDBOX=off` says no).
 * - {@link agentSandboxPlan} / {@link gatePlan}: what one agent / one quality gate may touch.
 * - {@link wrapInSandbox}: a shell command → the file, arguments and environment to spawn.
 * - SANDBOX_UNAVAILABLE: {@link sandboxUnavailableError}.
 */
export { agentSandboxPlan, defaultBuildCaches, gatePlan, homeSecrets, type AgentSandboxPlanInput, type GatePlanInput, type SandboxPlan, type SandboxSettings } from './sandbox-plan.js';
export { sandboxOverrideVariable, sandboxStatus, type SandboxStatus } from './sandbox-status.js';
export { sandboxInstallHint, sandboxUnavailableError, sandboxUnavailableMessage } from './sandbox-unavailable-error.js';
export { leaseSandboxManager, resetSandboxManager as resetSandbox, type SandboxLease } from './sandbox-manager.js';
export { wrapInSandbox, type SandboxedCommand, type WrapInSandboxOptions } from './wrap-in-sandbox.js';
