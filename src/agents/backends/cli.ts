/**
 * The `cli` backend: runs an external agent CLI (Claude Code's `claude -p`, OpenAI's `codex exec`,
 * or any command template from `polywave.config.json` `agent_clis`) as a child process in the
 * agent's worktree, turns its machine-readable output into {@link AgentEvent}s, and — because we
 * cannot put our jail inside somebody else's tool loop — audits the worktree after the process
 * exits (POST-HOC): any file changed outside the agent's ownership, or HEAD off the agent's branch,
 * fails the run (`failure.kind: 'fatal'`, every violation recorded as a {@link ToolDenial}), so
 * nothing of it merges. CLI agents report through `polywave set-completion` themselves (the runner
 * tells them how in the prompt); this backend never writes a report.
 *
 * Built-in templates (prompt = system prompt + "\n\n" + prompt, on stdin):
 * - `claude` → `claude -p --output-format stream-json --verbose [--model M] [--max-turns N]
 *   --permission-mode acceptEdits`; the binary is `POLYWAVE_CLAUDE_BIN` (request env) or `claude` on PATH.
 * - `codex` → `codex exec --json --full-auto [--model M] -`; the binary is `POLYWAVE_CODEX_BIN` or `codex` on PATH.
 *
 * A {@link CliTemplate}'s `command` is an argv with placeholders `{prompt}`, `{model}`,
 * `{max_turns}`, `{cwd}`, `{prompt_file}`. An argument whose placeholder has no value (no model
 * given) is dropped together with the flag right before it (`--model {model}` disappears as a
 * pair; `--model={model}` disappears alone).
 *
 * The child runs in `request.cwd` with `request.env` (minus `CLAUDECODE`, so a nested Claude Code
 * does not refuse to start) in its own process group; aborting `request.signal` (the runner's
 * abort or wall-clock timeout) sends SIGTERM to the whole group, then SIGKILL after a grace
 * period. Leftover processes of the group are killed when the CLI exits. An abort whose reason is
 * a `TimeoutError` ends the run as `timeout`, any other abort as `aborted`.
 *
 * SANDBOXED (`request.sandbox`, DESIGN §3.1): the whole CLI process runs inside the OS sandbox
 * (`wrapInSandbox` with the agent's plan): only the worktree and the private HOME/TMPDIR are
 * writable, `.git` is read-only, other worktrees and secrets are unreadable, and the network
 * reaches only the model endpoint (from ANTHROPIC_BASE_URL / OPENAI_BASE_URL / the codex
 * providers' `base_url`, see {@link modelEndpoints}) and `sandbox.network.allow`, through the
 * sandbox's proxy. The CLI's own permission prompts and sandbox are switched off there
 * ({@link sandboxedCliTemplates}): the OS sandbox is the boundary, and a nested sandbox cannot
 * start inside it (no user namespaces). The sandbox's PID namespace takes every process the CLI
 * started down with it when the CLI exits (background jobs included).
 * Git writes: the agent cannot commit inside (`.git` is read-only), so after the CLI exits the
 * ORCHESTRATOR COMMITS the agent's changed owned files on its branch (the `git_commit` tool's code,
 * run outside the sandbox), but only when the ownership audit is clean — unowned changes fail the
 * agent as before and nothing of it is committed. The agent reports by writing its completion
 * report as JSON to `$POLYWAVE_REPORT_FILE` (the manifest is outside the sandbox); the backend
 * files it through `request.reportCompletion` after the commit, with that commit's SHA.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, closeSync, constants as fsConstants, existsSync, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { BlockList, isIP } from 'node:net';
import path from 'node:path';
import {
  abortOutcomeStatus,
  agentSpecVersion,
  classifyProviderError,
  emptyUsage,
  type AgentBackend,
  type AgentEvent,
  type AgentFailureKind,
  type AgentOutcome,
  type AgentOutcomeStatus,
  type AgentRunRequest,
  type AgentUsage,
  type ToolDenial,
} from '../contract.js';
import { createGit } from '../../git/git-cli.js';
import { planWritesIn, vanishedMountAttempts, wrapInSandbox, type SandboxPlan } from '../sandbox/index.js';
import { killWithThisProcess } from '../../sandbox/piped-spawn.js';
import { sandboxDenialsIn } from '../sandbox/sandbox-denials.js';
import { fillReportFromGit, gitCommitTool } from '../tools/report-tools.js';
import { createStaleViewCheck, staleCheckIntervalMs, staleViewCode, type StaleViewCheck } from '../sandbox/appeared-since-start.js';
import { codexCommandRunsGuard, gateBypassCode, gateTimeoutSeconds, openToolGate, type ToolGate } from '../sandbox/tool-gate.js';

/** Output formats the backend can parse. */
export type CliOutputFormat = 'claude-stream-json' | 'codex-json' | 'text';

/** A command template for an agent CLI (polywave.config.json `agent_clis.<name>`). */
export interface CliTemplate {
  /** argv; `command[0]` is the binary (a name looked up on PATH, or a path relative to the worktree). */
  command: string[];
  /** How the prompt reaches the CLI: stdin, an argument (`{prompt}`, else appended), or a file (`{prompt_file}`, else appended). */
  promptVia: 'stdin' | 'argument' | 'file';
  format: CliOutputFormat;
}

export interface CliBackendOptions {
  /** Extra templates by name (they override the built-ins of the same name). */
  templates?: Record<string, CliTemplate>;
}

/**
 * The built-in templates (`cli:claude`, `cli:codex`). Claude Code reads the user's settings only (`--setting-sources
 * user`), never the project's `.claude/settings.json` / `settings.local.json` in the agent's worktree: a committed
 * `env.ANTHROPIC_BASE_URL` there sent the API key to a host the repository chose (outside round A21-35, on a worker:
 * the worker's key, to a host a job producer chose; a tier-1 agent can commit such a file for tier 2's agents).
 */
export const builtinCliTemplates: Readonly<Record<'claude' | 'codex', Readonly<CliTemplate>>> = Object.freeze({
  claude: Object.freeze({
    command: ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--model', '{model}', '--max-turns', '{max_turns}', '--permission-mode', 'acceptEdits', '--setting-sources', 'user'],
    promptVia: 'stdin',
    format: 'claude-stream-json',
  }),
  codex: Object.freeze({
    // codex exec is read-only by default; workspace-write lets the agent write its worktree under
    // codex's own sandbox (codex 0.169 dropped --full-auto). Its git directory lives outside the
    // worktree, which codex's sandbox may refuse — then the post-hoc audit decides as for any CLI agent.
    command: ['codex', 'exec', '--json', '--sandbox', 'workspace-write', '--model', '{model}', '-'],
    promptVia: 'stdin',
    format: 'codex-json',
  }),
});

/**
 * The built-in templates inside polywave's OS sandbox: the CLI's own permission layer and sandbox
 * are off, because our sandbox is the boundary (a nested bubblewrap cannot start inside it, and
 * `claude -p` with acceptEdits refuses every Bash command for want of someone to ask). Outside the
 * sandbox ({@link builtinCliTemplates}) they stay on.
 */
export const sandboxedCliTemplates: Readonly<Record<'claude' | 'codex', Readonly<CliTemplate>>> = Object.freeze({
  claude: Object.freeze({
    command: ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--model', '{model}', '--max-turns', '{max_turns}', '--permission-mode', 'bypassPermissions', '--setting-sources', 'user'],
    promptVia: 'stdin',
    format: 'claude-stream-json',
  }),
  codex: Object.freeze({
    command: ['codex', 'exec', '--json', '--dangerously-bypass-approvals-and-sandbox', '--model', '{model}', '-'],
    promptVia: 'stdin',
    format: 'codex-json',
  }),
});

/**
 * Variables the sandboxed built-ins need: Claude Code accepts bypassPermissions as root only when
 * told it is sandboxed, and its non-essential traffic (update checks, telemetry) could not leave
 * the sandbox anyway.
 */
