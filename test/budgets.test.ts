import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { createAiSdkBackend } from '../src/agents/backends/ai-sdk.js';
import { BudgetTracker, resolveBudgetLimits, type BudgetBreach } from '../src/agents/budget.js';
import { EventBus, type PolywaveEvent } from '../src/engine/events.js';
import { journalPaths } from '../src/engine/journal.js';
import { createGit } from '../src/git/git-cli.js';
import { runWave } from '../src/orchestrator/run-wave.js';
import type { AgentPerformanceEvent, CostEvent } from '../src/protocol/e40.js';
import { createTestRepo } from './support/git-repo.js';
import { runCli } from './support/cli.js';
import { lettersImplYaml } from './support/letters-impl.js';

/*
 * Budgets (issue 14, "What it must show" 5): limits per run / wave / agent enforced from the live
 * cost of each model call. An ai-sdk agent (MockLanguageModelV3 with known usage) that goes over
 * --budget-usd is stopped (journal kept, E19 escalate) and the run pauses before the next launch
 * with BUDGET_EXCEEDED; bad amounts are refused before anything starts.
 */

function implYaml(slug: string, agents: string[]): string {
  return lettersImplYaml({ title: `Budget ${slug}`, slug, agents });
}

type GenerateResult = Awaited<ReturnType<MockLanguageModelV3['doGenerate']>>;
let callCounter = 0;
/** A model that never stops: every call lists the directory and costs 100k input tokens ($0.25 on gpt-4o). */
function spender(): MockLanguageModelV3 {
  return new MockLanguageModelV3({
    provider: 'openai',
    modelId: 'gpt-4o',
    doGenerate: async (): Promise<GenerateResult> => ({
      content: [{ type: 'tool-call', toolCallId: `call-${++callCounter}`, toolName: 'list_dir', input: JSON.stringify({ path: '.' }) }],
      finishReason: { unified: 'tool-calls', raw: 'tool_use' },
      usage: { inputTokens: { total: 100_000, noCache: 100_000, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 0, text: 0, reasoning: undefined } },
      warnings: [],
    }),
  });
}

describe('BudgetTracker', () => {
  const scope = { slug: 'x', wave: 1 };
  it('stops the agent over its own limit only; the run goes on', () => {
    const tracker = new BudgetTracker({ agentUsd: 1 });
    const stopped: string[] = [];
    const a = tracker.startAgent({ ...scope, agent: 'A' }, () => stopped.push('A'));
    const b = tracker.startAgent({ ...scope, agent: 'B' }, () => stopped.push('B'));
    a.charge(0.6);
    b.charge(0.6);
    expect(stopped).toEqual([]);
    a.charge(0.5);
    expect(stopped).toEqual(['A']);
    expect(a.breach).toMatchObject({ code: 'BUDGET_EXCEEDED', scope: 'agent', agent: 'A', limit_usd: 1 });
    expect(b.breach).toBeUndefined();
    expect(tracker.checkLaunch({ ...scope, agent: 'C' })).toBeUndefined();
  });

  it('a wave over its limit stops every running agent of that wave, not those of another wave; its next launch is refused', () => {
    const tracker = new BudgetTracker({ waveUsd: 1 });
    const stopped: string[] = [];
    const a = tracker.startAgent({ ...scope, agent: 'A' }, () => stopped.push('A'));
    tracker.startAgent({ ...scope, agent: 'B' }, () => stopped.push('B'));
    tracker.startAgent({ slug: 'x', wave: 2, agent: 'C' }, () => stopped.push('C'));
    tracker.startAgent({ slug: 'y', wave: 1, agent: 'A' }, () => stopped.push('yA'));
    a.charge(1.01);
    expect(stopped).toEqual(['A', 'B']);
    expect(tracker.checkLaunch({ ...scope })).toMatchObject({ scope: 'wave', wave: 1 });
    expect(tracker.checkLaunch({ slug: 'x', wave: 2 })).toBeUndefined();
  });

  it('a run over its limit stops everyone once and refuses every launch (spent ≥ limit)', () => {
    const tracker = new BudgetTracker({ runUsd: 0.5 });
    const stops: BudgetBreach[] = [];
    const a = tracker.startAgent({ ...scope, agent: 'A' }, (breach) => stops.push(breach));
    const b = tracker.startAgent({ slug: 'y', wave: 3, agent: 'B' }, (breach) => stops.push(breach));
    a.charge(0.3);
    b.charge(0.3);
    a.charge(0.1);
    expect(stops).toHaveLength(2);
    expect(stops[0]!.message).toBe('BUDGET_EXCEEDED: the run spent $0.6000 of its $0.5000 run budget');
    expect(tracker.checkLaunch({ slug: 'z', wave: 1 })?.scope).toBe('run');
    expect(new BudgetTracker({ runUsd: 0 }).checkLaunch(scope)?.scope).toBe('run');
    // A stop callback that throws does not break the charge.
    const noisy = new BudgetTracker({ agentUsd: 0.1 });
    const account = noisy.startAgent({ ...scope, agent: 'A' }, () => {
      throw new Error('boom');
    });
    expect(() => account.charge(1)).not.toThrow();
    expect(account.breach?.scope).toBe('agent');
  });

  it('limits: flags win over budget_usd of the config; bad amounts are X001', () => {
    expect(resolveBudgetLimits({}, 5)).toEqual({ runUsd: 5 });
    expect(resolveBudgetLimits({ agentBudgetUsd: '0.25' }, { run: 10, wave: '2.5' })).toEqual({ runUsd: 10, waveUsd: 2.5, agentUsd: 0.25 });
    expect(resolveBudgetLimits({ budgetUsd: '$3' }, { run: 10 })).toEqual({ runUsd: 3 });
    for (const bad of ['abc', '-1', 'NaN', 'Infinity', '1e999', '', ' ']) expect(() => resolveBudgetLimits({ budgetUsd: bad }, undefined), bad).toThrow(/X001|--budget-usd/);
    expect(() => resolveBudgetLimits({}, { runs: 1 })).toThrow(/unknown key "runs"/);
    expect(() => resolveBudgetLimits({}, [1])).toThrow(/must be a number/);
    expect(() => resolveBudgetLimits({}, { agent: -2 })).toThrow(/budget_usd.agent/);
  });
});

