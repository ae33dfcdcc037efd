/**
 * The agent runtime contract, version 1 (DESIGN §5: versioned like the AI SDK's provider spec).
 *
 * A backend starts one agent with its role, prompts, worktree, jail and limits, streams typed
 * {@link AgentEvent}s while it runs, honours `signal` (abort and the per-agent wall-clock
 * timeout are both delivered through it), and resolves with an {@link AgentOutcome} — it never
 * throws for a failure of the agent or the provider; that is data in the outcome. Backends never
 * invent a completion report: an agent reports through the `set_completion` tool, which calls
 * {@link AgentRunRequest.reportCompletion} (the same locked writer as `polywave set-completion`).
 */
import type { Jail } from './jail/types.js';
import type { SandboxPlan } from '../sandbox/sandbox-plan.js';
import type { ToolExecutor } from './sandbox/tool-executor.js';

export const agentSpecVersion = 'polywave-agent/v1' as const;
export type AgentSpecVersion = typeof agentSpecVersion;

/** The participants of the protocol that run as agents (reference/agents.md §1). */
export type AgentRole = 'scout' | 'scaffold' | 'wave' | 'critic' | 'integration' | 'planner';

/** Which runtime executes the agent. */
export type BackendName = 'claude-code' | 'ai-sdk' | 'cli' | 'script';

/** Providers reachable through the ai-sdk backend. */
export type AiSdkProvider = 'anthropic' | 'openai' | 'ollama' | 'lmstudio' | 'openai-compatible';

/** A parsed model string (`provider:model`), see model-spec.ts. */
export type ModelSpec =
  | { backend: 'ai-sdk'; provider: AiSdkProvider; modelId: string; baseURL?: string; raw: string }
  | { backend: 'claude-code'; modelId?: string; raw: string }
  | { backend: 'cli'; command: string; modelId?: string; raw: string }
  | { backend: 'script'; scriptPath?: string; raw: string };

/** Token usage and cost; every field is a running total for the agent's run. */
export interface AgentUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  /** USD, when the backend or the pricing table knows it. */
  costUsd?: number;
}

export const emptyUsage = (): AgentUsage => ({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });

/** Adds `usage` into `total` (cost only when known). */
export function addUsage(total: AgentUsage, usage: AgentUsage | undefined): void {
  if (!usage) return;
  total.inputTokens += usage.inputTokens;
  total.outputTokens += usage.outputTokens;
  total.cacheReadTokens += usage.cacheReadTokens;
  total.cacheWriteTokens += usage.cacheWriteTokens;
  if (usage.costUsd !== undefined) total.costUsd = (total.costUsd ?? 0) + usage.costUsd;
}

/** How a run that saw `signal` abort ended: the runner's wall-clock limit aborts with a TimeoutError. */
export function abortOutcomeStatus(signal: AbortSignal): 'timeout' | 'aborted' {
  const reason: unknown = signal.reason;
  const name = typeof reason === 'object' && reason !== null && 'name' in reason ? (reason as { name?: unknown }).name : undefined;
  return name === 'TimeoutError' ? 'timeout' : 'aborted';
}

/** A tool call the jail refused. `code` is stable (JAIL_* codes, see jail/types.ts). */
export interface ToolDenial {
  tool: string;
  code: string;
  reason: string;
  /** The path or command that was refused. */
  target?: string;
  /** An after-run check (`tool: 'sandbox'`) found this change but could NOT undo it: it is still in the checkout. */
  stayed?: true;
}

/** Events a backend streams while the agent runs (discriminated on `type`, noun-then-verb). */
export type AgentEvent =
  | { type: 'agent-text'; text: string }
  | { type: 'tool-call-start'; toolCallId: string; tool: string; input: Record<string, unknown> }
  | { type: 'tool-call-end'; toolCallId: string; tool: string; isError: boolean; output: string; durationMs: number }
  | { type: 'tool-call-deny'; toolCallId: string; denial: ToolDenial }
  | { type: 'turn-end'; turn: number; usage: AgentUsage }
  | { type: 'agent-log'; level: 'info' | 'warn'; message: string };

/** Limits every backend honours. */
export interface AgentLimits {
  /** Wall-clock limit for the whole run (the runner aborts `signal` when it passes). */
  timeoutMs: number;
  /** Model turns (a turn = one model call). */
  maxTurns: number;
  /** Per bash/grep tool call. */
  toolTimeoutMs: number;
  /** Tool output returned to the model is cut to this many bytes (the full output goes to the journal). */
  maxToolOutputBytes: number;
}

