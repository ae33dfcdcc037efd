import { readFileSync, writeFileSync } from 'node:fs';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { createAiSdkBackend } from '../src/agents/backends/ai-sdk.js';
import { estimatePlan, historyFromCostEvents } from '../src/agents/estimate.js';
import { resolveModelSpec } from '../src/agents/model-spec.js';
import { run as estimateCommand } from '../src/cli/commands/estimate.js';
import type { CommandIo } from '../src/cli/io.js';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import { createGit } from '../src/git/git-cli.js';
import { runWave } from '../src/orchestrator/run-wave.js';
import type { CostEvent } from '../src/protocol/e40.js';
import { runCli } from './support/cli.js';
import { attachRecorder } from '../src/observability/recorder.js';
import { createTestRepo } from './support/git-repo.js';
import { lettersImplYaml } from './support/letters-impl.js';

/*
 * `polywave estimate` (issue 14, "What it must show" 5): a forecast of a plan's tokens and cost
 * before it runs, checked against the actuals of a real run — two ai-sdk agents (MockLanguageModelV3,
 * known usage) on a temporary repository, whose cost events run-wave keeps in the agent journals.
 */

const modelOf: Record<string, string> = { A: 'openai:gpt-4o', B: 'openai:gpt-4o-2024-08-06' };

