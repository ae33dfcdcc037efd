import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createAiSdkBackend } from '../src/agents/backends/ai-sdk.js';
import { defaultAgentLimits, type AgentEvent, type AgentRunRequest, type ModelSpec } from '../src/agents/contract.js';
import { createJail } from '../src/agents/jail/jail.js';
import { parseModelSpec } from '../src/agents/model-spec.js';
import { createTestRepo, type TestRepo } from './support/git-repo.js';
import { lastMessage, messageText, startOpenAiLoopback, toolResults, type LoopbackScript, type OpenAiLoopback } from './support/openai-loopback.js';

/*
 * The ai-sdk backend through the REAL provider HTTP path (@ai-sdk/openai-compatible,
 * @ai-sdk/openai) against a loopback chat-completions server: tool definitions out, tool calls
 * in, tool results (role "tool") back, usage from the response — offline and deterministic.
 */

const branch = 'polywave/demo/wave1-agent-A';
const servers: OpenAiLoopback[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function loopback(script: LoopbackScript): Promise<OpenAiLoopback> {
  const server = await startOpenAiLoopback(script);
  servers.push(server);
  return server;
}

interface Fixture {
  repo: TestRepo;
  worktree: string;
}

async function fixture(): Promise<Fixture> {
  const repo = await createTestRepo({ files: { 'src/a.ts': 'export const a = 1;\n' } });
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch, base: 'HEAD', createBranch: true });
  return { repo, worktree };
}

async function request(f: Fixture, model: ModelSpec, env: Record<string, string> = {}): Promise<{ request: AgentRunRequest; events: AgentEvent[]; reports: Array<Record<string, unknown>> }> {
  const events: AgentEvent[] = [];
  const reports: Array<Record<string, unknown>> = [];
  const scratch = f.repo.sibling('scratch-A');
  mkdirSync(scratch, { recursive: true });
  const baseEnv: Record<string, string | undefined> = { ...f.repo.env };
  // Never let a developer's real keys or endpoints reach the test.
  for (const name of ['OPENAI_API_KEY', 'OPENAI_BASE_URL', 'ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL', 'ANTHROPIC_AUTH_TOKEN', 'POLYWAVE_AI_MAX_RETRIES']) delete baseEnv[name];
  return {
    events,
    reports,
    request: {
      agentId: 'A',
      role: 'wave',
      wave: 1,
      attempt: 1,
      model,
      systemPrompt: 'You are wave agent A.',
      prompt: 'Edit src/a.ts, check it, commit, report.',
      cwd: f.worktree,
      branch,
      jail: await createJail({ root: f.worktree, ownedFiles: ['src/a.ts'], branch }),
      limits: { ...defaultAgentLimits, maxTurns: 10 },
      env: { ...baseEnv, ...env },
      scratchDir: scratch,
      signal: new AbortController().signal,
      onEvent: (event) => events.push(event),
      reportCompletion: async (report) => {
        reports.push(report);
        return { ok: true, status: String(report.status) };
      },
    },
  };
}

/** Picks the next action from how many tool results the conversation already holds. */
function agentScript(f: Fixture): LoopbackScript {
  return async (body) => {
    const done = toolResults(body).length;
    const usage = { promptTokens: 200, completionTokens: 30, cachedTokens: 50 };
    switch (done) {
      case 0:
        return { toolCalls: [{ name: 'edit_file', arguments: { path: 'src/a.ts', old_string: 'a = 1', new_string: 'a = 2' } }], text: 'Editing.', usage };
      case 1:
        return { toolCalls: [{ name: 'bash', arguments: { command: 'cat src/a.ts' } }], usage };
      case 2:
        return { toolCalls: [{ name: 'git_commit', arguments: { message: 'feat(A): a = 2' } }], usage };
      case 3: {
        const commit = (await f.repo.run(['rev-parse', branch])).trim();
        return { toolCalls: [{ name: 'set_completion', arguments: { status: 'complete', commit, branch, files_changed: ['src/a.ts'], files_created: [], verification: 'PASS' } }], usage };
      }
      default:
        return { text: 'Finished: a = 2, committed and reported.', usage };
    }
  };
}

