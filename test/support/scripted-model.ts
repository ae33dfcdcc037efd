import { MockLanguageModelV3 } from 'ai/test';

/**
 * A scripted AI SDK mock model for role tests: each model call takes the next step (a canned
 * result, or a function of the call that may assert on the prompt and return one).
 */
export type CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
export type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
export type Step = GenerateResult | ((call: CallOptions) => GenerateResult | Promise<GenerateResult>);

/** 100 input and 20 output tokens per call. */
export const usage = (): GenerateResult['usage'] => ({
  inputTokens: { total: 100, noCache: 100, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
});

let callCounter = 0;

/** A call of tool `toolName` with `input`. */
export const callTool = (toolName: string, input: Record<string, unknown>): GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: `call-${++callCounter}`, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_use' },
  usage: usage(),
  warnings: [],
});

/** A final text answer. */
export const say = (text: string): GenerateResult => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage: usage(), warnings: [] });

/** The model that plays `steps` in order (a call beyond the script fails the agent run). */
export function scripted(steps: Step[]): MockLanguageModelV3 {
  let index = 0;
  return new MockLanguageModelV3({
    provider: 'mock',
    modelId: 'mock-model',
    doGenerate: async (call) => {
      const step = steps[index++];
      if (step === undefined) throw new Error(`the mock model was called ${index} times, the script has ${steps.length} steps`);
      return typeof step === 'function' ? step(call) : step;
    },
  });
}

/** The text of every user message of a call's prompt. */
export function userText(call: CallOptions | undefined): string {
  return (call?.prompt ?? [])
    .filter((message) => message.role === 'user')
    .flatMap((message) => (Array.isArray(message.content) ? message.content : []))
    .map((part) => (part.type === 'text' ? part.text : ''))
    .join('\n');
}
