import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { JournalPaths } from '../engine/journal.js';
import { loadBackend } from './backends/index.js';
import {
  defaultAgentLimits,
  emptyUsage,
  type AgentBackend,
  type AgentEvent,
  type AgentLimits,
  type AgentOutcome,
  type AgentRole,
  type AgentRunRequest,
  type ModelSpec,
} from './contract.js';
import { createJail } from './jail/jail.js';
import type { Jail, JailPolicy } from './jail/types.js';
import { createJournalRecorder } from './journal-recorder.js';
import { resolveModelSpec } from './model-spec.js';

/** Options of {@link runAgent}. */
export interface RunAgentOptions {
  agentId: string;
  role: AgentRole;
  wave?: number;
  attempt?: number;
  /** A model string (`anthropic:claude-sonnet-4-5`, `script:…`) or a parsed spec. */
  model: string | ModelSpec | undefined;
  systemPrompt: string;
  prompt: string;
  cwd: string;
  branch?: string;
  baseCommit?: string;
  implPath?: string;
  policy: JailPolicy;
  limits?: Partial<AgentLimits>;
  /** The orchestrator's environment (read once by the CLI); the agent gets a copy with its own HOME/TMPDIR. */
  env: Readonly<Record<string, string | undefined>>;
  signal?: AbortSignal;
  onEvent?: (event: AgentEvent) => void;
  /** The agent's journal (E23A); tool calls of our own loops are appended there. */
  journal?: JournalPaths;
  reportCompletion?: AgentRunRequest['reportCompletion'];
  hasCompletionReport?: AgentRunRequest['hasCompletionReport'];
  outputSchema?: Record<string, unknown>;
  /** Use this backend instead of the one the model names (tests). */
  backend?: AgentBackend;
  /** Keep the per-agent scratch directory (HOME/TMPDIR) for debugging. */
  keepScratch?: boolean;
}

/** What {@link runAgent} returns. */
export interface RunAgentResult {
  outcome: AgentOutcome;
  spec: ModelSpec;
  jail: Jail;
}

/**
 * The environment an agent's processes get: the orchestrator's, with an isolated HOME and TMPDIR
 * (so nothing lands in the user's ~/.claude or /tmp), the user's git identity and npm cache kept
 * reachable, and the POLYWAVE_* variables of the worktree contract.
 */
export function agentEnvironment(options: {
  env: Readonly<Record<string, string | undefined>>;
  scratchDir: string;
  agentId: string;
  wave?: number;
  cwd: string;
  implPath?: string;
  branch?: string;
}): Record<string, string | undefined> {
  const { env } = options;
  const home = env.HOME ?? os.homedir();
  const globalGitConfig = env.GIT_CONFIG_GLOBAL ?? path.join(home, '.gitconfig');
  const result: Record<string, string | undefined> = {
    ...env,
    HOME: path.join(options.scratchDir, 'home'),
    TMPDIR: path.join(options.scratchDir, 'tmp'),
    POLYWAVE_AGENT_ID: options.agentId,
    POLYWAVE_AGENT_WORKTREE: options.cwd,
    POLYWAVE_WORKTREE_ROOT: options.cwd,
  };
  if (existsSync(globalGitConfig)) result.GIT_CONFIG_GLOBAL = globalGitConfig;
  result.npm_config_cache ??= path.join(home, '.npm');
  if (options.wave !== undefined) result.POLYWAVE_WAVE_NUMBER = String(options.wave);
  if (options.implPath) result.POLYWAVE_IMPL_PATH = options.implPath;
  if (options.branch) result.POLYWAVE_BRANCH = options.branch;
  delete result.CLAUDECODE;
  return result;
}

/**
 * Runs one agent on the backend its model names: builds the jail, an isolated scratch HOME/TMPDIR,
 * the journal recorder and the wall-clock timeout, and always resolves with an outcome — a
 * backend that throws, a missing SDK or a timeout is data (status + failure), never an exception.
 * The timeout and the caller's abort both reach the backend through one signal; the outcome says
 * which (`timeout` vs `aborted`).
 */
export async function runAgent(options: RunAgentOptions): Promise<RunAgentResult> {
  const started = performance.now();
  const limits: AgentLimits = { ...defaultAgentLimits, ...options.limits };
  const spec = typeof options.model === 'object' ? options.model : resolveModelSpec(options.model, options.env);
  const jail = await createJail(options.policy, { env: options.env });
  const scratchDir = await mkdtemp(path.join(os.tmpdir(), `polywave-agent-${options.agentId.replace(/[^A-Za-z0-9-]/g, '_')}-`));
  await Promise.all([mkdir(path.join(scratchDir, 'home'), { recursive: true }), mkdir(path.join(scratchDir, 'tmp'), { recursive: true })]);
  const env = agentEnvironment({ env: options.env, scratchDir, agentId: options.agentId, cwd: options.cwd, ...(options.wave !== undefined ? { wave: options.wave } : {}), ...(options.implPath ? { implPath: options.implPath } : {}), ...(options.branch ? { branch: options.branch } : {}) });

  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort(new DOMException(`agent ${options.agentId} exceeded its wall-clock limit of ${Math.round(limits.timeoutMs / 1000)} s`, 'TimeoutError'));
  }, limits.timeoutMs);
  const onAbort = () => controller.abort(options.signal?.reason ?? new Error('aborted'));
  if (options.signal?.aborted) onAbort();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  const recorder = options.journal ? createJournalRecorder(options.journal) : undefined;
  const onEvent = options.onEvent ?? (() => {});
  let outcome: AgentOutcome;
  try {
    const backend = options.backend ?? (await loadBackend(spec.backend));
    const request: AgentRunRequest = {
      agentId: options.agentId,
      role: options.role,
      ...(options.wave !== undefined ? { wave: options.wave } : {}),
      attempt: options.attempt ?? 1,
      model: spec,
      systemPrompt: options.systemPrompt,
      prompt: options.prompt,
      cwd: options.cwd,
      ...(options.branch ? { branch: options.branch } : {}),
      ...(options.baseCommit ? { baseCommit: options.baseCommit } : {}),
      ...(options.implPath ? { implPath: options.implPath } : {}),
      jail,
      limits,
      env,
      scratchDir,
      signal: controller.signal,
      onEvent,
      ...(recorder ? { recorder } : {}),
      ...(options.reportCompletion ? { reportCompletion: options.reportCompletion } : {}),
      ...(options.hasCompletionReport ? { hasCompletionReport: options.hasCompletionReport } : {}),
      ...(options.outputSchema ? { outputSchema: options.outputSchema } : {}),
    };
    outcome = await backend.run(request);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    outcome = { status: 'failed', failure: { kind: 'fatal', message }, text: '', turns: 0, usage: emptyUsage(), durationMs: 0, denials: [] };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener('abort', onAbort);
    recorder?.flush();
    if (!options.keepScratch) await rm(scratchDir, { recursive: true, force: true }).catch(() => undefined);
  }
  if (timedOut && outcome.status !== 'finished') outcome = { ...outcome, status: 'timeout', failure: { kind: 'transient', message: `wall-clock limit of ${Math.round(limits.timeoutMs / 1000)} s reached` } };
  outcome = { ...outcome, durationMs: Math.round(performance.now() - started) };
  return { outcome, spec, jail };
}
