import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { APICallError } from 'ai';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { createTestRepo, type TestRepo } from '../../../test/support/git-repo.js';
import { defaultAgentLimits, type AgentEvent, type AgentRunRequest, type ModelSpec } from '../contract.js';
import { createJail } from '../jail/jail.js';
import { parseModelSpec } from '../model-spec.js';
import { createAiSdkBackend, finalAnswerToolName, parseContentModeToolCall } from './ai-sdk.js';

const branch = 'polywave/demo/wave1-agent-A';

interface Fixture {
  repo: TestRepo;
  worktree: string;
  base: string;
}

async function fixture(): Promise<Fixture> {
  const repo = await createTestRepo({ files: { 'src/shared.ts': 'export const shared = 0;\n' } });
  const base = (await repo.run(['rev-parse', 'HEAD'])).trim();
  const worktree = repo.sibling('wt-A');
  await repo.git.worktreeAdd({ path: worktree, branch, base: 'HEAD', createBranch: true });
  return { repo, worktree, base };
}

interface Run {
  request: AgentRunRequest;
  events: AgentEvent[];
  reports: Array<Record<string, unknown>>;
  journal: { uses: Array<{ toolCallId: string; tool: string; input: Record<string, unknown> }>; results: Array<{ toolCallId: string; tool: string; isError: boolean; output: string }> };
}

async function makeRun(
  f: Fixture,
  options: { model?: ModelSpec; maxTurns?: number; signal?: AbortSignal; env?: Record<string, string>; report?: boolean; outputSchema?: Record<string, unknown> } = {},
): Promise<Run> {
  const events: AgentEvent[] = [];
  const reports: Array<Record<string, unknown>> = [];
  const journal: Run['journal'] = { uses: [], results: [] };
  const jail = await createJail({ root: f.worktree, ownedFiles: ['src/a.ts'], branch });
  const scratch = f.repo.sibling('scratch-A');
  mkdirSync(scratch, { recursive: true });
  return {
    events,
    reports,
    journal,
    request: {
      agentId: 'A',
      role: 'wave',
      wave: 1,
      attempt: 1,
      model: options.model ?? parseModelSpec('anthropic:claude-sonnet-4-5')!,
      systemPrompt: 'You are agent A.',
      prompt: 'Implement src/a.ts, commit, report.',
      cwd: f.worktree,
      branch,
      baseCommit: f.base,
      jail,
      limits: { ...defaultAgentLimits, maxTurns: options.maxTurns ?? defaultAgentLimits.maxTurns },
      env: { ...f.repo.env, ...options.env },
      scratchDir: scratch,
      signal: options.signal ?? new AbortController().signal,
      onEvent: (event) => events.push(event),
      recorder: {
        recordToolUse: (entry) => journal.uses.push(entry),
        recordToolResult: (entry) => journal.results.push(entry),
      },
      ...(options.report === false
        ? {}
        : {
            reportCompletion: async (report: Record<string, unknown>) => {
              reports.push(report);
              return { ok: true as const, status: String(report.status) };
            },
          }),
      ...(options.outputSchema ? { outputSchema: options.outputSchema } : {}),
    },
  };
}

// ---- scripted mock model ----------------------------------------------------------------------

// The provider spec types, derived from the mock (`@ai-sdk/provider` is not a direct dependency).
type LanguageModelV3CallOptions = Parameters<MockLanguageModelV3['doGenerate']>[0];
type LanguageModelV3GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
type LanguageModelV3Prompt = LanguageModelV3CallOptions['prompt'];

const usage = (input: number, output: number, cacheRead = 0, cacheWrite = 0): LanguageModelV3GenerateResult['usage'] => ({
  inputTokens: { total: input + cacheRead + cacheWrite, noCache: input, cacheRead, cacheWrite },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

let callCounter = 0;
function callTool(toolName: string, input: Record<string, unknown> | string, text?: string): LanguageModelV3GenerateResult {
  return {
    content: [
      ...(text ? [{ type: 'text' as const, text }] : []),
      { type: 'tool-call', toolCallId: `call-${++callCounter}`, toolName, input: typeof input === 'string' ? input : JSON.stringify(input) },
    ],
    finishReason: { unified: 'tool-calls', raw: 'tool_use' },
    usage: usage(100, 20, 50, 10),
    warnings: [],
  };
}

function say(text: string, finish: 'stop' | 'length' = 'stop'): LanguageModelV3GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: { unified: finish, raw: finish === 'stop' ? 'end_turn' : 'max_tokens' }, usage: usage(100, 20, 50, 10), warnings: [] };
}