export const defaultAgentLimits: Readonly<AgentLimits> = Object.freeze({
  timeoutMs: 30 * 60_000,
  maxTurns: 50,
  toolTimeoutMs: 120_000,
  maxToolOutputBytes: 30_000,
});

/** Receives every tool call of our own tool loops (E23A journal). */
export interface ToolCallRecorder {
  recordToolUse(entry: { toolCallId: string; tool: string; input: Record<string, unknown> }): void;
  recordToolResult(entry: { toolCallId: string; tool: string; output: string; isError: boolean }): void;
}

/** What `reportCompletion` answers: saved, or why not (sent back to the model so it can correct it). */
export type ReportCompletionResult = { ok: true; status: string } | { ok: false; code: string; message: string };

/** Everything a backend needs to run one agent. */
export interface AgentRunRequest {
  /** `A`, `B2`… for wave agents; the role name for the others (`scout`, `critic`). */
  agentId: string;
  role: AgentRole;
  wave?: number;
  /** 1 for the first launch, 2+ for relaunches (E19). */
  attempt: number;
  model: ModelSpec;
  systemPrompt: string;
  prompt: string;
  /** Working directory: the agent's worktree (or the repository root for solo/integration agents). */
  cwd: string;
  /** Branch the agent must commit on (wave agents). */
  branch?: string;
  /** The wave's base commit (diffs, script report auto-fill). */
  baseCommit?: string;
  /** Absolute path of the IMPL manifest in the main checkout. */
  implPath?: string;
  jail: Jail;
  limits: AgentLimits;
  /** Environment the agent's processes get (already built by the runner: isolated HOME/TMPDIR, POLYWAVE_* vars). */
  env: Readonly<Record<string, string | undefined>>;
  /** Per-agent scratch directory (HOME, CLAUDE_CONFIG_DIR, TMPDIR live here); outside the worktree. */
  scratchDir: string;
  signal: AbortSignal;
  onEvent: (event: AgentEvent) => void;
  recorder?: ToolCallRecorder;
  /** Writes the agent's completion report (schema-checked, locked). Absent for roles that do not report. */
  reportCompletion?: (report: Record<string, unknown>) => Promise<ReportCompletionResult>;
  /** Whether the agent's completion report is on record (E42 Stop checks). */
  hasCompletionReport?: () => Promise<boolean>;
  /** JSON Schema of a structured final answer (scout manifest, critic verdict) where the backend supports it. */
  outputSchema?: Record<string, unknown>;
  /**
   * The OS sandbox every process of the agent must run in (DESIGN §3.1): its worktree, private
   * HOME/TMPDIR writable, `.git` read-only, other worktrees and secrets unreadable, the network
   * allow-list. Absent only when the sandbox is unavailable and the run was allowed without it
   * (script agents, or `unsafeNoSandbox`): then the jail's static checks are the only confinement.
   */
  sandbox?: SandboxPlan;
  /** The agent's file-tool executor inside {@link sandbox} (our own tool loops); the runner stops it. */
  toolExecutor?: ToolExecutor;
}

/** How a run ended. `finished` = the agent stopped on its own (its report says whether it succeeded). */
export type AgentOutcomeStatus = 'finished' | 'failed' | 'timeout' | 'aborted' | 'max-turns';

/** `transient` = worth retrying unchanged (429, overloaded, connection reset); `config` = fix the setup (missing key/binary). */
export type AgentFailureKind = 'transient' | 'fatal' | 'config';

export interface AgentOutcome {
  status: AgentOutcomeStatus;
  failure?: { kind: AgentFailureKind; message: string };
  /** Final assistant text (or the structured output as JSON text). */
  text: string;
  /** Parsed structured output when `outputSchema` was given and the backend produced it. */
  structured?: unknown;
  turns: number;
  usage: AgentUsage;
  sessionId?: string;
  durationMs: number;
  denials: ToolDenial[];
}

/** A backend implementation. */
export interface AgentBackend {
  readonly specVersion: AgentSpecVersion;
  readonly name: BackendName;
  run(request: AgentRunRequest): Promise<AgentOutcome>;
}

/** Classifies a provider/transport error message: 429/overloaded/5xx/connection errors are transient. */
export function classifyProviderError(message: string): AgentFailureKind {
  if (/\b(429|rate.?limit|overloaded|529|50[0234]|ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|socket hang up|fetch failed|network)\b/i.test(message)) return 'transient';
  if (/\b(401|403|api.?key|unauthori[sz]ed|not installed|not found on PATH|ENOENT)\b/i.test(message)) return 'config';
  return 'fatal';
}
