/**
 * The agent tool set and `runToolCall`, the one path every tool call of our own tool loops takes:
 * input validation, journal (E23A), events, denials, duration, output limit.
 */
import { z } from 'zod';
import type { AgentEvent, AgentRunRequest, ToolDenial } from '../contract.js';
import { withoutCredentials } from '../credentials.js';
import { bashTool } from './bash-tool.js';
import { editFileTool, listDirTool, readFileTool, writeFileTool } from './file-tools.js';
import { gitCommitTool, setCompletionTool } from './report-tools.js';
import { globTool, grepTool } from './search-tools.js';
import { errorMessage } from './shared.js';
import type { AgentTool, AgentToolName, ToolCallObserver, ToolContext, ToolResult } from './types.js';

export type { AgentTool, AgentToolName, ToolCallObserver, ToolContext, ToolResult } from './types.js';

/** Every tool in a fixed order. */
export const allAgentTools: readonly AgentTool[] = Object.freeze([readFileTool, writeFileTool, editFileTool, listDirTool, globTool, grepTool, bashTool, gitCommitTool, setCompletionTool]);

/** The tools an agent gets: all by default, or only `include` (in the fixed order). */
export function createAgentTools(options: { include?: AgentToolName[] } = {}): AgentTool[] {
  const include = options.include;
  return allAgentTools.filter((tool) => include === undefined || include.includes(tool.name));
}

/** Cuts `text` to `maxBytes` (UTF-8) keeping its head and tail, and says how much was cut. */
export function truncateOutput(text: string, maxBytes: number): string {
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return text;
  const buffer = Buffer.from(text);
  const budget = Math.max(0, maxBytes - 120);
  const headBytes = Math.floor(budget * 0.4);
  const tailBytes = budget - headBytes;
  const head = buffer.subarray(0, headBytes).toString('utf8').replace(/\uFFFD+$/, '');
  const tail = buffer.subarray(bytes - tailBytes).toString('utf8').replace(/^\uFFFD+/, '');
  const cut = bytes - Buffer.byteLength(head) - Buffer.byteLength(tail);
  return `${head}\n[… output truncated: ${cut} of ${bytes} bytes cut (limit ${maxBytes}) …]\n${tail}`;
}

function inputRecord(rawInput: unknown): Record<string, unknown> {
  if (rawInput !== null && typeof rawInput === 'object' && !Array.isArray(rawInput)) return rawInput as Record<string, unknown>;
  return { input: rawInput };
}

function safely(action: () => void): void {
  try {
    action();
  } catch {
    // an observer must not break the tool loop
  }
}

/**
 * Runs one tool call. Never throws: invalid input and executor exceptions become error results.
 * The recorder gets the full output; the model (and the `tool-call-end` event) the output cut to
 * `context.maxToolOutputBytes`.
 */
export async function runToolCall(tool: AgentTool, rawInput: unknown, context: ToolContext, observer: ToolCallObserver, toolCallId: string): Promise<ToolResult> {
  const started = performance.now();
  const input = inputRecord(rawInput);
  safely(() => observer.onEvent?.({ type: 'tool-call-start', toolCallId, tool: tool.name, input }));
  safely(() => observer.recorder?.recordToolUse({ toolCallId, tool: tool.name, input }));

  let result: ToolResult;
  const parsed = tool.inputSchema.safeParse(rawInput);
  if (!parsed.success) {
    result = { output: `invalid input for ${tool.name}: ${z.prettifyError(parsed.error)}`, isError: true };
  } else if (context.signal.aborted) {
    result = { output: `${tool.name} was not run: the agent run was aborted.`, isError: true };
  } else {
    try {
      result = await tool.execute(parsed.data, context);
      if (typeof result?.output !== 'string') result = { output: `${tool.name} returned no output.`, isError: true };
    } catch (error) {
      result = { output: `${tool.name} failed: ${errorMessage(error)}`, isError: true };
    }
  }

  const full = result.output;
  safely(() => observer.recorder?.recordToolResult({ toolCallId, tool: tool.name, output: full, isError: result.isError }));
  if (result.denial) {
    const denial: ToolDenial = result.denial;
    safely(() => observer.denials?.push(denial));
    safely(() => observer.onEvent?.({ type: 'tool-call-deny', toolCallId, denial }));
  }
  const output = truncateOutput(full, Math.max(256, context.maxToolOutputBytes));
  const durationMs = Math.round(performance.now() - started);
  safely(() => observer.onEvent?.({ type: 'tool-call-end', toolCallId, tool: tool.name, isError: result.isError, output, durationMs }));
  return { ...result, output };
}

/**
 * The context and observer every tool call of one agent run uses (ai-sdk and script backends):
 * the request's jail, environment, signal, limits, branch, report writer and sandbox (plan and
 * tool executor); events, journal and denials go to the run. The tools get the environment without
 * its credentials (git under git_commit runs the repository's hooks): only the backend keeps them.
 */
export function toolRunContext(request: AgentRunRequest, onEvent: (event: AgentEvent) => void, denials: ToolDenial[]): { context: ToolContext; observer: ToolCallObserver } {
  const context: ToolContext = {
    jail: request.jail,
    env: withoutCredentials(request.env),
    signal: request.signal,
    toolTimeoutMs: request.limits.toolTimeoutMs,
    maxToolOutputBytes: request.limits.maxToolOutputBytes,
    ...(request.branch !== undefined ? { branch: request.branch } : {}),
    ...(request.reportCompletion ? { reportCompletion: request.reportCompletion } : {}),
    ...(request.baseCommit ? { baseCommit: request.baseCommit } : {}),
    ...(request.sandbox ? { sandbox: request.sandbox } : {}),
    ...(request.toolExecutor ? { toolExecutor: request.toolExecutor } : {}),
  };
  return { context, observer: { ...(request.recorder ? { recorder: request.recorder } : {}), onEvent, denials } };
}
