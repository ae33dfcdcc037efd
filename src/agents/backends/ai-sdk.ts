/**
 * The ai-sdk backend: one agent as a tool loop run by the Vercel AI SDK (`generateText` with
 * `stopWhen`), over Anthropic, OpenAI or any OpenAI-compatible server (Ollama, LM Studio, a
 * gateway). The tools are our own (tools/index.ts), every call goes through `runToolCall`, so
 * the jail, the journal (recorder) and the tool events are the same as for the script backend.
 *
 * Start-up cost: nothing from `ai` or a provider package is loaded until `run` is called (the CLI
 * imports backends eagerly; the SDK and its providers are several MB of JavaScript).
 */
import { randomUUID } from 'node:crypto';
import type { LanguageModel, LanguageModelUsage, ModelMessage, StepResult, Tool, ToolSet } from 'ai';
import {
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
  type ModelSpec,
  type ToolDenial,
} from '../contract.js';
import { estimateCostUsd } from '../pricing.js';
import { staleViewCode } from '../sandbox/appeared-since-start.js';
import type { AgentTool, ToolResult } from '../tools/types.js';

/** A model string that the ai-sdk backend runs. */
export type AiSdkModelSpec = Extract<ModelSpec, { backend: 'ai-sdk' }>;

export interface AiSdkBackendOptions {
  /** Builds the model instead of the provider packages (tests: `MockLanguageModelV3` from `ai/test`). */
  languageModel?: (spec: AiSdkModelSpec) => LanguageModel;
  /** fetch for the provider HTTP clients (tests, proxies). */
  fetch?: typeof fetch;
  /**
   * Retries of a failed model call inside the SDK (its default is 2, with backoff). The request's
   * `POLYWAVE_AI_MAX_RETRIES` environment variable wins over this option.
   */
  maxRetries?: number;
}

/** Name of the extra tool that carries the structured final answer when `outputSchema` is set. */
export const finalAnswerToolName = 'final_answer';

type AiModule = typeof import('ai');
type ToolsModule = typeof import('../tools/index.js');

/** The ai-sdk backend (`anthropic:…`, `openai:…`, `ollama:…`, `lmstudio:…`, `openai-compatible:<url>#…`). */
export function createAiSdkBackend(options: AiSdkBackendOptions = {}): AgentBackend {
  return {
    specVersion: agentSpecVersion,
    name: 'ai-sdk',
    run: (request) => runAgent(request, options),
  };
}

class ConfigError extends Error {}

/** Builds the provider model for a spec; throws ConfigError for a setup problem (missing key). */
async function resolveLanguageModel(spec: AiSdkModelSpec, env: AgentRunRequest['env'], options: AiSdkBackendOptions): Promise<LanguageModel> {
  if (options.languageModel) return options.languageModel(spec);
  const fetchOption = options.fetch ? { fetch: options.fetch } : {};
  switch (spec.provider) {
    case 'anthropic': {
      const apiKey = nonEmpty(env.ANTHROPIC_API_KEY);
      const authToken = nonEmpty(env.ANTHROPIC_AUTH_TOKEN);
      if (!apiKey && !authToken) throw new ConfigError(`model "${spec.raw}" needs an Anthropic API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway)`);
      const { createAnthropic } = await import('@ai-sdk/anthropic');
      const baseURL = anthropicBaseUrl(nonEmpty(env.ANTHROPIC_BASE_URL));
      const provider = createAnthropic({ ...(apiKey ? { apiKey } : { authToken }), ...(baseURL ? { baseURL } : {}), ...fetchOption });
      return provider(spec.modelId);
    }
    case 'openai': {
      const apiKey = nonEmpty(env.OPENAI_API_KEY);
      if (!apiKey) throw new ConfigError(`model "${spec.raw}" needs an OpenAI API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible gateway)`);
      const { createOpenAI } = await import('@ai-sdk/openai');
      const baseURL = nonEmpty(env.OPENAI_BASE_URL);
      const provider = createOpenAI({ apiKey, ...(baseURL ? { baseURL } : {}), ...fetchOption });
      // Chat Completions rather than the Responses API: the same wire format as every
      // OpenAI-compatible gateway OPENAI_BASE_URL may point at.
      return provider.chat(spec.modelId);
    }
    case 'ollama':
    case 'lmstudio':
    case 'openai-compatible': {
      if (!spec.baseURL) throw new ConfigError(`model "${spec.raw}" has no base URL (use openai-compatible:http://host:port/v1#model)`);
      const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
      const provider = createOpenAICompatible({
        name: spec.provider,
        baseURL: spec.baseURL,
        // A local server gets its own key or none (outside attack A17-29: every ollama:/lmstudio: agent sent the
        // OpenAI key to whatever listened on localhost:11434/1234 — on a shared host, any user's process); the
        // endpoint of openai-compatible: is the user's (and gated on workers), and gets OPENAI_API_KEY as documented.
        apiKey: (spec.provider === 'ollama' ? nonEmpty(env.OLLAMA_API_KEY) : spec.provider === 'lmstudio' ? nonEmpty(env.LMSTUDIO_API_KEY) : nonEmpty(env.OPENAI_API_KEY)) ?? 'none',
        includeUsage: true,
        ...fetchOption,
      });
      return provider.chatModel(spec.modelId);
    }
  }
}