type Step = (call: LanguageModelV3CallOptions) => LanguageModelV3GenerateResult | Promise<LanguageModelV3GenerateResult>;

/** A mock model answering call i with steps[i] (a result, or a function of the call's prompt). */
function scripted(steps: Array<LanguageModelV3GenerateResult | Step>): MockLanguageModelV3 {
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

/** The tool results the prompt of a call carries, in order. */
function toolResultsOf(prompt: LanguageModelV3Prompt): Array<{ toolName: string; text: string }> {
  const results: Array<{ toolName: string; text: string }> = [];
  for (const message of prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) {
      if (part.type !== 'tool-result') continue;
      const output = part.output;
      results.push({ toolName: part.toolName, text: output.type === 'text' || output.type === 'error-text' ? output.value : JSON.stringify(output) });
    }
  }
  return results;
}

const toolNamesOf = (call: LanguageModelV3CallOptions | undefined) => (call?.tools ?? []).map((tool) => tool.name).sort();

// ---- tests ------------------------------------------------------------------------------------

describe('ai-sdk backend (MockLanguageModelV3, real worktree, real tools and jail)', () => {
  it('reads, writes, runs bash, commits and reports; events, usage, turns and the journal add up', async () => {
    const f = await fixture();
    const run = await makeRun(f);
    const model = scripted([
      callTool('read_file', { path: 'README.md' }, 'Reading the brief first.'),
      (call) => {
        expect(toolResultsOf(call.prompt).at(-1)?.text).toContain('# test repository');
        return callTool('write_file', { path: 'src/a.ts', content: 'export const a = 42;\n' });
      },
      callTool('bash', { command: 'cat src/a.ts' }),
      (call) => {
        expect(toolResultsOf(call.prompt).at(-1)?.text).toContain('export const a = 42;');
        return callTool('git_commit', { message: 'feat(A): add a' });
      },
      async () => {
        const commit = (await f.repo.run(['rev-parse', branch])).trim();
        return callTool('set_completion', { status: 'complete', commit, branch, worktree: f.worktree, files_created: ['src/a.ts'], files_changed: [], verification: 'PASS', notes: 'done' });
      },
      say('All done: src/a.ts exports a = 42.'),
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);

    expect(outcome.failure).toBeUndefined();
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(6);
    expect(outcome.text).toBe('All done: src/a.ts exports a = 42.');
    expect(outcome.denials).toEqual([]);
    expect(outcome.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(model.doGenerateCalls).toHaveLength(6);

    // File system and git: the file is on the agent branch, committed.
    expect(readFileSync(path.join(f.worktree, 'src/a.ts'), 'utf8')).toBe('export const a = 42;\n');
    const head = (await f.repo.run(['rev-parse', branch])).trim();
    expect(head).not.toBe(f.base);
    expect((await f.repo.run(['log', '-1', '--format=%s', branch])).trim()).toBe('feat(A): add a');
    expect((await f.repo.run(['show', `${branch}:src/a.ts`])).trim()).toBe('export const a = 42;');
    expect((await f.repo.run(['status', '--porcelain'])).trim()).toBe(''); // main checkout untouched
    expect(existsSync(f.repo.path('src/a.ts'))).toBe(false);

    // The report went through reportCompletion with the model's fields.
    expect(run.reports).toHaveLength(1);
    expect(run.reports[0]).toMatchObject({ status: 'complete', commit: head, files_created: ['src/a.ts'], verification: 'PASS' });

    // Usage: six steps of 100 uncached + 50 cache read + 10 cache write in, 20 out; priced as Sonnet.
    expect(outcome.usage).toMatchObject({ inputTokens: 600, outputTokens: 120, cacheReadTokens: 300, cacheWriteTokens: 60 });
    expect(outcome.usage.costUsd).toBeCloseTo((600 * 3 + 120 * 15 + 300 * 0.3 + 60 * 3.75) / 1_000_000, 9);

    // Events: text, one turn-end per step with running totals, tool start/end pairs from the tools.
    const turnEnds = run.events.filter((event) => event.type === 'turn-end');
    expect(turnEnds.map((event) => event.turn)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(turnEnds.map((event) => event.usage.inputTokens)).toEqual([100, 200, 300, 400, 500, 600]);
    expect(run.events.filter((event) => event.type === 'agent-text').map((event) => event.text)).toEqual(['Reading the brief first.', 'All done: src/a.ts exports a = 42.']);
    const starts = run.events.filter((event) => event.type === 'tool-call-start');
    const ends = run.events.filter((event) => event.type === 'tool-call-end');
    expect(starts.map((event) => event.tool)).toEqual(['read_file', 'write_file', 'bash', 'git_commit', 'set_completion']);
    expect(ends.map((event) => event.isError)).toEqual([false, false, false, false, false]);
    expect(starts.map((event) => event.toolCallId)).toEqual(ends.map((event) => event.toolCallId));

    // The journal saw every call with the model's tool-call ids.
    expect(run.journal.uses.map((entry) => entry.tool)).toEqual(['read_file', 'write_file', 'bash', 'git_commit', 'set_completion']);
    expect(run.journal.uses[1]).toMatchObject({ tool: 'write_file', input: { path: 'src/a.ts' } });
    expect(run.journal.results.map((entry) => entry.toolCallId)).toEqual(run.journal.uses.map((entry) => entry.toolCallId));
    expect(run.journal.uses.every((entry) => /^call-\d+$/.test(entry.toolCallId))).toBe(true);

    // The model was given the prompts and the tools (set_completion included: the role reports).
    const first = model.doGenerateCalls[0]!;
    expect(first.prompt[0]).toMatchObject({ role: 'system', content: 'You are agent A.' });
    expect(first.prompt[1]).toMatchObject({ role: 'user' });
    expect(toolNamesOf(first)).toContain('set_completion');
    expect(toolNamesOf(first)).toEqual(expect.arrayContaining(['bash', 'edit_file', 'git_commit', 'read_file', 'write_file']));
    expect(toolNamesOf(first)).not.toContain(finalAnswerToolName);
    const writeTool = first.tools?.find((tool) => tool.name === 'write_file');
    expect(writeTool).toMatchObject({ type: 'function', inputSchema: { type: 'object' } });
  });

  it('a write outside ownership comes back to the model as an error result; the file is not created', async () => {
    const f = await fixture();
    const run = await makeRun(f);
    let seen = '';
    const model = scripted([
      callTool('write_file', { path: 'src/b.ts', content: 'export const b = 1;\n' }),
      (call) => {
        seen = toolResultsOf(call.prompt).at(-1)?.text ?? '';
        return say('I may not write src/b.ts.');
      },
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);

    expect(outcome.status).toBe('finished');
    expect(seen).toMatch(/^ERROR: /);
    expect(seen).toContain('src/b.ts');
    expect(existsSync(path.join(f.worktree, 'src/b.ts'))).toBe(false);
    expect(outcome.denials).toHaveLength(1);
    expect(outcome.denials[0]).toMatchObject({ tool: 'write_file', code: 'JAIL_NOT_OWNED' });
    expect(run.events.some((event) => event.type === 'tool-call-deny' && event.denial.code === 'JAIL_NOT_OWNED')).toBe(true);
    expect(run.journal.results).toEqual([expect.objectContaining({ tool: 'write_file', isError: true })]);
  });

  it('unknown tools and unparsable input are answered with an error, journaled, and the loop goes on', async () => {
    const f = await fixture();
    const run = await makeRun(f);
    let seen: Array<{ toolName: string; text: string }> = [];
    const model = scripted([
      callTool('delete_everything', { path: '.' }),
      callTool('bash', '{"command": '),
      (call) => {
        seen = toolResultsOf(call.prompt);
        return say('giving up');
      },
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(3);
    expect(seen.map((result) => result.toolName)).toEqual(['delete_everything', 'bash']);
    expect(seen[0]!.text).toContain('delete_everything');
    expect(run.journal.uses.map((entry) => entry.tool)).toEqual(['delete_everything', 'bash']);
    expect(run.journal.results.every((entry) => entry.isError && entry.output.startsWith('invalid tool call:'))).toBe(true);
    expect(run.events.filter((event) => event.type === 'agent-log' && event.level === 'warn')).toHaveLength(2);
  });

  it('set_completion is offered only when the run can report', async () => {
    const f = await fixture();
    const run = await makeRun(f, { report: false });
    const model = scripted([say('nothing to do')]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(toolNamesOf(model.doGenerateCalls[0])).not.toContain('set_completion');
    expect(toolNamesOf(model.doGenerateCalls[0])).toContain('read_file');
  });

  it('abort through the signal ends the run as aborted', async () => {
    const f = await fixture();
    const controller = new AbortController();
    const run = await makeRun(f, { signal: controller.signal });
    const model = scripted([
      callTool('read_file', { path: 'README.md' }),
      (call) =>
        new Promise<LanguageModelV3GenerateResult>((_resolve, reject) => {
          // A slow model call: the runner aborts while it is in flight.
          call.abortSignal?.addEventListener('abort', () => reject(call.abortSignal?.reason ?? new Error('aborted')), { once: true });
          setTimeout(() => controller.abort(new Error('agent timeout')), 10);
        }),
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('aborted');
    expect(outcome.failure).toBeUndefined();
    expect(outcome.turns).toBe(1);
  });

  it('an already aborted signal does not call the model', async () => {
    const f = await fixture();
    const controller = new AbortController();
    controller.abort();
    const run = await makeRun(f, { signal: controller.signal });
    const model = scripted([]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('aborted');
    expect(model.doGenerateCalls).toHaveLength(0);
  });

  it('stops at maxTurns while the model still calls tools → max-turns', async () => {
    const f = await fixture();
    const run = await makeRun(f, { maxTurns: 3 });
    const model = scripted(Array.from({ length: 5 }, () => callTool('list_dir', { path: '.' })));
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('max-turns');
    expect(outcome.turns).toBe(3);
    expect(model.doGenerateCalls).toHaveLength(3);
    expect(run.journal.uses).toHaveLength(3);
  });

  it('a 429 from the provider → failed, transient (no retries with POLYWAVE_AI_MAX_RETRIES=0)', async () => {
    const f = await fixture();
    const run = await makeRun(f, { env: { POLYWAVE_AI_MAX_RETRIES: '0' } });
    const model = scripted([
      () => {
        throw new APICallError({ message: 'Too Many Requests', url: 'https://api.example.invalid/v1/messages', requestBodyValues: {}, statusCode: 429, isRetryable: true });
      },
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('transient');
    expect(outcome.failure?.message).toContain('429');
    expect(model.doGenerateCalls).toHaveLength(1);
    expect(outcome.turns).toBe(0);
  });

  it('a 401 → failed, config; a 400 → failed, fatal', async () => {
    const f = await fixture();
    for (const [statusCode, kind] of [
      [401, 'config'],
      [400, 'fatal'],
    ] as const) {
      const run = await makeRun(f);
      const model = scripted([
        () => {
          throw new APICallError({ message: statusCode === 401 ? 'invalid x-api-key' : 'bad request', url: 'https://api.example.invalid', requestBodyValues: {}, statusCode, isRetryable: false });
        },
      ]);
      const outcome = await createAiSdkBackend({ languageModel: () => model, maxRetries: 0 }).run(run.request);
      expect(outcome.status).toBe('failed');
      expect(outcome.failure?.kind).toBe(kind);
    }
  });

  it('structured output: final_answer carries the schema, ends the loop and fills structured + text', async () => {
    const f = await fixture();
    const outputSchema = { type: 'object', properties: { verdict: { type: 'string', enum: ['PASS', 'ISSUES'] }, issues: { type: 'array', items: { type: 'string' } } }, required: ['verdict'], additionalProperties: false };
    const run = await makeRun(f, { outputSchema, report: false });
    const model = scripted([
      callTool('read_file', { path: 'README.md' }),
      callTool(finalAnswerToolName, { verdict: 'PASS', issues: [] }),
      say('never reached'),
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.structured).toEqual({ verdict: 'PASS', issues: [] });
    expect(JSON.parse(outcome.text)).toEqual({ verdict: 'PASS', issues: [] });
    expect(outcome.turns).toBe(2);
    expect(model.doGenerateCalls).toHaveLength(2);
    const finalTool = model.doGenerateCalls[0]!.tools?.find((tool) => tool.name === finalAnswerToolName);
    expect(finalTool).toMatchObject({ type: 'function', inputSchema: { type: 'object', required: ['verdict'] } });
  });

  it('structured output: a model that ends with prose is asked once more with toolChoice forced to final_answer', async () => {
    const f = await fixture();
    const run = await makeRun(f, { outputSchema: { type: 'object', properties: { verdict: { type: 'string' } } }, report: false });
    const model = scripted([say('The wave looks fine.'), callTool(finalAnswerToolName, { verdict: 'PASS' })]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.structured).toEqual({ verdict: 'PASS' });
    expect(outcome.turns).toBe(2);
    expect(model.doGenerateCalls[0]!.toolChoice).toEqual({ type: 'auto' });
    expect(model.doGenerateCalls[1]!.toolChoice).toEqual({ type: 'tool', toolName: finalAnswerToolName });
  });

  it('structured output: a JSON object as the final text is accepted as the answer', async () => {
    const f = await fixture();
    const run = await makeRun(f, { outputSchema: { type: 'object' }, report: false });
    const model = scripted([say('```json\n{"verdict": "ISSUES", "issues": ["x"]}\n```')]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.structured).toEqual({ verdict: 'ISSUES', issues: ['x'] });
    expect(outcome.turns).toBe(1);
  });

  it('content-mode fallback: a tool call written as JSON text is executed and its result fed back', async () => {
    const f = await fixture();
    const run = await makeRun(f);
    let fedBack: unknown;
    const model = scripted([
      say('{"name": "write_file", "arguments": {"path": "src/a.ts", "content": "export const a = 7;\\n"}}'),
      (call) => {
        fedBack = call.prompt.at(-1);
        return say('{"name": "bash", "parameters": "{\\"command\\": \\"cat src/a.ts\\"}"}');
      },
      (call) => {
        fedBack = call.prompt.at(-1);
        return say('Wrote src/a.ts.');
      },
    ]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(3);
    expect(outcome.text).toBe('Wrote src/a.ts.');
    expect(readFileSync(path.join(f.worktree, 'src/a.ts'), 'utf8')).toBe('export const a = 7;\n');
    expect(fedBack).toMatchObject({ role: 'user', content: [{ type: 'text', text: expect.stringMatching(/^Function result: [\s\S]*export const a = 7;/) }] });
    expect(run.journal.uses.map((entry) => entry.tool)).toEqual(['write_file', 'bash']);
    expect(run.events.some((event) => event.type === 'agent-log' && event.message.includes('content-mode'))).toBe(true);
  });

  it('content-mode calls count as turns: the limit still holds', async () => {
    const f = await fixture();
    const run = await makeRun(f, { maxTurns: 2 });
    const model = scripted(Array.from({ length: 4 }, () => say('{"name": "list_dir", "arguments": {"path": "."}}')));
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('max-turns');
    expect(outcome.turns).toBe(2);
    expect(model.doGenerateCalls).toHaveLength(2);
  });

  it('a reply cut by the output-token limit is continued', async () => {
    const f = await fixture();
    const run = await makeRun(f);
    const model = scripted([say('Part one', 'length'), say('and part two.')]);
    const outcome = await createAiSdkBackend({ languageModel: () => model }).run(run.request);
    expect(outcome.status).toBe('finished');
    expect(outcome.turns).toBe(2);
    expect(outcome.text).toBe('and part two.');
    expect(model.doGenerateCalls[1]!.prompt.at(-1)).toMatchObject({ role: 'user', content: [{ type: 'text', text: 'Continue from where you left off.' }] });
  });

  it('a missing API key is a config failure naming the variable (request.env, not process.env)', async () => {
    const f = await fixture();
    for (const [model, variable] of [
      ['anthropic:claude-sonnet-4-5', 'ANTHROPIC_API_KEY'],
      ['openai:gpt-4o', 'OPENAI_API_KEY'],
    ] as const) {
      const run = await makeRun(f, { model: parseModelSpec(model)! });
      const env: Record<string, string | undefined> = { ...run.request.env };
      delete env.ANTHROPIC_API_KEY;
      delete env.ANTHROPIC_AUTH_TOKEN;
      delete env.OPENAI_API_KEY;
      const outcome = await createAiSdkBackend().run({ ...run.request, env });
      expect(outcome.status).toBe('failed');
      expect(outcome.failure?.kind).toBe('config');
      expect(outcome.failure?.message).toContain(variable);
    }
  });

  it('anthropic: key and ANTHROPIC_BASE_URL (Claude Code style, without /v1) come from request.env; a 529 is transient', async () => {
    const f = await fixture();
    const run = await makeRun(f, { env: { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: 'http://gateway.invalid:8080', POLYWAVE_AI_MAX_RETRIES: '0' } });
    const seen: Array<{ url: string; key: string | null; body: Record<string, unknown> }> = [];
    const fakeFetch: typeof fetch = async (input, init) => {
      seen.push({ url: String(input), key: new Headers(init?.headers).get('x-api-key'), body: JSON.parse(String(init?.body)) as Record<string, unknown> });
      return new Response(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }), { status: 529, headers: { 'content-type': 'application/json' } });
    };
    const outcome = await createAiSdkBackend({ fetch: fakeFetch }).run(run.request);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ url: 'http://gateway.invalid:8080/v1/messages', key: 'sk-ant-test', body: { model: 'claude-sonnet-4-5', system: [{ type: 'text', text: 'You are agent A.' }] } });
    expect((seen[0]!.body.tools as Array<{ name: string }>).map((tool) => tool.name)).toContain('write_file');
    expect(outcome.status).toBe('failed');
    expect(outcome.failure?.kind).toBe('transient');
  });

  it('refuses a model of another backend', async () => {
    const f = await fixture();
    const run = await makeRun(f, { model: { backend: 'claude-code', raw: 'claude-code:' } });
    const outcome = await createAiSdkBackend().run(run.request);
    expect(outcome).toMatchObject({ status: 'failed', failure: { kind: 'config' } });
  });
});

describe('parseContentModeToolCall', () => {
  const names = new Set(['bash', 'write_file']);
  it('accepts {name, arguments|parameters} naming a known tool, optionally fenced, arguments as object or JSON text', () => {
    expect(parseContentModeToolCall('{"name":"bash","arguments":{"command":"ls"}}', names)).toEqual({ name: 'bash', input: { command: 'ls' } });
    expect(parseContentModeToolCall(' ```json\n{"name":"bash","parameters":{"command":"ls"}}\n``` ', names)).toEqual({ name: 'bash', input: { command: 'ls' } });
    expect(parseContentModeToolCall('{"name":"bash","arguments":"{\\"command\\":\\"ls\\"}"}', names)).toEqual({ name: 'bash', input: { command: 'ls' } });
  });
  it('ignores prose, unknown tools and malformed arguments', () => {
    expect(parseContentModeToolCall('I will run {"name":"bash"}', names)).toBeUndefined();
    expect(parseContentModeToolCall('{"name":"rm_rf","arguments":{}}', names)).toBeUndefined();
    expect(parseContentModeToolCall('{"name":"bash","arguments":[1]}', names)).toBeUndefined();
    expect(parseContentModeToolCall('{"verdict":"PASS"}', names)).toBeUndefined();
  });
});
