import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { createAiSdkBackend } from '../src/agents/backends/ai-sdk.js';
import { pricingTableDate } from '../src/agents/pricing.js';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import { createGit } from '../src/git/git-cli.js';
import { runAutopilot } from '../src/orchestrator/autopilot.js';
import { executeProgram } from '../src/orchestrator/program-execute.js';
import { runWave } from '../src/orchestrator/run-wave.js';
import { runProgramDemo } from '../src/demo/run-program-demo.js';
import type { ActivityEvent, AgentPerformanceEvent, CostEvent } from '../src/protocol/e40.js';
import { createTestRepo } from './support/git-repo.js';
import { startOpenAiLoopback } from './support/openai-loopback.js';
import { makeTempDir } from './support/temp.js';
import { lettersImplYaml, type LettersGate } from './support/letters-impl.js';

/*
 * E40 (issue 14, "What it must show" 1): every trigger of the event table, on the real command
 * paths (run-wave, the autopilot, the PROGRAM tier loop) with script agents on temporary git
 * repositories, and `cost` events from the backends' real usage (ai-sdk with MockLanguageModelV3
 * and with the loopback OpenAI server). Assertions on the exact E40 event set of each run.
 */

const gitEnv = { GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: os.devNull };

type E40 = ActivityEvent | AgentPerformanceEvent | CostEvent;

function record(): { bus: EventBus; events: PolywaveEvent[]; e40: () => E40[]; activities: () => ActivityEvent[] } {
  const bus = new EventBus();
  const events: PolywaveEvent[] = [];
  bus.subscribe((event) => events.push(event));
  const e40 = () => events.filter((event): event is PolywaveEvent & E40 => 'e40' in event && event.e40 === true);
  return { bus, events, e40, activities: () => e40().filter((event): event is ActivityEvent => event.type === 'activity') };
}

/** `activity_type` + its labels, for exact comparisons. */
const activityKey = (event: ActivityEvent) => [event.activity_type, event.slug ?? null, event.wave ?? null, event.agent ?? null, event.program ?? null, event.tier ?? null].join('|');

type Gate = LettersGate;

function implYaml(slug: string, agents: string[], gates: Gate[] = []): string {
  return lettersImplYaml({ title: `Letters ${slug}`, slug, agents, gates });
}

function completeSteps(id: string): string[] {
  const lower = id.toLowerCase();
  return [`      - write: { path: src/${lower}.js, content: "export const ${lower} = '${lower}';\\n" }`, `      - commit: "feat(${id}): letter ${lower}"`, '      - report: { status: complete, verification: PASS, notes: "done" }'];
}

async function setup(slug: string, agents: string[], script: Record<string, string[]>, gates: Gate[] = []) {
  const repo = await createTestRepo({ files: { [`docs/IMPL/IMPL-${slug}.yaml`]: implYaml(slug, agents, gates), 'src/index.js': 'export {};\n' } });
  const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-e40-')), 'agents.yaml');
  writeFileSync(scriptPath, ['version: 1', 'agents:', ...Object.entries(script).flatMap(([id, steps]) => [`  ${id}:`, '    steps:', ...steps]), ''].join('\n'));
  return { repo, implPath: repo.path(`docs/IMPL/IMPL-${slug}.yaml`), scriptPath };
}

const pass = 'node -e "process.exit(0)"';
const fail = 'node -e "console.error(\'GATE-NO\'); process.exit(3)"';

