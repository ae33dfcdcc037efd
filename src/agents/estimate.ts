/**
 * `polywave estimate` (issue 14): tokens and cost of a plan before it runs.
 *
 * Per agent of the plan: its context (task text, interface contracts, the current size of every
 * file it owns) and a forecast of its model calls. Two methods:
 * - `history`: past actuals — the `cost` events of earlier agent runs (the event store, the NDJSON
 *   of `run-wave --json`, or the `cost.jsonl` run-wave keeps in each agent's journal). One agent
 *   run = the cost events of one (slug, wave, agent, attempt). The plan's total is the number of its
 *   agents × the mean past run; each agent gets a share in proportion to its context size.
 * - `heuristic` (no history): a fixed number of calls, each re-sending the system prompt, the
 *   agent's context and the growing conversation.
 * Costs come from the dated pricing table (pricing.ts); a model it does not know gives null.
 * Pure: callers read the files and the history.
 */
import type { CostEvent } from '../protocol/e40.js';
import type { ModelSpec } from './contract.js';
import { estimateCostUsd, pricingTableDate } from './pricing.js';

/** The mean of past agent runs, from their `cost` events. */
export interface EstimateHistory {
  /** Agent runs seen (one per slug/wave/agent/attempt). */
  runs: number;
  calls: number;
  inputTokensPerRun: number;
  outputTokensPerRun: number;
  cacheReadTokensPerRun: number;
  cacheWriteTokensPerRun: number;
  callsPerRun: number;
  costUsdPerRun: number | null;
}

/** The fields of a `cost` event history needs (a store row's payload has them). */
export type HistoryCostEvent = Pick<CostEvent, 'input_tokens' | 'output_tokens' | 'cache_read_tokens' | 'cache_write_tokens' | 'cost_usd'> & { slug?: string; wave?: number; agent?: string; attempt?: number; type?: string };

/**
 * The history of past agent runs from their `cost` events (any order, any source; events of other
 * types are ignored). Undefined when there is none. The event store feeds it its stored payloads.
 */
export function historyFromCostEvents(events: Iterable<HistoryCostEvent>): EstimateHistory | undefined {
  const runs = new Map<string, { input: number; output: number; cacheRead: number; cacheWrite: number; calls: number; cost: number | null }>();
  for (const event of events) {
    if (event.type !== undefined && event.type !== 'cost') continue;
    if (typeof event.input_tokens !== 'number' || typeof event.output_tokens !== 'number') continue;
    const key = `${event.slug ?? ''}\0${event.wave ?? ''}\0${event.agent ?? ''}\0${event.attempt ?? 1}`;
    const run = runs.get(key) ?? { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, calls: 0, cost: 0 };
    run.input += event.input_tokens;
    run.output += event.output_tokens;
    run.cacheRead += event.cache_read_tokens ?? 0;
    run.cacheWrite += event.cache_write_tokens ?? 0;
    run.calls += 1;
    run.cost = run.cost === null || event.cost_usd === null || event.cost_usd === undefined ? null : run.cost + event.cost_usd;
    runs.set(key, run);
  }
  if (runs.size === 0) return undefined;
  const all = [...runs.values()];
  const mean = (pick: (run: (typeof all)[number]) => number) => all.reduce((sum, run) => sum + pick(run), 0) / all.length;
  const priced = all.every((run) => run.cost !== null);
  return {
    runs: all.length,
    calls: all.reduce((sum, run) => sum + run.calls, 0),
    inputTokensPerRun: mean((run) => run.input),
    outputTokensPerRun: mean((run) => run.output),
    cacheReadTokensPerRun: mean((run) => run.cacheRead),
    cacheWriteTokensPerRun: mean((run) => run.cacheWrite),
    callsPerRun: mean((run) => run.calls),
    costUsdPerRun: priced ? mean((run) => run.cost ?? 0) : null,
  };
}

/** One agent of the plan, as the caller read it. */
export interface PlannedAgent {
  slug: string;
  wave: number;
  agent: string;
  model: ModelSpec;
  /** Characters of the task, the brief's contracts and other prompt text specific to the agent. */
  promptChars: number;
  ownedFiles: number;
  /** Current bytes of the owned files that exist (new files count 0). */
  ownedBytes: number;
}

/** The forecast of one agent. */
export interface AgentEstimate {
  slug: string;
  wave: number;
  agent: string;
  model: string;
  owned_files: number;
  owned_bytes: number;
  context_tokens: number;
  calls: number;
  input_tokens: number;
  output_tokens: number;
  cache_read_tokens: number;
  cost_usd: number | null;
}