function implYaml(slug: string): string {
  // Each agent its own model id (both priced as gpt-4o): the mock answers per agent, whichever launches first.
  return lettersImplYaml({ title: `Estimate ${slug}`, slug, agents: ['A', 'B'], models: modelOf });
}

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
let callCounter = 0;
const usageOf = (input: number, output: number): GenerateResult['usage'] => ({ inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: output, text: output, reasoning: undefined } });
const callTool = (toolName: string, input: Record<string, unknown>, usage: GenerateResult['usage']): GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: `call-${++callCounter}`, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_use' },
  usage,
  warnings: [],
});
const say = (usage: GenerateResult['usage']): GenerateResult => ({ content: [{ type: 'text', text: 'done' }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage, warnings: [] });

function agentCalls(id: string, scale: number): GenerateResult[] {
  const file = `src/${id.toLowerCase()}.js`;
  return [
    callTool('write_file', { path: file, content: `export const ${id.toLowerCase()} = 1;\n` }, usageOf(3000 * scale, 400)),
    callTool('git_commit', { message: `feat(${id})` }, usageOf(3500 * scale, 60)),
    callTool('set_completion', { status: 'complete', verification: 'PASS', files_created: [file] }, usageOf(4000 * scale, 90)),
    say(usageOf(4100 * scale, 20)),
  ];
}

function captureIo(cwd: string, env: Record<string, string | undefined>): CommandIo & { out: string[]; err: string[] } {
  const out: string[] = [];
  const err: string[] = [];
  return { cwd, env, now: () => new Date(), stdout: (text) => out.push(text), stderr: (text) => err.push(text), readStdin: async () => '', out, err };
}

interface EstimateJson {
  method: string;
  kind: string;
  history?: { runs: number; calls: number };
  totals: { agents: number; calls: number; input_tokens: number; output_tokens: number; cost_usd: number | null };
  agents: Array<{ agent: string; input_tokens: number; cost_usd: number | null }>;
}

describe('estimate', () => {
  it('forecasts a past plan from the actuals kept in the agent journals: totals match the real run; without history the heuristic says what it assumes', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-past.yaml': implYaml('past'), 'src/index.js': 'export {};\n' } });
    const implPath = repo.path('docs/IMPL/IMPL-past.yaml');
    const scripted = (id: string, scale: number) => {
      const steps = agentCalls(id, scale);
      let index = 0;
      return new MockLanguageModelV3({ provider: 'openai', modelId: modelOf[id]!.slice('openai:'.length), doGenerate: async () => steps[index++] ?? say(usageOf(1, 1)) });
    };
    const models = { A: scripted('A', 1), B: scripted('B', 2) };
    const bus = new EventBus();
    const events: PolywaveEvent[] = [];
    bus.subscribe((event) => events.push(event));
    // The run is also recorded into a real event store (what `run-wave` does by default).
    const storePath = repo.sibling('events.db');
    const recorder = attachRecorder(bus, { storePath, command: 'run-wave', warn: (line) => { throw new Error(line); } });
    const env = { ...repo.env, OPENAI_API_KEY: 'never-sent', POLYWAVE_EVENTS_DB: storePath };
    // The plan, estimated before it runs (no history yet): the heuristic.
    const before = captureIo(repo.dir, env);
    expect(await estimateCommand([implPath], { model: 'openai:gpt-4o' }, before)).toBe(0);
    const heuristic = JSON.parse(before.out.join('')) as EstimateJson & { assumptions: string[] };
    expect(heuristic).toMatchObject({ method: 'heuristic', kind: 'impl', totals: { agents: 2, calls: 20 } });
    expect(heuristic.assumptions[0]).toMatch(/^no history: 10 model calls per agent/);
    expect(before.err.join('')).toMatch(/^estimate: 2 agent\(s\), ~20 model call\(s\), .* \(heuristic\)\n$/);

    const result = await runWave({ implPath, wave: 1, model: 'openai:gpt-4o', backend: createAiSdkBackend({ languageModel: (spec) => (spec.modelId === 'gpt-4o' ? models.A : models.B) }), unsafeNoSandbox: true, concurrency: 1, prioritize: false, env, events: bus, skipCritic: true, finalize: false, gitAt: (dir) => createGit(dir, { env: repo.env }) });
    expect(result.agents.map((agent) => agent.status)).toEqual(['complete', 'complete']);
    recorder.close();
    const actualInput = result.usage.inputTokens;
    const actualCost = result.usage.costUsd!;
    expect(actualInput).toBe(14600 * 3);

    // The same plan again, after the run: the journals hold the actuals.
    const after = captureIo(repo.dir, env);
    expect(await estimateCommand(['docs/IMPL/IMPL-past.yaml'], { model: 'openai:gpt-4o' }, after)).toBe(0);
    const fromHistory = JSON.parse(after.out.join('')) as EstimateJson;
    expect(fromHistory.method).toBe('history');
    expect(fromHistory.history).toMatchObject({ runs: 2, calls: 8 });
    // Measured against the actuals: the totals are the past run's (each agent's share follows its context).
    expect(Math.abs(fromHistory.totals.input_tokens - actualInput)).toBeLessThanOrEqual(2);
    expect(fromHistory.totals.calls).toBe(8);
    expect(fromHistory.totals.cost_usd).toBeCloseTo(actualCost, 4);
    const heuristicError = heuristic.totals.input_tokens / actualInput;
    console.log(`estimate vs actual input tokens: history ${(fromHistory.totals.input_tokens / actualInput).toFixed(3)}, heuristic ${heuristicError.toFixed(2)} (actual ${actualInput} tokens, $${actualCost})`);

    // --history with the NDJSON of a run (what `run-wave --json` prints) on a fresh repository with no journals.
    const fresh = await createTestRepo({ files: { 'docs/IMPL/IMPL-next.yaml': implYaml('next'), 'src/index.js': 'export {};\n' } });
    const ndjson = fresh.sibling('events.ndjson');
    writeFileSync(ndjson, [...events.map((event) => JSON.stringify(event)), 'not json', '{"type":"run-wave-result"}'].join('\n'));
    const withFile = captureIo(fresh.dir, env);
    expect(await estimateCommand(['docs/IMPL/IMPL-next.yaml'], { model: 'openai:gpt-4o', history: ndjson }, withFile)).toBe(0);
    const fromFile = JSON.parse(withFile.out.join('')) as EstimateJson;
    expect(fromFile).toMatchObject({ method: 'history', history: { runs: 2, calls: 8 } });
    expect(Math.abs(fromFile.totals.input_tokens - actualInput)).toBeLessThanOrEqual(2);
    // The event store alone (a fresh repository, no journals, no --history): the same history.
    const other = await createTestRepo({ files: { 'docs/IMPL/IMPL-again.yaml': implYaml('again'), 'src/index.js': 'export {};\n' } });
    const fromStoreIo = captureIo(other.dir, env);
    expect(await estimateCommand(['docs/IMPL/IMPL-again.yaml'], { model: 'openai:gpt-4o', store: storePath }, fromStoreIo)).toBe(0);
    const fromStore = JSON.parse(fromStoreIo.out.join('')) as EstimateJson & { history: { source: string } };
    expect(fromStore).toMatchObject({ method: 'history', history: { runs: 2, calls: 8 } });
    expect(fromStore.history.source).toContain('event store');
    expect(fromStore.totals.cost_usd).toBeCloseTo(actualCost, 4);
    // The original repository has both the store and the journals: each agent run is counted once.
    expect(fromHistory.history).toMatchObject({ runs: 2, calls: 8 });
    // --no-history forces the heuristic.
    const forced = captureIo(repo.dir, env);
    await estimateCommand([implPath], { model: 'openai:gpt-4o', history: false }, forced);
    expect((JSON.parse(forced.out.join('')) as EstimateJson).method).toBe('heuristic');
    expect(readFileSync(implPath, 'utf8')).toContain('feature_slug: past');
  }, 120_000);

  it('history from store-shaped cost events: one run per (slug, wave, agent, attempt); an unpriced call makes the cost unknown', () => {
    const event = (agent: string, attempt: number, input: number, cost: number | null): Partial<CostEvent> => ({ type: 'cost', slug: 's', wave: 1, agent, attempt, input_tokens: input, output_tokens: 10, cache_read_tokens: 0, cache_write_tokens: 0, cost_usd: cost });
    const history = historyFromCostEvents([event('A', 1, 100, 0.1), event('A', 1, 100, 0.1), event('A', 2, 300, 0.2), event('B', 1, 200, 0.3)] as CostEvent[])!;
    expect(history).toMatchObject({ runs: 3, calls: 4, inputTokensPerRun: 700 / 3, callsPerRun: 4 / 3 });
    expect(history.costUsdPerRun).toBeCloseTo(0.7 / 3, 10);
    expect(historyFromCostEvents([])).toBeUndefined();
    expect(historyFromCostEvents([{ ...event('A', 1, 1, null) } as CostEvent])!.costUsdPerRun).toBeNull();
    const plan = estimatePlan([{ slug: 's', wave: 1, agent: 'A', model: resolveModelSpec('unknown-provider-model', {}), promptChars: 10, ownedFiles: 0, ownedBytes: 0 }]);
    expect(plan.totals.cost_usd).toBeNull();
  });

  it('bad input from the CLI: a missing manifest or history file is one coded line, exit 2', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-x.yaml': implYaml('x'), 'notes.yaml': 'just: text\n' } });
    const env = Object.fromEntries(Object.entries(repo.env).filter((entry): entry is [string, string] => entry[1] !== undefined));
    for (const args of [['estimate', 'docs/IMPL/IMPL-missing.yaml'], ['estimate', 'docs/IMPL/IMPL-x.yaml', '--history', 'nope.ndjson'], ['estimate', 'notes.yaml'], ['estimate']]) {
      const run = await runCli(args, { cwd: repo.dir, env });
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
      expect(run.stderr).toMatch(/error\[[A-Z0-9_]+\]/);
      expect(run.stdout).toBe('');
    }
    const ok = await runCli(['estimate', 'docs/IMPL/IMPL-x.yaml', '--model', 'anthropic:claude-sonnet-4-5'], { cwd: repo.dir, env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ kind: 'impl', slug: 'x', method: 'heuristic', totals: { agents: 2 } });
  }, 60_000);
});