describe('an ai-sdk agent over --budget-usd', () => {
  it('is stopped after the call that crossed the limit (journal kept, E19 escalate), and the run pauses before the next launch with BUDGET_EXCEEDED', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-spend.yaml': implYaml('spend', ['A', 'B']), 'src/index.js': 'export {};\n' } });
    const implPath = repo.path('docs/IMPL/IMPL-spend.yaml');
    const model = spender();
    const bus = new EventBus();
    const events: PolywaveEvent[] = [];
    bus.subscribe((event) => events.push(event));
    const budget = new BudgetTracker({ runUsd: 0.6 });
    const result = await runWave({
      implPath,
      wave: 1,
      model: 'openai:gpt-4o',
      backend: createAiSdkBackend({ languageModel: () => model }),
      unsafeNoSandbox: true,
      concurrency: 1,
      prioritize: false,
      env: { ...repo.env, OPENAI_API_KEY: 'never-sent' },
      events: bus,
      budget,
      skipCritic: true,
      maxTurns: 40,
      gitAt: (dir) => createGit(dir, { env: repo.env }),
    });

    // $0.25 per call: the third call crosses $0.60; nothing more is asked of the model.
    expect(model.doGenerateCalls.length).toBe(3);
    expect(result.success).toBe(false);
    // One agent at a time: whichever got the slot first spends the money (the launch order of equal agents is a race).
    const a = result.agents.find((agent) => agent.attempts.length > 0)!;
    const b = result.agents.find((agent) => agent !== a)!;
    expect(result.budget).toMatchObject({ code: 'BUDGET_EXCEEDED', scope: 'run', limit_usd: 0.6, spent_usd: 0.75, agent: a.agent });
    expect(result.blocked?.reason).toMatch(/^BUDGET_EXCEEDED: the run spent \$0\.7500 of its \$0\.6000 run budget: the run paused/);
    expect(a).toMatchObject({ status: 'failed' });
    expect(a.attempts).toHaveLength(1);
    expect(a.attempts[0]!.outcome).toBe('aborted');
    expect(a.decision).toMatchObject({ failureType: 'escalate', retry: false });
    expect(a.explanation).toMatch(/stopped by the budget: BUDGET_EXCEEDED/);
    expect(b).toMatchObject({ status: 'not-run', attempts: [] });
    expect(b.explanation).toMatch(/^BUDGET_EXCEEDED: .* not launched$/);
    expect(events.filter((event) => event.type === 'agent-launch').map((event) => 'agent' in event && event.agent)).toEqual([a.agent]);
    // The cost events are the spending: 3 × $0.25, and the run summary says the same.
    const costs = events.filter((event): event is PolywaveEvent & CostEvent => event.type === 'cost');
    expect(costs.map((event) => event.cost_usd)).toEqual([0.25, 0.25, 0.25]);
    expect(result.usage.costUsd).toBe(0.75);
    const performance = events.filter((event): event is PolywaveEvent & AgentPerformanceEvent => event.type === 'agent_performance');
    expect(performance).toHaveLength(1);
    expect(performance[0]).toMatchObject({ agent: a.agent, status: 'failed', failure_type: 'escalate', stop_reason: 'budget_exceeded', cost_usd: 0.75 });
    // The journal of the stopped agent is kept (E23A: a relaunch recovers from it).
    const journal = journalPaths(repo.dir, 'spend', 1, a.agent).index;
    expect(existsSync(journal)).toBe(true);
    expect(readFileSync(journal, 'utf8')).toContain('list_dir');
    // E7: nothing merged, the IMPL is BLOCKED and says so.
    expect(result.state).toBe('BLOCKED');
    expect(readFileSync(implPath, 'utf8')).toMatch(/^state: BLOCKED$/m);
  }, 120_000);

  it('the Scout is charged to the run too: a Scout that spends past --budget-usd is stopped, nothing is committed, and the run pauses with BUDGET_EXCEEDED', async () => {
    const repo = await createTestRepo({ files: { 'src/index.js': 'export {};\n' } });
    const model = spender();
    const bus = new EventBus();
    const events: PolywaveEvent[] = [];
    bus.subscribe((event) => events.push(event));
    const budget = new BudgetTracker({ runUsd: 0.4 });
    const { runScout } = await import('../src/orchestrator/run-scout.js');
    const scout = await runScout({ feature: 'Letters', slug: 'letters', repoDir: repo.dir, model: 'openai:gpt-4o', backend: createAiSdkBackend({ languageModel: () => model }), unsafeNoSandbox: true, env: { ...repo.env, OPENAI_API_KEY: 'never-sent' }, events: bus, budget, critic: false, maxTurns: 40 });
    // $0.25 per call: the second crosses $0.40; no further call, no second attempt.
    expect(model.doGenerateCalls.length).toBe(2);
    expect(scout.success).toBe(false);
    expect(scout.attempts).toHaveLength(1);
    expect(scout.error).toMatchObject({ code: 'BUDGET_EXCEEDED' });
    expect(scout.error?.message).toMatch(/^BUDGET_EXCEEDED: the run spent \$0\.5000 of its \$0\.4000 run budget; the Scout was stopped in attempt 1/);
    expect(budget.spentUsd).toBe(0.5);
    expect(events.filter((event): event is PolywaveEvent & CostEvent => event.type === 'cost').map((event) => [event.cost_usd, event.agent])).toEqual([[0.25, 'scout'], [0.25, 'scout']]);
    expect((await repo.run(['rev-list', '--count', 'HEAD'])).trim()).toBe('1');
    // The money is gone: the next Scout of the run is not started at all.
    const again = await runScout({ feature: 'Letters', slug: 'letters-2', repoDir: repo.dir, model: 'openai:gpt-4o', backend: createAiSdkBackend({ languageModel: () => model }), unsafeNoSandbox: true, env: { ...repo.env, OPENAI_API_KEY: 'never-sent' }, budget, critic: false });
    expect(model.doGenerateCalls.length).toBe(2);
    expect(again.attempts).toEqual([]);
    expect(again.error?.message).toMatch(/^BUDGET_EXCEEDED: .*Scout attempt 1 not started/);
  }, 120_000);

  it('the critic (and every single-attempt role) is charged too: stopped over the limit, not started when the money is gone', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-crit.yaml': implYaml('crit', ['A', 'B', 'C']), 'src/index.js': 'export {};\n' } });
    const implPath = repo.path('docs/IMPL/IMPL-crit.yaml');
    const { runCritic } = await import('../src/orchestrator/run-critic.js');
    const model = spender();
    const budget = new BudgetTracker({ runUsd: 0.4 });
    const env = { ...repo.env, OPENAI_API_KEY: 'never-sent' };
    const critic = await runCritic({ implPath, repoDir: repo.dir, model: 'openai:gpt-4o', backend: createAiSdkBackend({ languageModel: () => model }), unsafeNoSandbox: true, env, budget, commit: false, maxTurns: 40 });
    expect(model.doGenerateCalls.length).toBe(2);
    expect(critic.success).toBe(false);
    expect(critic.agent.failure).toMatch(/^BUDGET_EXCEEDED: the run spent \$0\.5000 of its \$0\.4000 run budget \(the critic stopped; raise the budget and re-run\)$/);
    expect(budget.spentUsd).toBe(0.5);
    const again = await runCritic({ implPath, repoDir: repo.dir, model: 'openai:gpt-4o', backend: createAiSdkBackend({ languageModel: () => model }), unsafeNoSandbox: true, env, budget, commit: false });
    expect(model.doGenerateCalls.length).toBe(2);
    expect(again.success).toBe(false);
    expect(again.agent.failure).toMatch(/^BUDGET_EXCEEDED: .*\(the critic stopped; raise the budget and re-run\)$/);
    expect(readFileSync(implPath, 'utf8')).not.toMatch(/critic_report/);
  }, 120_000);

  it('a per-agent limit stops each agent on its own; both run (concurrently) and the wave blocks', async () => {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-each.yaml': implYaml('each', ['A', 'B']), 'src/index.js': 'export {};\n' } });
    const model = spender();
    const budget = new BudgetTracker({ agentUsd: 0.3 });
    const result = await runWave({
      implPath: repo.path('docs/IMPL/IMPL-each.yaml'),
      wave: 1,
      model: 'openai:gpt-4o',
      backend: createAiSdkBackend({ languageModel: () => model }),
      unsafeNoSandbox: true,
      env: { ...repo.env, OPENAI_API_KEY: 'never-sent' },
      budget,
      skipCritic: true,
      maxTurns: 40,
      gitAt: (dir) => createGit(dir, { env: repo.env }),
    });
    expect(result.agents.map((agent) => [agent.agent, agent.status, agent.usage.costUsd])).toEqual([
      ['A', 'failed', 0.5],
      ['B', 'failed', 0.5],
    ]);
    expect(budget.breaches.map((breach) => [breach.scope, breach.agent]).sort()).toEqual([
      ['agent', 'A'],
      ['agent', 'B'],
    ]);
    expect(model.doGenerateCalls.length).toBe(4);
  }, 120_000);
});