function nonEmpty(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value.trim() : undefined;
}

/**
 * ANTHROPIC_BASE_URL is shared with Claude Code, which treats it as the API root and appends
 * `/v1/messages`; the AI SDK's `baseURL` includes `/v1`. Accept both spellings.
 */
function anthropicBaseUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const trimmed = value.replace(/\/+$/, '');
  return /\/v1$/.test(trimmed) ? trimmed : `${trimmed}/v1`;
}

function maxRetriesFor(request: AgentRunRequest, options: AiSdkBackendOptions): number | undefined {
  const fromEnv = nonEmpty(request.env.POLYWAVE_AI_MAX_RETRIES);
  if (fromEnv !== undefined && /^\d+$/.test(fromEnv)) return Number(fromEnv);
  return options.maxRetries;
}

/** Adds one step's SDK usage to our running totals (uncached input, see pricing.ts). */
function addUsage(total: AgentUsage, usage: LanguageModelUsage): void {
  const cacheRead = usage.inputTokenDetails?.cacheReadTokens ?? usage.cachedInputTokens ?? 0;
  const cacheWrite = usage.inputTokenDetails?.cacheWriteTokens ?? 0;
  const uncached = usage.inputTokenDetails?.noCacheTokens ?? Math.max(0, (usage.inputTokens ?? 0) - cacheRead - cacheWrite);
  total.inputTokens += uncached;
  total.outputTokens += usage.outputTokens ?? 0;
  total.cacheReadTokens += cacheRead;
  total.cacheWriteTokens += cacheWrite;
}

/** A readable message for a provider/transport error, with the HTTP status when there is one. */
function describeError(ai: AiModule, error: unknown): { message: string; retryable: boolean } {
  let current: unknown = error;
  if (ai.RetryError.isInstance(current) && current.lastError !== undefined) current = current.lastError;
  if (ai.APICallError.isInstance(current)) {
    const status = current.statusCode !== undefined ? `HTTP ${current.statusCode}: ` : '';
    return { message: `${status}${current.message}`, retryable: current.isRetryable };
  }
  if (current instanceof Error) {
    const cause = current.cause instanceof Error ? ` (${current.cause.message})` : '';
    return { message: `${current.message}${cause}`, retryable: false };
  }
  return { message: String(current), retryable: false };
}

