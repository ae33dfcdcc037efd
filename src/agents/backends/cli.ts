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
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants as fsConstants, mkdirSync, statSync, writeFileSync } from 'node:fs';
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

/** The built-in templates (`cli:claude`, `cli:codex`). */
export const builtinCliTemplates: Readonly<Record<'claude' | 'codex', Readonly<CliTemplate>>> = Object.freeze({
  claude: Object.freeze({
    command: ['claude', '-p', '--output-format', 'stream-json', '--verbose', '--model', '{model}', '--max-turns', '{max_turns}', '--permission-mode', 'acceptEdits'],
    promptVia: 'stdin',
    format: 'claude-stream-json',
  }),
  codex: Object.freeze({
    // --full-auto: codex exec is read-only by default; the agent must write its files and commit
    // (the worktree's git directory lives outside it, which codex's sandbox may still refuse —
    // then the agent reports blocked and the post-hoc audit decides as for any CLI agent).
    command: ['codex', 'exec', '--json', '--full-auto', '--model', '{model}', '-'],
    promptVia: 'stdin',
    format: 'codex-json',
  }),
});

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
  /** Set when the stream itself reported an error (result is_error, turn.failed, error). */
  streamError?: string;
  /** Claude's `error_max_turns` result. */
  maxTurnsHit: boolean;
  /** Whether a final `result` event (claude) was seen. */
  sawResult: boolean;
  openToolCalls: Map<string, { tool: string; startedAt: number }>;
  /** Claude: usage of each assistant message id (stream-json repeats a message per content block). */
  messageUsage: Map<string, AgentUsage>;
  lastMessageId?: string;
  anonymousCalls: number;
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
    state.turns += 1;
    state.usage = sumUsage([state.usage, codexUsage(event.usage)]);
    state.emit({ type: 'turn-end', turn: state.turns, usage: { ...state.usage } });
    return;
  }
  if (type === 'turn.failed' || type === 'error') {
    const message = asString(asRecord(event.error)?.message) ?? asString(event.message) ?? `codex reported ${type}`;
    state.streamError = message;
    state.emit({ type: 'agent-log', level: 'warn', message: `codex: ${message}` });
    return;
  }
  if (type !== 'item.started' && type !== 'item.updated' && type !== 'item.completed') return;
  const item = asRecord(event.item);
  if (!item) return;
  const itemType = asString(item.type);
  const toolCallId = asString(item.id) ?? `codex-${++state.anonymousCalls}`;
  const completed = type === 'item.completed';
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
  const builtin = model.command === 'claude' || model.command === 'codex' ? builtinCliTemplates[model.command] : undefined;
  const template = custom ?? builtin;
  if (!template) {
    const known = ['claude', 'codex', ...Object.keys(templates).filter((name) => name !== 'claude' && name !== 'codex')];
    return failedOutcome(started, 'config', `unknown agent CLI "${model.command}" in model "${model.raw}": use ${known.join(', ')} or define it under agent_clis in polywave.config.json`);
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

  const fullPrompt = request.systemPrompt.trim() === '' ? request.prompt : `${request.systemPrompt}\n\n${request.prompt}`;
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
    if (value !== undefined && key !== 'CLAUDECODE') env[key] = value;
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
  };
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

  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null; spawnError?: Error; stderr: string }>((resolve) => {
    let child: ChildProcess;
    try {
      child = spawn(binary, args, { cwd: request.cwd, env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (error) {
      resolve({ code: null, signal: null, spawnError: error instanceof Error ? error : new Error(String(error)), stderr: '' });
      return;
    }
    let stderr = '';
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

    child.stdout!.setEncoding('utf8');
    child.stdout!.on('data', (chunk: string) => {
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
    child.on('exit', () => {
      // Leftovers of the agent's process group (background servers, sleeping children) go with it,
      // which also releases stdout pipes they may hold.
      killGroup(child, 'SIGKILL');
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
      if (killTimer) clearTimeout(killTimer);
      request.signal.removeEventListener('abort', onAbort);
      if (!dropping && pending !== '') handleLine(pending.replace(/\r$/, ''));
      resolve({ code, signal, ...(spawnError ? { spawnError } : {}), stderr: stderr.slice(-stderrTailBytes) });
    }
    child.on('close', (code, signal) => finish(code, signal));
  });

  // Tool calls the CLI never closed (killed mid-call) are journaled as errors.
  for (const [toolCallId, open] of [...state.openToolCalls]) endTool(state, toolCallId, open.tool, '(no result: the agent CLI stopped)', true);

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
  try {
    const audit = await request.jail.audit({ baseCommit: request.baseCommit });
    if (!audit.ok || audit.violations.length > 0) {
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