describe('E40 activity and agent_performance events on the real command paths', () => {
  it('run-wave: wave_start, agent_performance per agent, gate_executed per pre-merge gate, gate_failed for a failing post-merge gate, wave_failed', async () => {
    const { repo, implPath, scriptPath } = await setup('gated', ['A', 'B'], { A: completeSteps('A'), B: completeSteps('B') }, [
      { type: 'lint', command: pass, timing: 'pre-merge' },
      { type: 'test', command: fail, timing: 'post-merge' },
    ]);
    const recorder = record();
    const result = await runWave({ implPath, wave: 1, model: `script:${scriptPath}`, env: repo.env, events: recorder.bus, skipCritic: true, retryBackoffMs: 10, gitAt: (dir) => createGit(dir, { env: repo.env }) });
    expect(result.success).toBe(false);
    expect(result.finalize?.failed_step?.step).toBe('run-post-merge-gates');

    // The agents' pre-merge gates run concurrently: their two events come in either order.
    const keys = recorder.activities().map(activityKey);
    expect([keys[0], ...keys.slice(1, 3).sort(), ...keys.slice(3)]).toEqual([
      'wave_start|gated|1|||',
      'gate_executed|gated|1|A||',
      'gate_executed|gated|1|B||',
      'gate_failed|gated|1|||',
      'wave_failed|gated|1|||',
    ]);
    const failedGate = recorder.activities().find((event) => event.activity_type === 'gate_failed')!;
    expect(failedGate).toMatchObject({ v: 1, e40: true, gate: 'test', command: fail, gate_scope: 'post-merge', from_cache: false });
    expect(failedGate.details).toBe('gate=test passed=false exit=3');
    expect(recorder.activities().find((event) => event.activity_type === 'wave_failed')!.details).toMatch(/^run-post-merge-gates: E21: required post-merge gate/);

    const performance = recorder.e40().filter((event): event is AgentPerformanceEvent => event.type === 'agent_performance');
    expect(performance.map((event) => event.agent).sort()).toEqual(['A', 'B']);
    for (const event of performance) {
      expect(event).toMatchObject({ slug: 'gated', wave: 1, status: 'success', retry_count: 0, files_modified: [`src/${event.agent.toLowerCase()}.js`], backend: 'script', cost_usd: 0, input_tokens: 0 });
      expect(event.failure_type).toBeUndefined();
      expect(event.duration_seconds).toBeGreaterThanOrEqual(0);
    }
    // Script agents make no model calls: no cost events.
    expect(recorder.e40().filter((event) => event.type === 'cost')).toEqual([]);
    // Each E40 event goes out after the progress event of the same moment (the store sees both).
    expect(recorder.events.findIndex((event) => event.type === 'wave-run-start')).toBeLessThan(recorder.events.findIndex((event) => 'e40' in event && event.type === 'activity'));
  }, 120_000);

  it('a failing agent: agent_performance blocked with its E19 failure_type, wave_failed with the E7 reason, no gate and no merge event', async () => {
    const blocked = ['      - write: { path: src/b.js, content: "export const b = 1;\\n" }', '      - commit: "wip(B)"', '      - report: { status: blocked, failure_type: needs_replan, verification: "FAIL", notes: "the contract is wrong" }'];
    const { repo, implPath, scriptPath } = await setup('broken', ['A', 'B'], { A: completeSteps('A'), B: blocked }, [{ type: 'lint', command: pass }]);
    const recorder = record();
    const result = await runWave({ implPath, wave: 1, model: `script:${scriptPath}`, env: repo.env, events: recorder.bus, skipCritic: true, retryBackoffMs: 10, gitAt: (dir) => createGit(dir, { env: repo.env }) });
    expect(result.success).toBe(false);
    expect(recorder.activities().map(activityKey)).toEqual(['wave_start|broken|1|||', 'wave_failed|broken|1|||']);
    expect(recorder.activities()[1]!.details).toMatch(/^E7: 1 of 2 agent\(s\) did not complete/);
    const byAgent = Object.fromEntries(recorder.e40().filter((event): event is AgentPerformanceEvent => event.type === 'agent_performance').map((event) => [event.agent, event]));
    expect(byAgent.A).toMatchObject({ status: 'success', retry_count: 0 });
    expect(byAgent.B).toMatchObject({ status: 'blocked', failure_type: 'needs_replan', retry_count: 0, files_modified: ['src/b.js'] });
  }, 120_000);

  it('the autopilot on an IMPL: wave_start, gate_executed, wave_merge, impl_complete — in that order, each once', async () => {
    // A one-agent wave runs solo (no agent branch): its gate runs after the "merge".
    const { repo, implPath, scriptPath } = await setup('closing', ['A'], { A: completeSteps('A') }, [{ type: 'lint', command: pass, timing: 'post-merge' }]);
    const recorder = record();
    const result = await runAutopilot({ implPath, repoDir: repo.dir, auto: true, noCritic: true, model: `script:${scriptPath}`, env: repo.env, events: recorder.bus, retryBackoffMs: 10 });
    expect(result.success, result.stopped).toBe(true);
    expect(recorder.activities().map(activityKey)).toEqual(['wave_start|closing|1|||', 'gate_executed|closing|1|||', 'wave_merge|closing|1|||', 'impl_complete|closing||||']);
    expect(recorder.activities().find((event) => event.activity_type === 'wave_merge')!.details).toMatch(/state WAVE_VERIFIED/);
  }, 120_000);
});