/** Parses a JSON object out of a model's text (optionally inside a ```json fence). */
function parseJsonObject(text: string): Record<string, unknown> | undefined {
  let body = text.trim();
  const fence = /^```(?:json)?\s*\n([\s\S]*?)\n?```$/.exec(body);
  if (fence) body = fence[1]!.trim();
  if (!body.startsWith('{') || !body.endsWith('}')) return undefined;
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Content-mode tool call (reference/agents.md §2.3, Go's OpenAI backend): some local models
 * (Qwen on Ollama…) answer a tool call as plain text `{"name": "bash", "arguments": {…}}`
 * instead of a `tool_calls` entry. Returns the call when the text is exactly such an object
 * naming one of `toolNames`.
 */
export function parseContentModeToolCall(text: string, toolNames: ReadonlySet<string>): { name: string; input: Record<string, unknown> } | undefined {
  const object = parseJsonObject(text);
  if (!object || typeof object.name !== 'string' || !toolNames.has(object.name)) return undefined;
  let input: unknown = object.arguments ?? object.parameters ?? {};
  if (typeof input === 'string') input = parseJsonObject(input);
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return undefined;
  return { name: object.name, input: input as Record<string, unknown> };
}

async function runAgent(request: AgentRunRequest, options: AiSdkBackendOptions): Promise<AgentOutcome> {
  const started = performance.now();
  const denials: ToolDenial[] = [];
  const usage = emptyUsage();
  const sessionId = randomUUID();
  let turns = 0;
  let text = '';
  const spec = request.model;

  const emit = (event: AgentEvent) => {
    try {
      request.onEvent(event);
    } catch {
      // A failing event consumer must not end the agent; the journal still has the tool calls.
    }
  };
  const usageWithCost = (): AgentUsage => {
    const cost = spec.backend === 'ai-sdk' ? estimateCostUsd(spec.provider, spec.modelId, usage) : undefined;
    return { ...usage, ...(cost !== undefined ? { costUsd: cost } : {}) };
  };
  const outcome = (status: AgentOutcomeStatus, extra: { failure?: { kind: AgentFailureKind; message: string }; structured?: unknown } = {}): AgentOutcome => ({
    status,
    ...(extra.failure ? { failure: extra.failure } : {}),
    text: extra.structured !== undefined ? JSON.stringify(extra.structured) : text,
    ...(extra.structured !== undefined ? { structured: extra.structured } : {}),
    turns,
    usage: usageWithCost(),
    sessionId,
    durationMs: Math.round(performance.now() - started),
    denials,
  });

  if (spec.backend !== 'ai-sdk') return outcome('failed', { failure: { kind: 'config', message: `the ai-sdk backend cannot run model "${spec.raw}" (backend ${spec.backend})` } });
  if (request.signal.aborted) return outcome('aborted');

  let ai: AiModule;
  let toolsModule: ToolsModule;
  let model: LanguageModel;
  try {
    ai = await import('ai');
    toolsModule = await import('../tools/index.js');
    model = await resolveLanguageModel(spec, request.env, options);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return outcome('failed', { failure: { kind: error instanceof ConfigError ? 'config' : classifyProviderError(message), message } });
  }

  // X39-01: a command killed because the sandbox's view went stale during it ends the whole run (transient): the
  // model's loop is aborted right after that call, before the model sees anything more.
  const staleAbort = new AbortController();
  const staleView = (): string | undefined => request.toolExecutor?.staleView;
  const staleOutcome = (): AgentOutcome => {
    const why = staleView() ?? 'the sandbox view went stale';
    emit({ type: 'agent-log', level: 'warn', message: `${staleViewCode}: ${why}; ending the run so that it is relaunched in a new sandbox` });
    return outcome('failed', { failure: { kind: 'transient', message: `${staleViewCode}: ${why} — the command was killed during the call; a relaunch gets a sandbox that hides it` } });
  };
  const afterCall = (result: ToolResult): ToolResult => {
    if (staleView() !== undefined) staleAbort.abort(new Error(staleViewCode));
    return result;
  };
  const { context, observer } = toolsModule.toolRunContext(request, emit, denials);
  const agentTools: AgentTool[] = toolsModule.createAgentTools().filter((tool) => tool.name !== 'set_completion' || request.reportCompletion !== undefined);
  const toolsByName = new Map<string, AgentTool>(agentTools.map((tool) => [tool.name, tool]));
  const asModelText = (result: ToolResult) => (result.isError ? `ERROR: ${result.output}` : result.output);

  const tools: ToolSet = {};
  for (const agentTool of agentTools) {
    const sdkTool: Tool<unknown, string> = {
      description: agentTool.description,
      // The JSON Schema of the zod schema, but no validation in the SDK: runToolCall validates the
      // raw input itself, so a malformed call is journaled and answered like every other call.
      inputSchema: ai.jsonSchema(() => ai.zodSchema(agentTool.inputSchema).jsonSchema),
      execute: async (input, { toolCallId }) => asModelText(afterCall(await toolsModule.runToolCall(agentTool, input, context, observer, toolCallId))),
    };
    tools[agentTool.name] = sdkTool;
  }
  let structured: unknown;
  const wantsStructured = request.outputSchema !== undefined;
  if (request.outputSchema !== undefined) {
    const finalAnswer: Tool<unknown, string> = {
      description: 'Give your final answer as structured data. Call this exactly once, when your work is done; the run ends with it.',
      // Not validated against the schema here (no JSON Schema validator in the SDK); the caller checks the structure.
      inputSchema: ai.jsonSchema(request.outputSchema as Parameters<AiModule['jsonSchema']>[0]),
      execute: async (input) => {
        structured = input;
        return 'Final answer recorded.';
      },
    };
    tools[finalAnswerToolName] = finalAnswer;
  }

  const maxTurns = Math.max(1, Math.floor(request.limits.maxTurns));
  const maxRetries = maxRetriesFor(request, options);
  const onStepFinish = (step: StepResult<ToolSet>) => {
    turns += 1;
    addUsage(usage, step.usage);
    // Calls the SDK answered itself (unknown tool name, unparsable JSON input) never reach
    // runToolCall; journal them so the record of what the model tried stays complete.
    for (const call of step.toolCalls) {
      if (!('invalid' in call) || !call.invalid) continue;
      const input = typeof call.input === 'object' && call.input !== null && !Array.isArray(call.input) ? (call.input as Record<string, unknown>) : { input: call.input };
      const output = `invalid tool call: ${call.error instanceof Error ? call.error.message : String(call.error)}`;
      emit({ type: 'agent-log', level: 'warn', message: `${call.toolName}: ${output}` });
      try {
        request.recorder?.recordToolUse({ toolCallId: call.toolCallId, tool: call.toolName, input });
        request.recorder?.recordToolResult({ toolCallId: call.toolCallId, tool: call.toolName, output, isError: true });
      } catch {
        // the journal must not end the agent
      }
    }
    if (step.text.trim() !== '') {
      text = step.text;
      emit({ type: 'agent-text', text: step.text });
    }
    emit({ type: 'turn-end', turn: turns, usage: usageWithCost() });
  };

  // The conversation so far; continuations (below) append to it.
  const messages: ModelMessage[] = [{ role: 'user', content: request.prompt }];
  let forceFinalAnswer = false;
  let askedForFinalAnswer = false;

  /*
   * Why an outer loop around the SDK's own tool loop: the SDK ends its loop whenever a step has no
   * tool calls. Three cases still need another model call, all bounded by maxTurns in total
   * (every model call is a turn, `turns` counts them across continuations):
   *  1. content-mode tool calls of local models (the call is written as JSON text, see
   *     parseContentModeToolCall): we execute it and feed the result back as a user message
   *     "Function result: …", like the Go OpenAI backend did;
   *  2. a reply cut by the output-token limit (finish reason `length`): "Continue from where you
   *     left off." (Go's Bedrock backend);
   *  3. a structured answer was asked for but the model ended with prose: one more call with
   *     `toolChoice` forced to final_answer.
   */
  try {
    for (;;) {
      const remaining = maxTurns - turns;
      if (remaining <= 0) return outcome('max-turns');
      const result = await ai.generateText({
        model,
        system: request.systemPrompt,
        messages,
        tools,
        ...(forceFinalAnswer ? { toolChoice: { type: 'tool' as const, toolName: finalAnswerToolName } } : {}),
        stopWhen: [ai.stepCountIs(forceFinalAnswer ? 1 : remaining), ...(wantsStructured ? [ai.hasToolCall(finalAnswerToolName)] : [])],
        abortSignal: AbortSignal.any([request.signal, staleAbort.signal]),
        ...(maxRetries !== undefined ? { maxRetries } : {}),
        onStepFinish,
      });
      if (staleView() !== undefined) return staleOutcome();
      messages.push(...result.response.messages);
      forceFinalAnswer = false;
      if (structured !== undefined) return outcome('finished', { structured });
      const last = result.steps.at(-1);
      if (!last) return outcome('finished');
      // The step limit stopped a model that still wanted to use tools.
      if (last.toolCalls.length > 0) return outcome(turns >= maxTurns ? 'max-turns' : 'finished');

      const contentCall = parseContentModeToolCall(last.text, new Set([...toolsByName.keys(), ...(wantsStructured ? [finalAnswerToolName] : [])]));
      if (contentCall?.name === finalAnswerToolName) return outcome('finished', { structured: contentCall.input });
      const contentTool = contentCall ? toolsByName.get(contentCall.name) : undefined;
      if (contentCall && contentTool) {
        emit({ type: 'agent-log', level: 'info', message: `content-mode tool call: ${contentCall.name} (the model wrote the call as text)` });
        const toolResult = await toolsModule.runToolCall(contentTool, contentCall.input, context, observer, `content-${turns}`);
        if (staleView() !== undefined) return staleOutcome();
        messages.push({ role: 'user', content: `Function result: ${asModelText(toolResult)}` });
        continue;
      }
      if (last.finishReason === 'length') {
        emit({ type: 'agent-log', level: 'warn', message: 'the reply hit the output-token limit; asking the model to continue' });
        messages.push({ role: 'user', content: 'Continue from where you left off.' });
        continue;
      }
      if (wantsStructured) {
        const fromText = parseJsonObject(last.text);
        if (fromText) return outcome('finished', { structured: fromText });
        if (!askedForFinalAnswer) {
          askedForFinalAnswer = true;
          forceFinalAnswer = true;
          messages.push({ role: 'user', content: `Now call the ${finalAnswerToolName} tool with your final answer.` });
          continue;
        }
        emit({ type: 'agent-log', level: 'warn', message: `the model finished without calling ${finalAnswerToolName}: no structured output` });
      }
      return outcome('finished');
    }
  } catch (error) {
    if (request.signal.aborted) return outcome('aborted');
    if (staleView() !== undefined) return staleOutcome();
    const { message, retryable } = describeError(ai, error);
    const kind = retryable ? 'transient' : classifyProviderError(message);
    return outcome('failed', { failure: { kind, message: `${spec.provider} model ${spec.modelId}: ${message}` } });
  }
}