describe('ai-sdk backend over HTTP (loopback OpenAI chat-completions server)', () => {
  it('openai-compatible: edits, runs bash, commits and reports; the requests carry tools and tool results', async () => {
    const f = await fixture();
    const server = await loopback(agentScript(f));
    const run = await request(f, parseModelSpec(`openai-compatible:${server.baseURL}#test-model`)!);
    const outcome = await createAiSdkBackend().run(run.request);

    expect(outcome.failure).toBeUndefined();
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(5);
    expect(outcome.text).toBe('Finished: a = 2, committed and reported.');
    expect(server.requests).toHaveLength(5);

    // File system and git.
    expect(readFileSync(path.join(f.worktree, 'src/a.ts'), 'utf8')).toBe('export const a = 2;\n');
    const head = (await f.repo.run(['rev-parse', branch])).trim();
    expect((await f.repo.run(['log', '-1', '--format=%s', branch])).trim()).toBe('feat(A): a = 2');
    expect(f.repo.read('src/a.ts')).toBe('export const a = 1;\n'); // main checkout untouched
    expect(run.reports).toEqual([expect.objectContaining({ status: 'complete', commit: head, files_changed: ['src/a.ts'] })]);

    // Requests: the model id, the system prompt, the tool definitions with JSON schemas.
    const first = server.requests[0]!;
    expect(first.model).toBe('test-model');
    expect(first.messages[0]).toMatchObject({ role: 'system', content: 'You are wave agent A.' });
    expect(messageText(first.messages[1])).toBe('Edit src/a.ts, check it, commit, report.');
    const toolNames = (first.tools ?? []).map((tool) => tool.function.name);
    expect(toolNames).toEqual(expect.arrayContaining(['read_file', 'write_file', 'edit_file', 'bash', 'git_commit', 'set_completion']));
    const edit = first.tools?.find((tool) => tool.function.name === 'edit_file');
    expect(edit?.function.parameters).toMatchObject({ type: 'object', properties: { path: expect.any(Object) } });

    // Tool results come back as role "tool" messages answering the assistant's tool_calls.
    const second = server.requests[1]!;
    const assistant = second.messages.find((message) => message.role === 'assistant');
    const toolMessage = lastMessage(second);
    expect(toolMessage?.role).toBe('tool');
    expect(toolMessage?.tool_call_id).toBe(assistant?.tool_calls?.[0]?.id);
    const third = server.requests[2]!;
    expect(messageText(lastMessage(third))).toContain('export const a = 2;'); // bash output
    expect(toolResults(server.requests[4]!)).toHaveLength(4);

    // Usage from each response: 200 prompt (50 cached) + 30 completion, five times; local → cost 0.
    expect(outcome.usage).toEqual({ inputTokens: 5 * 150, outputTokens: 5 * 30, cacheReadTokens: 5 * 50, cacheWriteTokens: 0, costUsd: 0 });
    expect(run.events.filter((event) => event.type === 'tool-call-end').map((event) => event.tool)).toEqual(['edit_file', 'bash', 'git_commit', 'set_completion']);
  });

  it('ollama: with the base URL pointed at the loopback, the same path works', async () => {
    const f = await fixture();
    const server = await loopback((body) => (toolResults(body).length === 0 ? { toolCalls: [{ name: 'read_file', arguments: { path: 'src/a.ts' } }] } : { text: 'read it' }));
    const spec = parseModelSpec('ollama:qwen2.5-coder:32b')!;
    const run = await request(f, { ...spec, baseURL: server.baseURL } as ModelSpec);
    const outcome = await createAiSdkBackend().run(run.request);
    expect(outcome.status).toBe('finished');
    expect(server.requests[0]!.model).toBe('qwen2.5-coder:32b');
    expect(server.headers[0]!.authorization).toBe('Bearer none'); // no OPENAI_API_KEY in the request env
    expect(messageText(lastMessage(server.requests[1]!))).toContain('export const a = 1;');
    expect(outcome.usage.costUsd).toBe(0);
  });

  // Outside attack A17-29: the OpenAI key went to whatever listened on the local ports (any user's process on a shared host).
  it.each([
    ['ollama:qwen', 'OLLAMA_API_KEY'],
    ['lmstudio:qwen', 'LMSTUDIO_API_KEY'],
  ])('%s never sends OPENAI_API_KEY to the local server; its own key variable when set', async (model, ownKey) => {
    const f = await fixture();
    const server = await loopback(() => ({ text: 'done' }));
    const spec = { ...parseModelSpec(model)!, baseURL: server.baseURL } as ModelSpec;
    const run = await request(f, spec, { OPENAI_API_KEY: 'sk-openai-secret' });
    expect((await createAiSdkBackend().run(run.request)).status).toBe('finished');
    expect(server.headers[0]!.authorization).toBe('Bearer none');
    const own = await request(f, spec, { OPENAI_API_KEY: 'sk-openai-secret', [ownKey]: 'local-key' });
    expect((await createAiSdkBackend().run(own.request)).status).toBe('finished');
    expect(server.headers.at(-1)!.authorization).toBe('Bearer local-key');
    expect(JSON.stringify(server.headers)).not.toContain('sk-openai-secret');
  });

  it('openai: OPENAI_BASE_URL and OPENAI_API_KEY from the request env; the key is sent, cost is priced', async () => {
    const f = await fixture();
    const server = await loopback(() => ({ text: 'hello', usage: { promptTokens: 1000, completionTokens: 100 } }));
    const run = await request(f, parseModelSpec('openai:gpt-4o')!, { OPENAI_BASE_URL: server.baseURL, OPENAI_API_KEY: 'sk-test-loopback' });
    const outcome = await createAiSdkBackend().run(run.request);
    expect(outcome.failure).toBeUndefined();
    expect(outcome.text).toBe('hello');
    expect(server.requests[0]!.model).toBe('gpt-4o');
    expect(server.headers[0]!.authorization).toBe('Bearer sk-test-loopback');
    expect(outcome.usage.costUsd).toBeCloseTo((1000 * 2.5 + 100 * 10) / 1_000_000, 9);
  });

  it('a content-mode tool call from a local model goes over HTTP as a "Function result:" user message', async () => {
    const f = await fixture();
    const server = await loopback((body) =>
      messageText(lastMessage(body)).startsWith('Function result:') ? { text: 'done' } : { text: '{"name": "bash", "arguments": {"command": "cat src/a.ts"}}' },
    );
    const run = await request(f, parseModelSpec(`openai-compatible:${server.baseURL}#qwen`)!);
    const outcome = await createAiSdkBackend().run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(2);
    expect(messageText(lastMessage(server.requests[1]!))).toMatch(/^Function result: [\s\S]*export const a = 1;/);
  });

  it('a 429 → failed, transient, without retries (POLYWAVE_AI_MAX_RETRIES=0)', async () => {
    const f = await fixture();
    const server = await loopback(() => ({ status: 429, body: { error: { message: 'Rate limit reached for requests', type: 'rate_limit_error' } } }));
    const run = await request(f, parseModelSpec(`openai-compatible:${server.baseURL}#test-model`)!, { POLYWAVE_AI_MAX_RETRIES: '0' });
    const outcome = await createAiSdkBackend().run(run.request);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('transient');
    expect(outcome.failure?.message).toMatch(/429/);
    expect(server.requests).toHaveLength(1);
    expect(outcome.turns).toBe(0);
    expect(existsSync(path.join(f.worktree, 'src/a.ts'))).toBe(true);
  });

  it('the maxRetries backend option retries a 429 inside the SDK', async () => {
    const f = await fixture();
    const server = await loopback((_body, index) => (index === 0 ? { status: 429, headers: { 'retry-after-ms': '1' } } : { text: 'ok after retry' }));
    const run = await request(f, parseModelSpec(`openai-compatible:${server.baseURL}#test-model`)!);
    const outcome = await createAiSdkBackend({ maxRetries: 1 }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.text).toBe('ok after retry');
    expect(server.requests).toHaveLength(2);
  });

  it('the loopback also streams SSE (tool_calls deltas, finish_reason, usage chunk, [DONE])', async () => {
    const { streamText, jsonSchema } = await import('ai');
    const { createOpenAICompatible } = await import('@ai-sdk/openai-compatible');
    const server = await loopback((body) =>
      toolResults(body).length === 0 ? { toolCalls: [{ name: 'echo', arguments: { word: 'hi' } }], text: 'Calling echo. ' } : { text: 'echoed hi', usage: { promptTokens: 7, completionTokens: 3 } },
    );
    const model = createOpenAICompatible({ name: 'loopback', baseURL: server.baseURL, apiKey: 'none', includeUsage: true }).chatModel('m');
    const { stepCountIs } = await import('ai');
    const result = streamText({
      model,
      prompt: 'say hi',
      tools: { echo: { inputSchema: jsonSchema<{ word: string }>({ type: 'object', properties: { word: { type: 'string' } }, required: ['word'] }), execute: async ({ word }: { word: string }) => word } },
      stopWhen: stepCountIs(3),
      maxRetries: 0,
    });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.join('')).toBe('Calling echo. echoed hi');
    expect(deltas.length).toBeGreaterThan(2);
    const steps = await result.steps;
    expect(steps).toHaveLength(2);
    expect(steps[0]!.toolCalls[0]).toMatchObject({ toolName: 'echo', input: { word: 'hi' } });
    expect(steps[1]!.usage).toMatchObject({ inputTokens: 7, outputTokens: 3 });
    expect(server.requests.every((body) => body.stream === true && body.stream_options?.include_usage === true)).toBe(true);
  });
});