describe('budgets on the CLI', () => {
  const cliEnv = (env: Record<string, string | undefined>): Record<string, string> => Object.fromEntries(Object.entries(env).filter((entry): entry is [string, string] => entry[1] !== undefined));
  async function cliRepo() {
    const repo = await createTestRepo({ files: { 'docs/IMPL/IMPL-cli.yaml': implYaml('cli', ['A', 'B']), 'src/index.js': 'export {};\n' } });
    const scriptPath = path.join(mkdtempSync(path.join(os.tmpdir(), 'pw-budget-')), 'agents.yaml');
    writeFileSync(scriptPath, 'version: 1\nagents: {}\n');
    return { repo, scriptPath, before: readFileSync(repo.path('docs/IMPL/IMPL-cli.yaml'), 'utf8') };
  }

  it('bad amounts: one coded line, exit 2, nothing changed', async () => {
    const { repo, scriptPath, before } = await cliRepo();
    for (const args of [['--budget-usd', 'lots'], ['--agent-budget-usd', '-1'], ['--wave-budget-usd', '1e999']]) {
      const run = await runCli(['run-wave', 'docs/IMPL/IMPL-cli.yaml', '--wave', '1', '--model', `script:${scriptPath}`, ...args], { cwd: repo.dir, env: cliEnv(repo.env) });
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stderr).toMatch(/X001_INVALID_INPUT/);
      expect(run.stderr).not.toMatch(/\n\s+at /);
    }
    writeFileSync(repo.path('polywave.config.json'), JSON.stringify({ budget_usd: { run: 'plenty' } }));
    const fromConfig = await runCli(['run-wave', 'docs/IMPL/IMPL-cli.yaml', '--wave', '1', '--model', `script:${scriptPath}`], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(fromConfig.code).toBe(2);
    expect(fromConfig.stderr).toMatch(/X001_INVALID_INPUT.*budget_usd\.run/);
    expect(readFileSync(repo.path('docs/IMPL/IMPL-cli.yaml'), 'utf8')).toBe(before);
    expect(await repo.git.listBranches('polywave/')).toEqual([]);
  }, 60_000);

  it('a spent budget (budget_usd: 0 in polywave.config.json) pauses before the wave: exit 1, BUDGET_EXCEEDED, nothing prepared', async () => {
    const { repo, scriptPath, before } = await cliRepo();
    writeFileSync(repo.path('polywave.config.json'), JSON.stringify({ budget_usd: 0 }));
    const run = await runCli(['run-wave', 'docs/IMPL/IMPL-cli.yaml', '--wave', '1', '--model', `script:${scriptPath}`], { cwd: repo.dir, env: cliEnv(repo.env) });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/BUDGET_EXCEEDED: the run spent \$0\.000000 of its \$0\.000000 run budget; wave 1 not started/);
    expect(JSON.parse(run.stdout)).toMatchObject({ success: false, budget: { code: 'BUDGET_EXCEEDED', scope: 'run' } });
    expect(readFileSync(repo.path('docs/IMPL/IMPL-cli.yaml'), 'utf8')).toBe(before);
    expect(await repo.git.listBranches('polywave/')).toEqual([]);
  }, 60_000);
});