const sandboxedTemplateEnv: Readonly<Record<string, Readonly<Record<string, string>>>> = { claude: { IS_SANDBOX: '1', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1' }, codex: {} };

/** The file a sandboxed CLI agent writes its completion report to (JSON), given to it as POLYWAVE_REPORT_FILE. */
export const reportFileVariable = 'POLYWAVE_REPORT_FILE';

/** Default model endpoints of the built-in CLIs when no base URL is configured. */
const defaultEndpoints: Readonly<Record<string, string>> = { claude: 'https://api.anthropic.com', codex: 'https://api.openai.com/v1' };

/** `host:port` of a URL for the sandbox's allow-list (IPv6 literals bracketed); undefined when it is not a URL. */
export function endpointHost(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (parsed.hostname === '') return undefined;
  const port = parsed.port !== '' ? parsed.port : parsed.protocol === 'http:' ? '80' : '443';
  return `${parsed.hostname}:${port}`;
}

/**
 * The model endpoints a built-in CLI talks to, as `host:port`: Claude Code → ANTHROPIC_BASE_URL
 * (default api.anthropic.com); codex → OPENAI_BASE_URL (default api.openai.com) and every
 * `base_url` of the model providers in `$CODEX_HOME/config.toml`. Custom templates get none: their
 * endpoints go in `sandbox.network.allow`.
 */
export function modelEndpoints(command: string, env: Readonly<Record<string, string | undefined>>): string[] {
  const urls: string[] = [];
  if (command === 'claude') urls.push(env.ANTHROPIC_BASE_URL?.trim() || defaultEndpoints.claude!);
  if (command === 'codex') {
    urls.push(env.OPENAI_BASE_URL?.trim() || defaultEndpoints.codex!);
    const home = env.CODEX_HOME ?? (env.HOME !== undefined ? path.join(env.HOME, '.codex') : undefined);
    const config = home !== undefined ? path.join(home, 'config.toml') : undefined;
    if (config !== undefined && existsSync(config)) {
      try {
        for (const match of readFileSync(config, 'utf8').matchAll(/^\s*base_url\s*=\s*["']([^"']+)["']/gm)) urls.push(match[1]!);
      } catch {
        // unreadable config: the defaults stand
      }
    }
  }
  return [...new Set(urls.map(endpointHost).filter((host): host is string => host !== undefined))];
}

/**
 * sandbox-runtime's NO_PROXY inside the sandbox (sandbox-utils.js): loopback and private ranges go
 * direct — which, in the sandbox's own network namespace, reaches nothing. A model endpoint in one
 * of them must go through the proxy instead, so its entry is dropped for the CLI.
 */
const sandboxNoProxy = ['localhost', '127.0.0.1', '::1', '169.254.0.0/16', '10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16'];

/** The sandbox's NO_PROXY minus the entries that would send one of `hosts` (`host:port`) around the proxy. */
export function noProxyFor(hosts: readonly string[]): string {
  const names = hosts.map((host) => host.replace(/:\d+$/, '').replace(/^\[(.*)\]$/, '$1').toLowerCase());
  return sandboxNoProxy
    .filter((entry) => {
      if (!entry.includes('/')) return !names.includes(entry) && !(entry === 'localhost' && names.some((name) => name.endsWith('.localhost')));
      const [network, prefix] = entry.split('/');
      const list = new BlockList();
      list.addSubnet(network!, Number(prefix), 'ipv4');
      return !names.some((name) => isIP(name) === 4 && list.check(name, 'ipv4'));
    })
    .join(',');
}

/** Single-quotes a word for bash. */
function shellWord(value: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

const binaryEnvVars: Readonly<Record<string, string>> = { claude: 'POLYWAVE_CLAUDE_BIN', codex: 'POLYWAVE_CODEX_BIN' };

/** Time between SIGTERM and SIGKILL of the process group on abort. */
const killGraceMs = 3_000;
/** A stdout line longer than this is dropped (a runaway line must not exhaust memory). */
const maxLineBytes = 16 * 1024 * 1024;
/** How much of stderr is kept for the failure message. */
const stderrTailBytes = 64 * 1024;
/** How much plain-text output is kept as the final text of a `text` format CLI. */
const maxTextBytes = 1024 * 1024;

type Placeholders = Record<'prompt' | 'model' | 'max_turns' | 'cwd' | 'prompt_file', string | undefined>;

/**
 * Expands a template argv: placeholders are substituted; an argument whose placeholder has no value
 * is dropped together with a preceding literal flag (`--model {model}`).
 */
export function expandTemplateArgs(command: readonly string[], values: Readonly<Partial<Placeholders>>): string[] {
  const out: string[] = [];
  let lastWasLiteralFlag = false;
  for (const arg of command) {
    const names = [...arg.matchAll(/\{(prompt|model|max_turns|cwd|prompt_file)\}/g)].map((match) => match[1] as keyof Placeholders);
    if (names.length === 0) {
      out.push(arg);
      lastWasLiteralFlag = /^--?[A-Za-z]/.test(arg);
      continue;
    }
    if (names.some((name) => values[name] === undefined)) {
      if (lastWasLiteralFlag) out.pop();
      lastWasLiteralFlag = false;
      continue;
    }
    out.push(arg.replace(/\{(prompt|model|max_turns|cwd|prompt_file)\}/g, (_all, name: keyof Placeholders) => values[name] ?? ''));
    lastWasLiteralFlag = false;
  }
  return out;
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Finds `binary` (a name on PATH, or a path relative to `cwd`); undefined when not found or not executable. */
export function findBinary(binary: string, cwd: string, pathVariable: string | undefined): string | undefined {
  if (binary.includes('/') || binary.includes(path.sep)) {
    const absolute = path.resolve(cwd, binary);
    return isExecutableFile(absolute) ? absolute : undefined;
  }
  for (const directory of (pathVariable ?? '').split(path.delimiter)) {
    if (directory === '') continue;
    const candidate = path.join(directory, binary);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function cut(text: string, maxBytes: number): string {
  if (Buffer.byteLength(text) <= maxBytes) return text;
  const buffer = Buffer.from(text).subarray(0, Math.max(0, maxBytes));
  return `${buffer.toString('utf8').replace(/\uFFFD$/, '')}\n… [output cut to ${maxBytes} bytes]`;
}

function asRecord(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function asNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}


/** Text of a tool_result `content` (a string or an array of content blocks). */
function toolResultText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((block) => {
        const record = asRecord(block);
        if (record?.type === 'text' && typeof record.text === 'string') return record.text;
        return record ? JSON.stringify(record) : String(block);
      })
      .join('\n');
  }
  return content === undefined || content === null ? '' : JSON.stringify(content);
}

/** Parses a final answer as JSON (bare, or in a ```json fence) for roles that want structured output. */
function parseStructured(text: string): unknown {
  const trimmed = text.trim();
  const fenced = /```(?:json)?\s*\n([\s\S]*?)\n```/.exec(trimmed);
  for (const candidate of [trimmed, fenced?.[1]]) {
    if (candidate === undefined) continue;
    try {
      return JSON.parse(candidate) as unknown;
    } catch {
      // not JSON
    }
  }
  return undefined;
}

/** What a stream parser accumulates. */
interface ParseState {
  request: AgentRunRequest;
  emit: (event: AgentEvent) => void;
  sessionId?: string;
  /** Final text (result text, last agent message, or the collected plain output). */
  text: string;
  turns: number;
  usage: AgentUsage;
  /** Set when the stream itself reported an error (result is_error, turn.failed, a last error event). */
  streamError?: string;
  /** Codex: the last `error` event not followed by a completed turn (codex also reports retries it recovers from as `error`). */
  pendingError?: string;
  /** Claude's `error_max_turns` result. */
  maxTurnsHit: boolean;
  /** Whether a final `result` event (claude) was seen. */
  sawResult: boolean;
  openToolCalls: Map<string, { tool: string; startedAt: number }>;
  /** Claude: usage of each assistant message id (stream-json repeats a message per content block). */
  messageUsage: Map<string, AgentUsage>;
  lastMessageId?: string;
  anonymousCalls: number;
  /** Set when the CLI runs in the OS sandbox: tool outputs showing a refusal of the sandbox become denials. */
  sandboxDenials?: ToolDenial[];
  /** Codex in the sandbox gate: told of each event of a tool item (a command, a file change, an MCP call). */
  codexToolSeen?: (itemId: string, itemType: string, item: Record<string, unknown>, completed: boolean) => void;
}

function startTool(state: ParseState, toolCallId: string, tool: string, input: Record<string, unknown>): void {
  if (state.openToolCalls.has(toolCallId)) return;
  state.openToolCalls.set(toolCallId, { tool, startedAt: Date.now() });
  state.emit({ type: 'tool-call-start', toolCallId, tool, input });
  state.request.recorder?.recordToolUse({ toolCallId, tool, input });
}

function endTool(state: ParseState, toolCallId: string, fallbackTool: string, output: string, isError: boolean): void {
  const open = state.openToolCalls.get(toolCallId);
  state.openToolCalls.delete(toolCallId);
  const tool = open?.tool ?? fallbackTool;
  state.request.recorder?.recordToolResult({ toolCallId, tool, output, isError });
  if (state.sandboxDenials && state.request.sandbox) {
    for (const refusal of sandboxDenialsIn(output, { plan: state.request.sandbox, cwd: state.request.cwd })) {
      const denial: ToolDenial = { tool, code: refusal.code, reason: refusal.reason };
      state.sandboxDenials.push(denial);
      state.emit({ type: 'tool-call-deny', toolCallId, denial });
    }
  }
  state.emit({
    type: 'tool-call-end',
    toolCallId,
    tool,
    isError,
    output: cut(output, state.request.limits.maxToolOutputBytes),
    durationMs: open ? Date.now() - open.startedAt : 0,
  });
}

function sumUsage(parts: Iterable<AgentUsage>): AgentUsage {
  const total = emptyUsage();
  for (const part of parts) {
    total.inputTokens += part.inputTokens;
    total.outputTokens += part.outputTokens;
    total.cacheReadTokens += part.cacheReadTokens;
    total.cacheWriteTokens += part.cacheWriteTokens;
  }
  return total;
}

function claudeUsage(value: unknown): AgentUsage {
  const usage = asRecord(value) ?? {};
  return {
    inputTokens: asNumber(usage.input_tokens) ?? 0,
    outputTokens: asNumber(usage.output_tokens) ?? 0,
    cacheReadTokens: asNumber(usage.cache_read_input_tokens) ?? 0,
    cacheWriteTokens: asNumber(usage.cache_creation_input_tokens) ?? 0,
  };
}

/** One line of `claude -p --output-format stream-json --verbose`. */
function handleClaudeLine(state: ParseState, event: Record<string, unknown>): void {
  const type = asString(event.type);
  if (type === 'system') {
    if (event.subtype === 'init') {
      state.sessionId = asString(event.session_id) ?? state.sessionId;
      const model = asString(event.model);
      state.emit({ type: 'agent-log', level: 'info', message: `claude session ${state.sessionId ?? '?'}${model ? ` (model ${model})` : ''}` });
    }
    return;
  }
  if (type === 'assistant') {
    const message = asRecord(event.message) ?? {};
    const messageId = asString(message.id) ?? `anonymous-${state.turns + 1}`;
    if (messageId !== state.lastMessageId) {
      if (state.lastMessageId !== undefined) state.emit({ type: 'turn-end', turn: state.turns, usage: sumUsage(state.messageUsage.values()) });
      state.turns += 1;
      state.lastMessageId = messageId;
    }
    if (message.usage !== undefined) state.messageUsage.set(messageId, claudeUsage(message.usage));
    const content = Array.isArray(message.content) ? message.content : [];
    for (const block of content) {
      const record = asRecord(block);
      if (!record) continue;
      if (record.type === 'text' && typeof record.text === 'string') {
        if (record.text !== '') state.emit({ type: 'agent-text', text: record.text });
        state.text = record.text;
      } else if (record.type === 'tool_use') {
        const toolCallId = asString(record.id) ?? `claude-${++state.anonymousCalls}`;
        startTool(state, toolCallId, asString(record.name) ?? 'unknown', asRecord(record.input) ?? {});
      }
    }
    return;
  }
  if (type === 'user') {
    const message = asRecord(event.message) ?? {};
    const content = Array.isArray(message.content) ? message.content : [];
    for (const block of content) {
      const record = asRecord(block);
      if (record?.type !== 'tool_result') continue;
      const toolCallId = asString(record.tool_use_id) ?? `claude-${++state.anonymousCalls}`;
      endTool(state, toolCallId, 'unknown', toolResultText(record.content), record.is_error === true);
    }
    return;
  }
  if (type === 'result') {
    state.sawResult = true;
    state.sessionId = asString(event.session_id) ?? state.sessionId;
    const resultText = asString(event.result);
    if (resultText !== undefined) state.text = resultText;
    const turns = asNumber(event.num_turns);
    if (turns !== undefined) state.turns = turns;
    const usage = event.usage !== undefined ? claudeUsage(event.usage) : sumUsage(state.messageUsage.values());
    const cost = asNumber(event.total_cost_usd);
    state.usage = cost !== undefined ? { ...usage, costUsd: cost } : usage;
    const permissionDenials = Array.isArray(event.permission_denials) ? event.permission_denials : [];
    if (permissionDenials.length > 0) {
      const tools = permissionDenials.map((denial) => asString(asRecord(denial)?.tool_name) ?? '?');
      state.emit({ type: 'agent-log', level: 'warn', message: `claude refused ${permissionDenials.length} tool call(s) by its permission mode: ${tools.join(', ')}` });
    }
    const subtype = asString(event.subtype) ?? 'success';
    if (subtype === 'error_max_turns') state.maxTurnsHit = true;
    else if (event.is_error === true || subtype !== 'success') {
      state.streamError = resultText && resultText.trim() !== '' ? resultText : `claude ended with ${subtype}`;
    }
    state.emit({ type: 'turn-end', turn: state.turns, usage: state.usage });
    state.lastMessageId = undefined;
  }
}

function codexUsage(value: unknown): AgentUsage {
  const usage = asRecord(value) ?? {};
  const input = asNumber(usage.input_tokens) ?? 0;
  const cached = asNumber(usage.cached_input_tokens) ?? 0;
  // OpenAI counts cached input inside input_tokens; AgentUsage keeps them apart (as Anthropic does).
  return { inputTokens: Math.max(0, input - cached), outputTokens: asNumber(usage.output_tokens) ?? 0, cacheReadTokens: cached, cacheWriteTokens: 0 };
}

/** One line of `codex exec --json`. */
function handleCodexLine(state: ParseState, event: Record<string, unknown>): void {
  const type = asString(event.type);
  if (type === 'thread.started') {
    state.sessionId = asString(event.thread_id) ?? state.sessionId;
    state.emit({ type: 'agent-log', level: 'info', message: `codex thread ${state.sessionId ?? '?'}` });
    return;
  }
  if (type === 'turn.completed') {
    state.pendingError = undefined;
    state.turns += 1;
    state.usage = sumUsage([state.usage, codexUsage(event.usage)]);
    state.emit({ type: 'turn-end', turn: state.turns, usage: { ...state.usage } });
    return;
  }
  if (type === 'turn.failed' || type === 'error') {
    const message = asString(asRecord(event.error)?.message) ?? asString(event.message) ?? `codex reported ${type}`;
    // `error` also carries "Reconnecting... 2/5" while codex retries: only a turn that fails, or an
    // error no completed turn follows, fails the run.
    if (type === 'turn.failed') state.streamError = message;
    else state.pendingError = message;
    state.emit({ type: 'agent-log', level: 'warn', message: `codex: ${message}` });
    return;
  }
  if (type !== 'item.started' && type !== 'item.updated' && type !== 'item.completed') return;
  const item = asRecord(event.item);
  if (!item) return;
  const itemType = asString(item.type);
  const toolCallId = asString(item.id) ?? `codex-${++state.anonymousCalls}`;
  const completed = type === 'item.completed';
  if (itemType === 'command_execution' || itemType === 'file_change' || itemType === 'mcp_tool_call') state.codexToolSeen?.(toolCallId, itemType, item, completed);
  if (itemType === 'agent_message') {
    if (completed && typeof item.text === 'string') {
      state.text = item.text;
      if (item.text !== '') state.emit({ type: 'agent-text', text: item.text });
    }
    return;
  }
  if (itemType === 'command_execution') {
    startTool(state, toolCallId, 'bash', { command: asString(item.command) ?? '' });
    if (completed) {
      const exitCode = asNumber(item.exit_code);
      const isError = item.status === 'failed' || item.status === 'declined' || (exitCode !== undefined && exitCode !== 0);
      endTool(state, toolCallId, 'bash', asString(item.aggregated_output) ?? '', isError);
    }
    return;
  }
  if (itemType === 'file_change') {
    const changes = Array.isArray(item.changes) ? item.changes.map((change) => asRecord(change) ?? {}) : [];
    if (completed) {
      startTool(state, toolCallId, 'apply_patch', { changes });
      const summary = changes.map((change) => `${asString(change.kind) ?? 'update'} ${asString(change.path) ?? '?'}`).join('\n');
      endTool(state, toolCallId, 'apply_patch', summary, item.status === 'failed');
    }
    return;
  }
  if (itemType === 'mcp_tool_call') {
    const tool = `mcp:${asString(item.server) ?? '?'}/${asString(item.tool) ?? '?'}`;
    startTool(state, toolCallId, tool, asRecord(item.arguments) ?? {});
    if (completed) {
      const error = asRecord(item.error);
      const output = error ? (asString(error.message) ?? JSON.stringify(error)) : JSON.stringify(item.result ?? '');
      endTool(state, toolCallId, tool, output, error !== undefined || item.status === 'failed');
    }
    return;
  }
  if (itemType === 'error' && completed) {
    state.emit({ type: 'agent-log', level: 'warn', message: `codex: ${asString(item.message) ?? 'error'}` });
  }
}

/** Kills a process group (negative pid); ignores a group that is already gone. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    try {
      child.kill(signal);
    } catch {
      // already gone
    }
  }
}

function failedOutcome(started: number, kind: AgentFailureKind, message: string, extra: Partial<AgentOutcome> = {}): AgentOutcome {
  return { status: 'failed', failure: { kind, message }, text: '', turns: 0, usage: emptyUsage(), durationMs: Date.now() - started, denials: [], ...extra };
}

/** What a sandboxed CLI agent is told about the sandbox (appended to its prompt). */
function sandboxInstructions(request: AgentRunRequest, plan: SandboxPlan, reportFile: string | undefined): string {
  const lines = [
    '## The sandbox you run in',
    // (a Scout, critic or Planner in the main checkout has it read-only: run-agent.ts, plan-redirect.ts)
    planWritesIn(plan, request.cwd)
      ? `Everything you run is confined by an OS sandbox: only your working directory (${request.cwd}), $HOME and $TMPDIR are writable; the rest of the file system is read-only, other agents' worktrees and credentials are unreadable, and the network reaches only ${plan.allowedHosts.length > 0 ? plan.allowedHosts.join(', ') : 'nothing'}.`
      : `Everything you run is confined by an OS sandbox: only $HOME, $TMPDIR and the directory named below for your file are writable; the repository (${request.cwd}) and the rest of the file system are read-only, credentials are unreadable, and the network reaches only ${plan.allowedHosts.length > 0 ? plan.allowedHosts.join(', ') : 'nothing'}.`,
    "The repository metadata (.git) is read-only here: do not run git add or git commit (they fail). When you exit, polywave commits your changed files on your branch for you — only files you own; a change to any other file fails your run and nothing of it is committed.",
  ];
  if (reportFile) {
    lines.push(
      `Report by writing your completion report as one JSON object to the file $${reportFileVariable} (${reportFile}) as your last step — not with \`polywave set-completion\` (the manifest is outside the sandbox). Fields: status (complete | partial | blocked), failure_type (for partial/blocked), files_changed, files_created, tests_added, interface_deviations, out_of_scope_deps, verification ("PASS" or "FAIL (<what failed>)"), notes, and optionally commit_message (the message of the commit polywave makes). polywave files it with the commit's SHA after you exit.`,
    );
  }
  return lines.join('\n');
}

/** The report a sandboxed CLI agent left in its report file (undefined when there is none or it is not a JSON object). */
/** The completion report a sandboxed CLI agent wrote to its report file, or undefined (each refusal logged through `state.emit`). */
export function readReportFile(state: Pick<ParseState, 'emit'>, file: string): Record<string, unknown> | undefined {
  if (!existsSync(file)) {
    state.emit({ type: 'agent-log', level: 'warn', message: `the agent wrote no completion report to $${reportFileVariable}` });
    return undefined;
  }
  // The file lies in the agent's own TMPDIR, which it writes: opened without following a link and without
  // blocking, and read only when it is a regular file of bounded size (outside attack X19-19: a FIFO there blocked
  // this synchronous read, and with it the orchestrator's main thread, for good; a link would be read host-side).
  let text: string | undefined;
  let fd: number | undefined;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    const stats = fstatSync(fd);
    if (stats.isFile() && stats.size <= maxReportFileBytes) text = readFileSync(fd, 'utf8');
  } catch {
    // reported below
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  try {
    const parsed = text === undefined ? undefined : asRecord(JSON.parse(text));
    if (parsed) return parsed;
  } catch {
    // reported below
  }
  state.emit({ type: 'agent-log', level: 'warn', message: `the completion report in $${reportFileVariable} is not a JSON object in a regular file (at most ${maxReportFileBytes / 1024 / 1024} MiB); nothing was filed` });
  return undefined;
}

const maxReportFileBytes = 4 * 1024 * 1024;

/**
 * Commits the agent's changed owned files on its branch, outside the sandbox, with the code of the
 * `git_commit` tool (owned files only, HEAD on the agent branch), journaled as a `git_commit` call
 * of the orchestrator. "Nothing to commit" is not a failure.
 */
async function commitAgentWork(
  request: AgentRunRequest,
  state: ParseState,
  command: string,
  agentMessage: string | undefined,
): Promise<{ ok: true } | { ok: false; message: string; denial?: ToolDenial }> {
  const toolCallId = `polywave-commit-${request.attempt}`;
  const message = agentMessage?.trim() || `${request.agentId}: work of the ${command} agent (committed by polywave after its sandboxed run)`;
  startTool(state, toolCallId, 'git_commit', { message });
  const result = await gitCommitTool.execute(
    { message },
    {
      jail: request.jail,
      env: request.env,
      signal: request.signal,
      toolTimeoutMs: request.limits.toolTimeoutMs,
      maxToolOutputBytes: request.limits.maxToolOutputBytes,
      ...(request.branch !== undefined ? { branch: request.branch } : {}),
    },
  );
  endTool(state, toolCallId, 'git_commit', result.output, result.isError);
  if (!result.isError || /^Nothing to commit/.test(result.output)) return { ok: true };
  if (result.denial) state.emit({ type: 'tool-call-deny', toolCallId, denial: result.denial });
  return { ok: false, message: `committing the agent's work failed: ${result.output}`, ...(result.denial ? { denial: result.denial } : {}) };
}

/** Files a sandboxed agent's report through request.reportCompletion with the branch's HEAD as its commit; journaled as a `set_completion` call. */
async function fileReport(request: AgentRunRequest, state: ParseState, report: Record<string, unknown>): Promise<void> {
  const toolCallId = `polywave-report-${request.attempt}`;
  const { commit_message: _message, ...fields } = report;
  let output: string;
  let isError: boolean;
  try {
    const head = await createGit(request.cwd, { env: request.env }).headCommit();
    const input: Record<string, unknown> = { ...fields, ...(head ? { commit: head } : {}), ...(request.branch !== undefined && fields.branch === undefined ? { branch: request.branch } : {}) };
    // Issue 13 (F3): file lists the agent left out come from the branch diff.
    await fillReportFromGit(input, { cwd: request.cwd, env: request.env, ...(request.branch !== undefined ? { branch: request.branch } : {}), ...(request.baseCommit ? { baseCommit: request.baseCommit } : {}) });
    startTool(state, toolCallId, 'set_completion', input);
    const saved = await request.reportCompletion!(input);
    output = saved.ok ? `completion report saved (status: ${saved.status})` : `completion report NOT saved — ${saved.code}: ${saved.message}`;
    isError = !saved.ok;
  } catch (error) {
    startTool(state, toolCallId, 'set_completion', fields);
    output = `completion report NOT saved — ${errorMessage(error)}`;
    isError = true;
  }
  endTool(state, toolCallId, 'set_completion', output, isError);
  if (isError) state.emit({ type: 'agent-log', level: 'warn', message: output });
}

/**
 * Issue 11 (h11e's open finding): Claude Code reads its user settings (`--setting-sources user`:
 * `$CLAUDE_CONFIG_DIR/settings.json`, else `~/.claude/settings.json`) again while it runs. In the agent's private
 * HOME, writable in the sandbox, a Bash call could add an allow rule (`permissions.allow`) or a PreToolUse hook of its
 * own answering "allow", then kill polywave's gate hook: the next call ran without the gate (measured with the real
 * CLI — of the files in that HOME only this one is read for permissions or hooks). So for the sandboxed `cli:claude`
 * that file exists before the start (`{}` when absent) and is bound read-only (`readOnlyWithin`), and its directory is
 * a mount point of its own (`writable`: Claude Code writes its transcripts there) so that it cannot be renamed away
 * and made again. Returns the plan to use; throws when the file cannot be prepared (the caller fails the run).
 */
export function withClaudeSettingsReadOnly(plan: SandboxPlan, env: Readonly<Record<string, string | undefined>>): SandboxPlan {
  const home = env.HOME;
  const configured = env.CLAUDE_CONFIG_DIR?.trim();
  const configDir = configured ? path.resolve(configured) : home ? path.join(home, '.claude') : undefined;
  if (configDir === undefined) return plan;
  // (outside every writable path the whole directory is read-only in the sandbox already)
  const within = (entry: string) => configDir === entry || configDir.startsWith(`${entry.replace(/\/+$/, '')}/`);
  if (!plan.writable.some(within)) return plan;
  mkdirSync(configDir, { recursive: true });
  if (!lstatSync(configDir).isDirectory()) throw new Error(`${configDir} is not a directory`);
  const settings = path.join(configDir, 'settings.json');
  if (!existsSync(settings)) writeFileSync(settings, '{}\n', { flag: 'wx', mode: 0o644 });
  if (!lstatSync(settings).isFile()) throw new Error(`${settings} is not a regular file`);
  return {
    ...plan,
    writable: plan.writable.includes(configDir) ? plan.writable : [...plan.writable, configDir],
    readOnlyWithin: plan.readOnlyWithin.includes(settings) ? plan.readOnlyWithin : [...plan.readOnlyWithin, settings],
  };
}

/**
 * Issue 11 (h11h): codex reads `$CODEX_HOME/config.toml` (else `~/.codex/config.toml`) when it starts. In the agent's
 * private HOME, writable in the sandbox, a call could write `shell_environment_policy` there — `include_only` without
 * BASH_ENV, or `set.POSIXLY_CORRECT` (a bash in POSIX mode reads no BASH_ENV), neither undone by polywave's `-c`
 * overrides (tables merge) — and the next launch (a relaunch, a retry) would run every command without the gate's run
 * guard. So for the sandboxed `cli:codex` that file exists before the start (empty when absent) and is bound
 * read-only, and its directory (where codex keeps sessions and shell snapshots) is a mount point of its own, so it
 * cannot be renamed away and made again. Returns the plan to use; throws when the file cannot be prepared.
 */
export function withCodexConfigReadOnly(plan: SandboxPlan, env: Readonly<Record<string, string | undefined>>): SandboxPlan {
  const configured = env.CODEX_HOME?.trim();
  const home = configured ? path.resolve(configured) : env.HOME ? path.join(env.HOME, '.codex') : undefined;
  if (home === undefined) return plan;
  const within = (entry: string) => home === entry || home.startsWith(`${entry.replace(/\/+$/, '')}/`);
  if (!plan.writable.some(within)) return plan;
  mkdirSync(home, { recursive: true });
  if (!lstatSync(home).isDirectory()) throw new Error(`${home} is not a directory`);
  const config = path.join(home, 'config.toml');
  if (!existsSync(config)) writeFileSync(config, '', { flag: 'wx', mode: 0o644 });
  if (!lstatSync(config).isFile()) throw new Error(`${config} is not a regular file`);
  return {
    ...plan,
    writable: plan.writable.includes(home) ? plan.writable : [...plan.writable, home],
    readOnlyWithin: plan.readOnlyWithin.includes(config) ? plan.readOnlyWithin : [...plan.readOnlyWithin, config],
  };
}

/** Creates the `cli` backend. */
export function createCliBackend(options: CliBackendOptions = {}): AgentBackend {
  const templates = options.templates ?? {};
  return {
    specVersion: agentSpecVersion,
    name: 'cli',
    run: (request) => runCli(request, templates),
  };
}

async function runCli(request: AgentRunRequest, templates: Readonly<Record<string, CliTemplate>>): Promise<AgentOutcome> {
  const started = Date.now();
  const model = request.model;
  if (model.backend !== 'cli') return failedOutcome(started, 'config', `the cli backend cannot run model "${model.raw}" (backend ${model.backend})`);
  const custom = Object.hasOwn(templates, model.command) ? templates[model.command] : undefined;
  const plan = request.sandbox;
  const builtin = model.command === 'claude' || model.command === 'codex' ? (plan ? sandboxedCliTemplates : builtinCliTemplates)[model.command] : undefined;
  const template = custom ?? builtin;
  if (!template) {
    const known = ['claude', 'codex', ...Object.keys(templates).filter((name) => name !== 'claude' && name !== 'codex')];
    return failedOutcome(started, 'config', `unknown agent CLI "${model.command}" in model "${model.raw}": use ${known.join(', ')} or define it under agent_clis in the repository root's polywave.config.json and commit it (an uncommitted or nested config's agent_clis is not used)`);
  }
  if (!Array.isArray(template.command) || template.command.length === 0 || typeof template.command[0] !== 'string' || template.command[0] === '') {
    return failedOutcome(started, 'config', `agent CLI template "${model.command}": command must be a non-empty argv array`);
  }
  if (request.signal.aborted) return { status: abortOutcomeStatus(request.signal), text: '', turns: 0, usage: emptyUsage(), durationMs: Date.now() - started, denials: [] };

  // The binary: the env override for built-ins, else command[0] on PATH (or a path relative to the worktree).
  const overrideVar = !custom ? binaryEnvVars[model.command] : undefined;
  const override = overrideVar ? request.env[overrideVar]?.trim() : undefined;
  const wanted = override || template.command[0]!;
  const binary = findBinary(wanted, request.cwd, request.env.PATH ?? process.env.PATH);
  if (!binary) {
    const how = overrideVar ? ` (set ${overrideVar} to its path, or put "${template.command[0]}" on PATH)` : ' (install it or fix agent_clis in polywave.config.json)';
    return failedOutcome(started, 'config', `agent CLI "${wanted}" for model "${model.raw}" is not installed or not found on PATH${override ? ` (${overrideVar}=${override})` : ''}${how}`);
  }

  // Sandboxed: where the report goes (the manifest is outside the sandbox) and the endpoints the CLI may reach.
  const reportFile = plan && request.reportCompletion ? path.join(request.env.TMPDIR ?? path.join(request.scratchDir, 'tmp'), `polywave-report-${request.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${request.attempt}.json`) : undefined;
  const endpoints = plan && !custom ? modelEndpoints(model.command, request.env) : [];
  let sandboxPlan: SandboxPlan | undefined = plan ? { ...plan, allowedHosts: [...new Set([...plan.allowedHosts, ...endpoints])] } : undefined;
  if (sandboxPlan && !custom && model.command === 'claude') {
    try {
      sandboxPlan = withClaudeSettingsReadOnly(sandboxPlan, request.env);
    } catch (error) {
      return failedOutcome(started, 'config', `cannot make Claude Code's user settings read-only in the agent's sandbox: ${errorMessage(error)}`);
    }
  }
  if (sandboxPlan && !custom && model.command === 'codex') {
    try {
      sandboxPlan = withCodexConfigReadOnly(sandboxPlan, request.env);
    } catch (error) {
      return failedOutcome(started, 'config', `cannot make codex's config.toml read-only in the agent's sandbox: ${errorMessage(error)}`);
    }
  }
  const basePrompt = request.systemPrompt.trim() === '' ? request.prompt : `${request.systemPrompt}\n\n${request.prompt}`;
  const fullPrompt = sandboxPlan ? `${basePrompt}\n\n${sandboxInstructions(request, sandboxPlan, reportFile)}` : basePrompt;
  const usesPromptFile = template.promptVia === 'file' || template.command.some((arg) => arg.includes('{prompt_file}'));
  let promptFile: string | undefined;
  if (usesPromptFile) {
    try {
      mkdirSync(request.scratchDir, { recursive: true });
      promptFile = path.join(request.scratchDir, `prompt-${request.agentId}-${request.attempt}.md`);
      writeFileSync(promptFile, fullPrompt);
    } catch (error) {
      return failedOutcome(started, 'config', `cannot write the prompt file in ${request.scratchDir}: ${errorMessage(error)}`);
    }
  }
  const values: Placeholders = {
    prompt: fullPrompt,
    model: model.modelId,
    max_turns: String(request.limits.maxTurns),
    cwd: request.cwd,
    prompt_file: promptFile,
  };
  const args = expandTemplateArgs(template.command.slice(1), values);
  if (template.promptVia === 'argument' && !template.command.some((arg) => arg.includes('{prompt}'))) args.push(fullPrompt);
  if (template.promptVia === 'file' && !template.command.some((arg) => arg.includes('{prompt_file}'))) args.push(promptFile!);

  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(request.env)) {
    // (never the dispatch key — src/dispatch/auth.ts: whoever holds it can sign jobs and results — nor where it is)
    if (value !== undefined && key !== 'CLAUDECODE' && key !== 'POLYWAVE_DISPATCH_KEY' && key !== 'POLYWAVE_DISPATCH_KEY_FILE') env[key] = value;
  }
  if (plan && !custom) Object.assign(env, sandboxedTemplateEnv[model.command]);
  if (reportFile) {
    env[reportFileVariable] = reportFile;
    rmSync(reportFile, { force: true });
  }

  // The command to spawn: the CLI itself, or the sandbox around it.
  let spawnFile = binary;
  let spawnArgs = args;
  let spawnEnv = env;
  let releaseSandbox = () => {};
  let sandboxedCommand = '';
  let ranNothing = (_output: string): string | undefined => undefined;
  /** The CLI wrapped for the sandbox (spawnFile and the rest set); a failed outcome when the sandbox cannot start. */
  const wrapCli = async (plan_: SandboxPlan, fresh: boolean): Promise<AgentOutcome | undefined> => {
    try {
      const wrapped = await wrapInSandbox(plan_, sandboxedCommand, { cwd: request.cwd, env, signal: request.signal, fresh });
      spawnFile = wrapped.file;
      spawnArgs = wrapped.args;
      spawnEnv = wrapped.env;
      releaseSandbox = wrapped.release;
      ranNothing = wrapped.ranNothing;
      return undefined;
    } catch (error) {
      const code = asString(asRecord(error)?.code);
      return failedOutcome(started, 'config', `${code ? `${code}: ` : ''}cannot start agent CLI ${model.command} in the OS sandbox: ${errorMessage(error)}`);
    }
  };
  // X39-10/11: the CLI runs in ONE sandbox for its whole run, whose mounts are bound at its start. Before each tool
  // call, the CLI's own PreToolUse hook passes polywave's gate (sandbox/tool-gate.ts): the appeared-since-start check,
  // run here, outside. When something appeared that this sandbox does not hide, the call never runs: the CLI is
  // killed and the run ends as a transient failure, relaunched (E19) in a new sandbox whose plan hides it.
  let gate: ToolGate | undefined;
  let viewCheck: StaleViewCheck | undefined;
  let staleView: string | undefined;
  let killForStale: (() => void) | undefined;
  const onStale = (reason: string): void => {
    if (staleView !== undefined) return;
    staleView = reason;
    state.emit({ type: 'agent-log', level: 'warn', message: `${staleViewCode}: ${reason}; the agent CLI is stopped, to be relaunched in a new sandbox` });
    killForStale?.();
  };
  const closeGate = () => {
    gate?.close();
    viewCheck?.close();
  };
  if (sandboxPlan) {
    const noProxy = noProxyFor(endpoints);
    // Issue 11 (h11b): every sandboxed CLI gets the stale-view check, a custom `agent_clis` template too — it runs every
    // staleCheckIntervalMs below and stops the CLI when its view went stale. Only the built-in claude and codex also
    // get the gate before each tool call (their hook mechanisms are known; a custom CLI's are not).
    try {
      viewCheck = createStaleViewCheck(sandboxPlan, request.cwd, { identities: true });
    } catch (error) {
      closeGate();
      return failedOutcome(started, 'config', `${staleViewCode}: cannot start the check of what appears after the agent CLI's sandbox started: ${errorMessage(error)}`);
    }
    if (!custom && (model.command === 'claude' || model.command === 'codex')) {
      try {
        const check = viewCheck;
        gate = openToolGate(() => check.check(), onStale);
      } catch (error) {
        closeGate();
        return failedOutcome(started, 'config', `${staleViewCode}: cannot open the sandbox gate the agent CLI's tool calls pass: ${errorMessage(error)}`);
      }
      const hook = { type: 'command', command: shellWord(gate.hook), timeout: gateTimeoutSeconds + 30 };
      if (model.command === 'claude') {
        // Issue 11 (h11c/h11e): a hook that dies — killed by a job an earlier call left behind, or never started — is no
        // refusal to Claude Code (a non-blocking error: the call runs), and under bypassPermissions the call then ran
        // unchecked. The gate's pass is now Claude Code's permission itself: the hook answers `permissionDecision: allow`
        // after a clean check, and the CLI runs in `dontAsk`, where a call nobody allowed is refused — fail closed.
        const mode = args.indexOf('--permission-mode');
        if (mode >= 0 && args[mode + 1] === 'bypassPermissions') args[mode + 1] = 'dontAsk';
        args.push('--settings', JSON.stringify({ hooks: { PreToolUse: [{ matcher: '*', hooks: [{ ...hook, command: `${hook.command} --allow-json` }] }] } }));
      }
      // codex: the hook as a config override (a TOML value); its hooks otherwise run only once trusted by hash in
      // config.toml, so this invocation runs them without (the agent's own hooks, if it wrote any, run inside the sandbox too).
      // Issue 11 (h11h): codex runs a call whose hook died (no setting changes that, and `codex exec` forces the approval
      // policy to never): the hook's pass (`--codex`) is bound to the call's id, and every command's bash sources the
      // gate's run guard first (BASH_ENV), which runs the command only when its hook passed it — fail closed. Calls that
      // run no bash (an apply_patch codex applies itself, `/bin/sh` without login) are watched in the JSON stream below.
      else {
        // (a bash in POSIX mode reads no BASH_ENV: not from the orchestrator's environment either)
        for (const name of ['POSIXLY_CORRECT', 'POSIX_PEDANTIC', 'SHELLOPTS']) delete env[name];
        args.splice(
          1,
          0,
          '--dangerously-bypass-hook-trust',
          '-c',
          `hooks.PreToolUse=[{matcher="*",hooks=[{type="command",command=${JSON.stringify(`${hook.command} --codex`)},timeout=${hook.timeout}}]}]`,
          ...Object.entries(gate.codexShellEnv).flatMap(([name, value]) => ['-c', `shell_environment_policy.set.${name}=${JSON.stringify(value)}`]),
        );
      }
    }
    sandboxedCommand = `export NO_PROXY=${shellWord(noProxy)} no_proxy=${shellWord(noProxy)}; exec ${[binary, ...args].map(shellWord).join(' ')}`;
    const refused = await wrapCli(sandboxPlan, false);
    if (refused) {
      closeGate();
      return refused;
    }
    request.onEvent({ type: 'agent-log', level: 'info', message: `agent CLI ${model.command} runs in the OS sandbox (writable: ${sandboxPlan.writable.join(', ')}; network: ${sandboxPlan.allowedHosts.join(', ') || 'none'})` });
  } else {
    request.onEvent({ type: 'agent-log', level: 'warn', message: `agent CLI ${model.command} runs WITHOUT the OS sandbox: only the post-hoc ownership audit confines it` });
  }

  const denials: ToolDenial[] = [];
  const state: ParseState = {
    request,
    emit: (event) => {
      try {
        request.onEvent(event);
      } catch {
        // a listener's failure must not break the run
      }
    },
    text: '',
    turns: 0,
    usage: emptyUsage(),
    maxTurnsHit: false,
    sawResult: false,
    openToolCalls: new Map(),
    messageUsage: new Map(),
    anonymousCalls: 0,
    ...(plan ? { sandboxDenials: denials } : {}),
  };
  // Issue 11 (h11h): a codex call that starts no bash (an apply_patch codex applies itself, an MCP call, a command in
  // another shell without login) is not covered by the run guard, and codex runs it when its hook died. Each such call
  // must find a hook pass no shell used: the gate's passes minus the shells that ran. One that does not started
  // without the gate — the CLI is stopped at once and the run fails (detection: the call may have begun). And each
  // command a bash ran must have asked the gate from that bash (the guard's run or refusal), else the guard is not in
  // codex's command environment at all (a config failure: every call would run unguarded).
  let gateBypass: { kind: AgentFailureKind; message: string } | undefined;
  if (gate && model.command === 'codex') {
    const codexGate = gate;
    const seen = new Set<string>();
    const guardedDone = new Set<string>();
    let shellless = 0;
    const bypassed = (kind: AgentFailureKind, tool: string, message: string): void => {
      gateBypass = { kind, message };
      denials.push({ tool, code: gateBypassCode, reason: message });
      state.emit({ type: 'agent-log', level: 'warn', message: `${gateBypassCode}: ${message}; the agent CLI is stopped` });
      killForStale?.();
    };
    state.codexToolSeen = (itemId, itemType, item, completed) => {
      if (gateBypass !== undefined || staleView !== undefined) return;
      const command = asString(item.command);
      if (itemType === 'command_execution' && command !== undefined && codexCommandRunsGuard(command)) {
        // A bash ran it: its run guard asked the gate first (a run or a refusal). A command that ran without asking ran
        // in a bash that did not source the guard — a shell_environment_policy in codex's config (an include_only
        // without BASH_ENV, POSIXLY_CORRECT, SHELLOPTS with posix): every call would run unguarded.
        if (!completed || guardedDone.has(itemId) || typeof item.exit_code !== 'number' || item.exit_code < 0 || item.status === 'declined') return;
        guardedDone.add(itemId);
        const { runs, refused } = codexGate.stats();
        if (guardedDone.size > runs + refused) {
          bypassed('config', 'bash', `a command ran in a bash that did not ask the sandbox gate (${cut(command, 200)}): codex's shell_environment_policy keeps BASH_ENV (the gate's run guard) from its commands, or puts bash in POSIX mode — check include_only, set and the environment (POSIXLY_CORRECT, SHELLOPTS)`);
        }
        return;
      }
      if (seen.has(itemId)) return;
      seen.add(itemId);
      shellless += 1;
      const { hookPasses, runs } = codexGate.stats();
      if (shellless <= hookPasses - runs) return;
      const what = itemType === 'file_change' ? 'a file change codex applies itself (apply_patch)' : itemType === 'mcp_tool_call' ? 'an MCP tool call' : `a command in a shell that is not bash (${cut(command ?? '?', 200)})`;
      bypassed('fatal', itemType === 'file_change' ? 'apply_patch' : itemType === 'mcp_tool_call' ? 'mcp' : 'bash', `${what} started without a pass from the sandbox gate (its PreToolUse hook died, or was killed)`);
    };
  }
  const textLines: string[] = [];
  let textBytes = 0;

  const handleLine = (line: string) => {
    if (template.format === 'text') {
      if (textBytes < maxTextBytes) {
        textLines.push(line);
        textBytes += Buffer.byteLength(line) + 1;
      }
      if (line.trim() !== '') state.emit({ type: 'agent-text', text: line });
      return;
    }
    const trimmed = line.trim();
    if (trimmed === '') return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      state.emit({ type: 'agent-log', level: 'info', message: cut(trimmed, 2_000) });
      return;
    }
    const event = asRecord(parsed);
    if (!event) return;
    try {
      if (template.format === 'claude-stream-json') handleClaudeLine(state, event);
      else handleCodexLine(state, event);
    } catch (error) {
      state.emit({ type: 'agent-log', level: 'warn', message: `could not interpret a ${template.format} line: ${errorMessage(error)}` });
    }
  };

  const runOnce = () => new Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: Error; stderr: string; sawOutput: boolean }>((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(spawnFile, spawnArgs, { cwd: request.cwd, env: spawnEnv, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (error) {
      resolve({ code: null, signal: null, spawnError: error instanceof Error ? error : new Error(String(error)), stderr: '', sawOutput: false });
      return;
    }
    let stderr = '';
    let sawOutput = false;
    let pending = '';
    let dropping = false;
    let killTimer: NodeJS.Timeout | undefined;
    let spawnError: Error | undefined;

    const onAbort = () => {
      killGroup(child, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(child, 'SIGKILL'), killGraceMs);
      killTimer.unref();
    };
    request.signal.addEventListener('abort', onAbort, { once: true });
    // the stale view: at once (the CLI is waiting on its hook, the call has not run)
    killForStale = () => killGroup(child, 'SIGKILL');
    if (staleView !== undefined) killForStale();
    // Between the gate's checks too, every staleCheckIntervalMs: a hook the agent's own processes killed lets its call
    // run without the gate's answer (a hook that dies is not a refusal to the CLI), and a path that appears during a
    // long call is seen while it runs — the CLI is stopped within that interval (a bound, not a guarantee: X39-01).
    const watch = viewCheck
      ? setInterval(() => {
          const stale = viewCheck?.check();
          if (stale !== undefined) onStale(stale);
        }, staleCheckIntervalMs)
      : undefined;
    watch?.unref();

    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
      sawOutput = true;
      pending += chunk;
      let newline = pending.indexOf('\n');
      while (newline >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (dropping) dropping = false;
        else handleLine(line.replace(/\r$/, ''));
        newline = pending.indexOf('\n');
      }
      if (pending.length > maxLineBytes) {
        state.emit({ type: 'agent-log', level: 'warn', message: `dropped an output line longer than ${maxLineBytes} bytes` });
        pending = '';
        dropping = true;
      }
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr += chunk;
      if (stderr.length > stderrTailBytes * 2) stderr = stderr.slice(-stderrTailBytes);
    });
    child.stdin!.on('error', () => {
      // the CLI may exit without reading its stdin (EPIPE); its exit status tells the story
    });
    if (template.promptVia === 'stdin') child.stdin!.end(fullPrompt);
    else child.stdin!.end();

    child.on('error', (error) => {
      spawnError = error;
      if (child.pid === undefined) finish(null, null);
    });
    // A23-54: the CLI's group also ends with this process, SIGKILLed or not (a killed worker left it running).
    const releaseGroup = killWithThisProcess(child.pid);
    child.on('exit', () => {
      // Leftovers of the agent's process group (background servers, sleeping children) go with it,
      // which also releases stdout pipes they may hold.
      killGroup(child, 'SIGKILL');
      releaseGroup();
      // A descendant that left the group (setsid) may still hold the pipes: stop waiting for them.
      const closeTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, 5_000);
      closeTimer.unref();
      child.once('close', () => clearTimeout(closeTimer));
    });
    let finished = false;
    function finish(code: number | null, signal: NodeJS.Signals | null) {
      if (finished) return;
      finished = true;
      if (watch) clearInterval(watch);
      if (killTimer) clearTimeout(killTimer);
      request.signal.removeEventListener('abort', onAbort);
      if (!dropping && pending !== '') handleLine(pending.replace(/\r$/, ''));
      resolve({ code, signal, ...(spawnError ? { spawnError } : {}), stderr: stderr.slice(-stderrTailBytes), sawOutput });
    }
    child.on('close', (code, signal) => finish(code, signal));
  });

  let exit = await runOnce();
  // bubblewrap stopped, before the CLI started, on a mount point that vanished after the wrap (a hidden directory
  // deleted meanwhile): started again with a fresh wrap, which leaves out what is gone.
  for (let attempt = 2; sandboxPlan && attempt <= vanishedMountAttempts && exit.code === 1 && !exit.sawOutput && ranNothing(exit.stderr) !== undefined; attempt += 1) {
    releaseSandbox();
    const refused = await wrapCli(sandboxPlan, true);
    if (refused) {
      closeGate();
      return refused;
    }
    exit = await runOnce();
  }

  releaseSandbox();
  closeGate();
  if (gate) {
    // (codex: a call its hook passed is checked again in its shell — one call, two checks)
    const { passed, checkMs, runs, refused } = gate.stats();
    const codex = model.command === 'codex' ? `; ${runs} run in a shell after a second check, ${refused} refused for want of a pass` : '';
    state.emit({ type: 'agent-log', level: 'info', message: `sandbox gate: ${passed - runs} tool calls checked (${checkMs.toFixed(1)} ms of checks in all${codex})` });
  }
  // Tool calls the CLI never closed (killed mid-call) are journaled as errors.
  for (const [toolCallId, open] of [...state.openToolCalls]) endTool(state, toolCallId, open.tool, '(no result: the agent CLI stopped)', true);
  if (state.streamError === undefined && state.pendingError !== undefined) state.streamError = state.pendingError;

  if (exit.spawnError && exit.code === null && exit.signal === null) {
    const code = (exit.spawnError as NodeJS.ErrnoException).code;
    const kind: AgentFailureKind = code === 'ENOENT' || code === 'EACCES' ? 'config' : classifyProviderError(exit.spawnError.message);
    return failedOutcome(started, kind, `could not start agent CLI ${binary}: ${exit.spawnError.message}`, { denials });
  }

  if (template.format === 'text') {
    state.text = textLines.join('\n').trim();
    state.turns = Math.max(state.turns, 1);
    state.emit({ type: 'turn-end', turn: state.turns, usage: state.usage });
  }

  let status: AgentOutcomeStatus = 'finished';
  let failure: AgentOutcome['failure'];
  if (request.signal.aborted) {
    status = abortOutcomeStatus(request.signal);
  } else if (staleView !== undefined) {
    status = 'failed';
    failure = { kind: 'transient', message: `${staleViewCode}: ${staleView} — the agent CLI was stopped (before its next tool call, or during a call); a relaunch gets a sandbox that hides it` };
  } else if (gateBypass !== undefined) {
    status = 'failed';
    failure = { kind: gateBypass.kind, message: `${gateBypassCode}: ${gateBypass.message} — the agent CLI was stopped; nothing of the run is committed` };
  } else if (state.maxTurnsHit) {
    status = 'max-turns';
  } else if (exit.code !== 0) {
    const how = exit.code === null ? `was killed by ${exit.signal ?? 'a signal'}` : `exited with status ${exit.code}`;
    const detail = [state.streamError, exit.stderr.trim()].filter((part) => part && part.trim() !== '').join('\n');
    status = 'failed';
    failure = { kind: classifyProviderError(detail || how), message: `agent CLI ${model.command} ${how}${detail ? `: ${cut(detail, 4_000)}` : ''}` };
  } else if (state.streamError !== undefined) {
    status = 'failed';
    failure = { kind: classifyProviderError(state.streamError), message: `agent CLI ${model.command}: ${cut(state.streamError, 4_000)}` };
  } else if (template.format === 'claude-stream-json' && !state.sawResult) {
    state.emit({ type: 'agent-log', level: 'warn', message: 'claude exited without a result event' });
  }

  // POST-HOC AUDIT: the CLI ran its own tools, so ownership is checked on disk and in git afterwards.
  let auditClean = false;
  try {
    const audit = await request.jail.audit({ baseCommit: request.baseCommit });
    auditClean = audit.ok && audit.violations.length === 0;
    if (!auditClean) {
      for (const violation of audit.violations) {
        denials.push({ tool: 'audit', code: violation.code, reason: violation.reason, ...(violation.path !== undefined ? { target: violation.path } : {}) });
      }
      const reasons = audit.violations.map((violation) => violation.reason);
      const message = `ownership violation: ${reasons.length > 0 ? reasons.join('; ') : 'the worktree audit failed'}`;
      state.emit({ type: 'agent-log', level: 'warn', message });
      status = 'failed';
      failure = { kind: 'fatal', message };
    }
  } catch (error) {
    const message = `ownership audit could not run: ${errorMessage(error)}`;
    state.emit({ type: 'agent-log', level: 'warn', message });
    status = 'failed';
    failure = { kind: 'fatal', message };
  }

  // Sandboxed: the agent could not write .git, so its owned work is committed here — only after a
  // clean audit (unowned changes fail the agent above and nothing of it is committed).
  if (sandboxPlan && auditClean && !request.signal.aborted && staleView === undefined && gateBypass === undefined) {
    const report = reportFile ? readReportFile(state, reportFile) : undefined;
    const committed = await commitAgentWork(request, state, model.command, typeof report?.commit_message === 'string' ? report.commit_message : undefined);
    if (!committed.ok) {
      if (committed.denial) denials.push(committed.denial);
      status = 'failed';
      failure = { kind: 'fatal', message: committed.message };
    } else if (report && request.reportCompletion) {
      await fileReport(request, state, report);
    }
  }

  const structured = request.outputSchema && status === 'finished' ? parseStructured(state.text) : undefined;
  return {
    status,
    ...(failure ? { failure } : {}),
    text: state.text,
    ...(structured !== undefined ? { structured } : {}),
    turns: state.turns,
    usage: state.usage,
    ...(state.sessionId !== undefined ? { sessionId: state.sessionId } : {}),
    durationMs: Date.now() - started,
    denials,
  };
}