/** The whole forecast. */
export interface PlanEstimate {
  method: 'history' | 'heuristic';
  history?: EstimateHistory & { source: string };
  pricing_date: string;
  agents: AgentEstimate[];
  totals: { agents: number; calls: number; input_tokens: number; output_tokens: number; cache_read_tokens: number; cost_usd: number | null };
  /** What the numbers assume, in one line each. */
  assumptions: string[];
}

/** Heuristic constants (no history): documented in the output's `assumptions`. */
export const heuristic = Object.freeze({
  callsPerAgent: 10,
  systemPromptTokens: 4000,
  conversationGrowthTokensPerCall: 600,
  outputTokensPerCall: 300,
  bytesPerToken: 4,
});

function roundUsd(value: number): number {
  return Math.round(value * 1e6) / 1e6;
}

function priceOf(spec: ModelSpec, usage: { inputTokens: number; outputTokens: number; cacheReadTokens: number }): number | null {
  const full = { ...usage, cacheWriteTokens: 0 };
  const cost = spec.backend === 'ai-sdk' ? estimateCostUsd(spec.provider, spec.modelId, full) : spec.backend === 'script' ? 0 : spec.modelId ? estimateCostUsd('anthropic', spec.modelId, full) : undefined;
  return cost === undefined ? null : cost;
}

/** Forecasts `agents` with `history` (when given and not empty) or the heuristic. */
export function estimatePlan(agents: readonly PlannedAgent[], history?: EstimateHistory & { source: string }): PlanEstimate {
  const contextTokens = (agent: PlannedAgent) => Math.ceil((agent.promptChars + agent.ownedBytes) / heuristic.bytesPerToken);
  const meanContext = agents.length === 0 ? 1 : Math.max(1, agents.reduce((sum, agent) => sum + contextTokens(agent), 0) / agents.length);
  const estimates: AgentEstimate[] = agents.map((agent) => {
    const context = contextTokens(agent);
    let calls: number;
    let input: number;
    let output: number;
    let cacheRead: number;
    if (history) {
      // The mean past run, weighted by this agent's share of the plan's context (the sum is kept).
      const weight = context / meanContext;
      calls = Math.max(1, Math.round(history.callsPerRun));
      input = Math.round(history.inputTokensPerRun * weight);
      output = Math.round(history.outputTokensPerRun * weight);
      cacheRead = Math.round(history.cacheReadTokensPerRun * weight);
    } else {
      calls = heuristic.callsPerAgent;
      input = calls * (heuristic.systemPromptTokens + context) + (heuristic.conversationGrowthTokensPerCall * calls * (calls - 1)) / 2;
      output = calls * heuristic.outputTokensPerCall;
      cacheRead = 0;
    }
    const cost = priceOf(agent.model, { inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead });
    return {
      slug: agent.slug,
      wave: agent.wave,
      agent: agent.agent,
      model: agent.model.raw,
      owned_files: agent.ownedFiles,
      owned_bytes: agent.ownedBytes,
      context_tokens: context,
      calls,
      input_tokens: input,
      output_tokens: output,
      cache_read_tokens: cacheRead,
      cost_usd: cost,
    };
  });
  const sum = (pick: (estimate: AgentEstimate) => number) => estimates.reduce((total, estimate) => total + pick(estimate), 0);
  const costs = estimates.map((estimate) => estimate.cost_usd);
  const assumptions = history
    ? [`history: ${history.runs} past agent run(s) from ${history.source}, ${history.callsPerRun.toFixed(1)} calls and ${Math.round(history.inputTokensPerRun)} input tokens per run on average`, 'each agent gets the mean past run × (its context ÷ the plan\'s mean context)']
    : [
        `no history: ${heuristic.callsPerAgent} model calls per agent, each re-sending a ${heuristic.systemPromptTokens}-token system prompt, the agent's context (task + owned files, ${heuristic.bytesPerToken} bytes per token) and a conversation growing ${heuristic.conversationGrowthTokensPerCall} tokens per call; ${heuristic.outputTokensPerCall} output tokens per call`,
      ];
  assumptions.push(`prices: the pricing table of ${pricingTableDate}; retries (E19) and Scout/Critic runs are not included`);
  return {
    method: history ? 'history' : 'heuristic',
    ...(history ? { history } : {}),
    pricing_date: pricingTableDate,
    agents: estimates,
    totals: {
      agents: estimates.length,
      calls: sum((estimate) => estimate.calls),
      input_tokens: sum((estimate) => estimate.input_tokens),
      output_tokens: sum((estimate) => estimate.output_tokens),
      cache_read_tokens: sum((estimate) => estimate.cache_read_tokens),
      cost_usd: costs.some((cost) => cost === null) ? null : roundUsd(costs.reduce<number>((total, cost) => total + (cost ?? 0), 0)),
    },
    assumptions,
  };
}