describe('E40 PROGRAM events: Scouts, tier gates, tier advancement (the tier loop)', () => {
  // The successful tier loop's events are asserted on program-execute.test.ts's own run (one demo PROGRAM run in CI for both).

  it('a failing tier gate: tier_gate_failed with the reason, gate_failed for the command, no tier_advanced', async () => {
    const { programDemoManifest } = await import('../src/demo/program-project.js');
    const demo = await runProgramDemo({ env: { ...process.env, ...gitEnv }, dir: path.join(makeTempDir('polywave-e40-program-fail-'), 'demo'), setupOnly: true });
    writeFileSync(demo.program_path, programDemoManifest('REVIEWED').replace('      command: node --test', `      command: ${JSON.stringify(fail)}`));
    const git = createGit(demo.repo, { env: { ...process.env, ...gitEnv } });
    await git.run(['add', '-A']);
    await git.run(['commit', '-q', '--no-verify', '-m', 'test: a tier gate that fails'], { env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' } });
    const recorder = record();
    const result = await executeProgram({ programPath: demo.program_path, repoDir: demo.repo, env: { ...process.env, ...gitEnv }, approve: async () => true, noCritic: true, model: `script:${demo.script}`, events: recorder.bus, retryBackoffMs: 10 });
    expect(result.success).toBe(false);
    const tierEvents = recorder.activities().filter((event) => event.activity_type.startsWith('tier_') || event.gate_scope === 'tier');
    expect(tierEvents.map(activityKey)).toEqual(['gate_failed||||shop|1', 'tier_gate_failed||||shop|1']);
    expect(tierEvents[1]!.details).toMatch(/required tier gate\(s\) failed/);
    expect(recorder.activities().filter((event) => event.activity_type === 'impl_complete')).toEqual([]);
  }, 300_000);
});

// ---- cost per model call ------------------------------------------------------------------------

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
const usageOf = (input: number, output: number, cacheRead = 0): GenerateResult['usage'] => ({
  inputTokens: { total: input + cacheRead, noCache: input, cacheRead, cacheWrite: 0 },
  outputTokens: { total: output, text: output, reasoning: undefined },
});
let callCounter = 0;
const callTool = (toolName: string, input: Record<string, unknown>, usage: GenerateResult['usage']): GenerateResult => ({
  content: [{ type: 'tool-call', toolCallId: `call-${++callCounter}`, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: 'tool-calls', raw: 'tool_use' },
  usage,
  warnings: [],
});
const say = (text: string, usage: GenerateResult['usage']): GenerateResult => ({ content: [{ type: 'text', text }], finishReason: { unified: 'stop', raw: 'end_turn' }, usage, warnings: [] });

/** The four calls of an agent that writes its file, commits, reports and says so. */
function agentCalls(file: string): GenerateResult[] {
  return [
    callTool('write_file', { path: file, content: "export const a = 'a';\n" }, usageOf(1000, 200, 400)),
    callTool('git_commit', { message: 'feat(A): a' }, usageOf(1500, 50)),
    callTool('set_completion', { status: 'complete', verification: 'PASS', files_created: [file] }, usageOf(2000, 80)),
    say('done', usageOf(2100, 10)),
  ];
}

function sumCost(events: CostEvent[]): number {
  let total = 0;
  for (const event of events) total += event.cost_usd ?? 0;
  return total;
}

describe('E40 cost events per model call', () => {
  it('ai-sdk (MockLanguageModelV3 on openai:gpt-4o): one cost event per step with its own tokens, priced from the dated table; their sum is the run summary', async () => {
    const { repo, implPath } = await setup('priced', ['A'], {});
    const steps = agentCalls('src/a.js');
    let index = 0;
    const model = new MockLanguageModelV3({ provider: 'openai', modelId: 'gpt-4o', doGenerate: async () => steps[index++] ?? say('over', usageOf(1, 1)) });
    const recorder = record();
    const result = await runWave({
      implPath,
      wave: 1,
      model: 'openai:gpt-4o',
      backend: createAiSdkBackend({ languageModel: () => model }),
      unsafeNoSandbox: true,
      env: { ...repo.env, OPENAI_API_KEY: 'never-sent' },
      events: recorder.bus,
      skipCritic: true,
      finalize: false,
      gitAt: (dir) => createGit(dir, { env: repo.env }),
    });
    expect(result.agents[0]?.status, JSON.stringify({ explanation: result.agents[0]?.explanation, prepare: result.prepare, blocked: result.blocked })).toBe('complete');
    const costs = recorder.e40().filter((event): event is CostEvent => event.type === 'cost');
    expect(model.doGenerateCalls).toHaveLength(4);
    expect(costs.map((event) => [event.turn, event.input_tokens, event.output_tokens, event.cache_read_tokens])).toEqual([
      [1, 1000, 200, 400],
      [2, 1500, 50, 0],
      [3, 2000, 80, 0],
      [4, 2100, 10, 0],
    ]);
    // gpt-4o: $2.50 / M input, $10 / M output, $1.25 / M cached input.
    expect(costs.map((event) => event.cost_usd)).toEqual([0.0050, 0.00425, 0.0058, 0.00535]);
    for (const event of costs) expect(event).toMatchObject({ v: 1, e40: true, slug: 'priced', wave: 1, agent: 'A', role: 'wave', attempt: 1, model: 'gpt-4o', provider: 'openai', backend: 'ai-sdk', cost_source: 'pricing-table', pricing_date: pricingTableDate });
    expect(result.usage.costUsd).toBe(sumCost(costs));
    expect(result.agents[0]!.usage.costUsd).toBe(sumCost(costs));
    expect(result.usage.inputTokens).toBe(6600);
    const performance = recorder.e40().find((event): event is AgentPerformanceEvent => event.type === 'agent_performance')!;
    expect(performance).toMatchObject({ status: 'success', turns: 4, input_tokens: 6600, output_tokens: 340, cost_usd: sumCost(costs), model: 'openai:gpt-4o', backend: 'ai-sdk' });
  }, 120_000);

  it('ai-sdk through the loopback OpenAI server (real HTTP, usage from the response): non-zero tokens per call, sum = run summary', async () => {
    const { repo, implPath } = await setup('wire', ['A'], {});
    const server = await startOpenAiLoopback(async (body) => {
      const done = (body.messages as Array<{ role: string }>).filter((message) => message.role === 'tool').length;
      const usage = { promptTokens: 300 + done * 100, completionTokens: 40, cachedTokens: 100 };
      const calls: Array<[string, Record<string, unknown>]> = [
        ['write_file', { path: 'src/a.js', content: "export const a = 'a';\n" }],
        ['git_commit', { message: 'feat(A): a' }],
        ['set_completion', { status: 'complete', verification: 'PASS', files_created: ['src/a.js'] }],
      ];
      const next = calls[done];
      return next ? { toolCalls: [{ name: next[0], arguments: next[1] }], usage } : { text: 'done', usage };
    });
    try {
      const recorder = record();
      const result = await runWave({
        implPath,
        wave: 1,
        model: 'openai:gpt-4o-mini',
        unsafeNoSandbox: true,
        env: { ...repo.env, OPENAI_API_KEY: 'loopback-key', OPENAI_BASE_URL: server.baseURL },
        events: recorder.bus,
        skipCritic: true,
        finalize: false,
        gitAt: (dir) => createGit(dir, { env: repo.env }),
      });
      expect(result.agents[0]?.status, JSON.stringify({ explanation: result.agents[0]?.explanation, prepare: result.prepare, blocked: result.blocked })).toBe('complete');
      const costs = recorder.e40().filter((event): event is CostEvent => event.type === 'cost');
      expect(costs).toHaveLength(4);
      // prompt_tokens include the cached part; the table's input_tokens are the uncached ones.
      expect(costs.map((event) => [event.input_tokens, event.cache_read_tokens, event.output_tokens])).toEqual([
        [200, 100, 40],
        [300, 100, 40],
        [400, 100, 40],
        [500, 100, 40],
      ]);
      for (const event of costs) expect(event.cost_usd).toBeGreaterThan(0);
      expect(result.usage.costUsd).toBe(sumCost(costs));
    } finally {
      await server.close();
    }
  }, 120_000);
});

describe('the cost meter on the running totals of the other backends', () => {
  it('claude-code: table-priced calls per assistant message, then the result message reconciles to the backend-reported total', async () => {
    const { createCostMeter } = await import('../src/agents/cost-meter.js');
    const emitted: CostEvent[] = [];
    const meter = createCostMeter({ spec: { backend: 'claude-code', modelId: 'claude-sonnet-4-5', raw: 'claude-code:claude-sonnet-4-5' }, role: 'wave', attempt: 1, labels: { slug: 's', wave: 1, agent: 'A' }, emit: (event) => emitted.push(event) });
    meter.observe(1, { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 2000 });
    meter.observe(2, { inputTokens: 1000, outputTokens: 100, cacheReadTokens: 0, cacheWriteTokens: 2000 }); // the same total again: no call
    meter.observe(3, { inputTokens: 1500, outputTokens: 300, cacheReadTokens: 2000, cacheWriteTokens: 2000 });
    // The result message: Claude Code's own usage and total_cost_usd.
    const usage = meter.settle({ inputTokens: 1500, outputTokens: 320, cacheReadTokens: 2000, cacheWriteTokens: 2000, costUsd: 0.02 }, 3);
    expect(emitted.map((event) => [event.turn, event.input_tokens, event.output_tokens, event.cache_read_tokens, event.cache_write_tokens, event.cost_source, event.provider])).toEqual([
      [1, 1000, 100, 0, 2000, 'pricing-table', 'anthropic'],
      [3, 500, 200, 2000, 0, 'pricing-table', 'anthropic'],
      [3, 0, 20, 0, 0, 'backend', 'anthropic'],
    ]);
    // Sonnet: $3 / M input, $15 / M output, $0.30 / M cache read, $3.75 / M cache write.
    expect(emitted[0]!.cost_usd).toBe(0.012);
    expect(emitted[1]!.cost_usd).toBe(0.0051);
    expect(sumCost(emitted)).toBeCloseTo(0.02, 9);
    expect(usage.costUsd).toBe(sumCost(emitted));
  });

  it('codex (cli) per turn, an unknown model (cost null, summary cost unknown), and a local model (0, source local)', async () => {
    const { createCostMeter } = await import('../src/agents/cost-meter.js');
    const codex: CostEvent[] = [];
    const codexMeter = createCostMeter({ spec: { backend: 'cli', command: 'codex', modelId: 'gpt-4.1-mini', raw: 'cli:codex:gpt-4.1-mini' }, role: 'wave', attempt: 2, labels: { slug: 's', wave: 1, agent: 'B' }, emit: (event) => codex.push(event) });
    codexMeter.observe(1, { inputTokens: 800, outputTokens: 50, cacheReadTokens: 200, cacheWriteTokens: 0 });
    codexMeter.observe(2, { inputTokens: 1600, outputTokens: 90, cacheReadTokens: 400, cacheWriteTokens: 0 });
    const codexUsage = codexMeter.settle({ inputTokens: 1600, outputTokens: 90, cacheReadTokens: 400, cacheWriteTokens: 0 }, 2);
    expect(codex.map((event) => [event.input_tokens, event.output_tokens, event.attempt, event.model, event.backend])).toEqual([
      [800, 50, 2, 'gpt-4.1-mini', 'cli'],
      [800, 40, 2, 'gpt-4.1-mini', 'cli'],
    ]);
    expect(codexUsage.costUsd).toBe(sumCost(codex));
    expect(codexUsage.costUsd).toBeGreaterThan(0);

    const unknown: CostEvent[] = [];
    const unknownMeter = createCostMeter({ spec: { backend: 'ai-sdk', provider: 'anthropic', modelId: 'claude-future-9', raw: 'anthropic:claude-future-9' }, role: 'scout', attempt: 1, labels: { slug: 's', agent: 'scout' }, emit: (event) => unknown.push(event) });
    unknownMeter.observe(1, { inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 });
    expect(unknown[0]).toMatchObject({ cost_usd: null, cost_source: 'unpriced', input_tokens: 10 });
    expect(unknownMeter.settle({ inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 }, 1).costUsd).toBeUndefined();

    const local: CostEvent[] = [];
    const localMeter = createCostMeter({ spec: { backend: 'ai-sdk', provider: 'ollama', modelId: 'qwen3', baseURL: 'http://127.0.0.1:11434/v1', raw: 'ollama:qwen3' }, role: 'wave', attempt: 1, labels: { slug: 's', wave: 1, agent: 'C' }, emit: (event) => local.push(event) });
    localMeter.observe(1, { inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 });
    expect(local).toHaveLength(1);
    expect(local[0]).toMatchObject({ cost_usd: 0, cost_source: 'local' });
    expect(localMeter.settle({ inputTokens: 10, outputTokens: 1, cacheReadTokens: 0, cacheWriteTokens: 0 }, 1).costUsd).toBe(0);
  });
});
