/**
 * The OS sandbox for everything an agent runs (DESIGN §3.1, issue 11). The core — plans, status,
 * wrapping a command, the session — lives in src/sandbox/ (gates use it too, and gates/ may not
 * import agents/); this is the agents' entry point to it, plus what only agents need:
 *
 * - {@link buildAgentSandboxPlan}: an agent's plan from the repository (git worktree list, config).
 * - {@link createToolExecutor}: the per-agent file-tool executor inside the sandbox.
 * - {@link sandboxDenialsIn}: the sandbox's refusals in a command's output, as denials.
 */
export * from '../../sandbox/index.js';
export { buildAgentSandboxPlan, type BuildAgentSandboxPlanInput } from './agent-sandbox.js';
export { gitCommitHint, isGitWriteRefusal, sandboxDenialsIn, type SandboxDenial, type SandboxDenialCode } from './sandbox-denials.js';
export { createToolExecutor, ToolExecutorError, type EntryKind, type ToolExecutor, type ToolExecutorOptions } from './tool-executor.js';
