/**
 * E40 `cost` per model call, from the backend's own usage reports.
 *
 * Backends report running totals (`turn-end` events: one per step of the ai-sdk tool loop, one per
 * assistant/result message of the claude-code and CLI agents). The meter turns each total into the
 * difference since the previous one — the usage of that call — prices it with the dated table
 * (pricing.ts) or takes the backend's own reported cost (Claude Code's `total_cost_usd`), and emits
 * one `cost` event. At the end, {@link CostMeter.settle} emits what the final outcome reports beyond
 * the last turn, so the sum of the `cost` events of an agent IS the agent's cost in the run summary.
 * Synchronous and allocation-light: it runs on every turn of every agent.
 */
import type { CostEvent, CostSource, E40Labels } from '../protocol/e40.js';
import type { AgentEvent, AgentOutcome, AgentUsage, ModelSpec } from './contract.js';
import type { BudgetAgentScope, BudgetBreach, BudgetTracker } from './budget.js';
import { estimateCostUsd, pricingTableDate } from './pricing.js';

/** The file in an agent's journal directory that keeps its `cost` events (one JSON line each). */
export const costJournalName = 'cost.jsonl';

/** Options of {@link createCostMeter}. */
export interface CostMeterOptions {
  spec: ModelSpec;
  /** The backend that actually runs (a test may inject another than the model names). */
  backend?: string;
  role: string;
  attempt: number;
  labels: E40Labels & { slug: string; agent: string };
  /** Receives every `cost` event (the bus). */
  emit?: (event: CostEvent) => void;
  /** Receives the USD of each priced call (budgets). */
  onCost?: (usd: number, event: CostEvent) => void;
}

/** A per-attempt meter. */
export interface CostMeter {
  /** A `turn-end`'s running total. */
  observe(turn: number, total: AgentUsage): void;
  /**
   * The final outcome's usage: emits the remainder beyond the last observed total and returns the
   * usage with `costUsd` = the sum of the emitted `cost` events (undefined when a call was unpriced).
   */
  settle(total: AgentUsage, turn: number): AgentUsage;
  /** USD metered so far (priced calls only). */
  readonly spentUsd: number;
  /** Every `cost` event emitted so far (the journal keeps them: `estimate` reads them as history). */
  readonly events: readonly CostEvent[];
}

const tokenKeys = ['inputTokens', 'outputTokens', 'cacheReadTokens', 'cacheWriteTokens'] as const;

function modelOf(spec: ModelSpec): string {
  if (spec.backend === 'ai-sdk') return spec.modelId;
  return ('modelId' in spec && spec.modelId ? spec.modelId : undefined) ?? spec.raw;
}

/** Round to a billionth of a dollar (keeps JSON readable; far below any price step). */
function roundUsd(value: number): number {
  return Math.round(value * 1e9) / 1e9;
}

/** A meter for one attempt of one agent. */
export function createCostMeter(options: CostMeterOptions): CostMeter {
  const { spec } = options;
  const backend = options.backend ?? spec.backend;
  const model = modelOf(spec);
  const provider = spec.backend === 'ai-sdk' ? spec.provider : spec.backend === 'claude-code' ? 'anthropic' : undefined;
  const last = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  let spent = 0;
  let unpriced = false;
  let emitted = 0;
  const events: CostEvent[] = [];

  const record = (turn: number, total: AgentUsage) => {
    const delta = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    let tokens = 0;
    for (const key of tokenKeys) {
      // Claude Code's result message replaces the summed per-message totals; never negative.
      delta[key] = Math.max(0, total[key] - last[key]);
      tokens += delta[key];
      last[key] = Math.max(last[key], total[key]);
    }
    let cost: number | null;
    let source: CostSource;
    // The backend's own cost (Claude Code's total_cost_usd) wins over the table where it is reported.
    const backendCost = spec.backend !== 'ai-sdk' && total.costUsd !== undefined ? total.costUsd : undefined;
    if (backendCost !== undefined) {
      // A running total: this call costs what it adds to what the events already carry. Never
      // negative (when the table priced earlier calls above the backend's figure, the events keep
      // the table's higher sum — and the run summary, being their sum, says the same).
      cost = roundUsd(Math.max(0, backendCost - spent));
      source = 'backend';
    } else if (spec.backend === 'script') {
      cost = 0;
      source = 'local';
    } else {
      const priced = spec.backend === 'ai-sdk' ? estimateCostUsd(spec.provider, spec.modelId, { ...delta }) : estimateCostUsd('anthropic', model, { ...delta });
      cost = priced === undefined ? null : priced;
      source = priced === undefined ? 'unpriced' : priced === 0 && spec.backend === 'ai-sdk' && spec.provider !== 'anthropic' && spec.provider !== 'openai' ? 'local' : 'pricing-table';
    }
    // No tokens and nothing to pay: not a model call (a script agent's turn, a repeated total).
    if (tokens === 0 && (cost === null || cost === 0)) return;
    if (cost === null) unpriced = true;
    else spent += cost;
    emitted += 1;
    const event: CostEvent = {
      v: 1,
      e40: true,
      type: 'cost',
      ...options.labels,
      role: options.role,
      attempt: options.attempt,
      turn,
      model,
      backend,
      ...(provider ? { provider } : {}),
      input_tokens: delta.inputTokens,
      output_tokens: delta.outputTokens,
      cache_read_tokens: delta.cacheReadTokens,
      cache_write_tokens: delta.cacheWriteTokens,
      cost_usd: cost,
      cost_source: source,
      pricing_date: pricingTableDate,
    };
    events.push(event);
    options.emit?.(event);
    if (cost !== null && cost > 0) options.onCost?.(cost, event);
  };

  return {
    observe(turn, total) {
      record(turn, total);
    },
    settle(total, turn) {
      record(turn, total);
      const usage: AgentUsage = { inputTokens: total.inputTokens, outputTokens: total.outputTokens, cacheReadTokens: total.cacheReadTokens, cacheWriteTokens: total.cacheWriteTokens };
      if (unpriced) return usage;
      if (emitted > 0) usage.costUsd = spent;
      else if (total.costUsd !== undefined) usage.costUsd = 0;
      else if (spec.backend === 'script') usage.costUsd = 0;
      else if (spec.backend === 'ai-sdk' && estimateCostUsd(spec.provider, spec.modelId, usage) !== undefined) usage.costUsd = 0;
      return usage;
    },
    get spentUsd() {
      return spent;
    },
    events,
  };
}

/**
 * A cost meter in front of an agent's event handler (single-attempt roles: Scaffold, Critic,
 * Integration): `onEvent` meters every `turn-end` and forwards the event; `settle` returns the
 * outcome's usage with the cost the emitted `cost` events add up to.
 */
export function meterAgentEvents(
  options: CostMeterOptions & { budget?: { tracker: BudgetTracker; scope: BudgetAgentScope } },
  forward?: (event: AgentEvent) => void,
): {
  onEvent: (event: AgentEvent) => void;
  settle: (outcome: Pick<AgentOutcome, 'usage' | 'turns'>) => AgentUsage;
  /** Issue 14: the run has no money left for this agent — do not launch it. */
  refused?: BudgetBreach;
  /** The signal to give the agent: `signal`, plus a budget stop when a budget is set. */
  signal: (signal: AbortSignal | undefined) => AbortSignal | undefined;
  /** The budget limit that stopped the agent, if one did (call after the agent ended). */
  breach: () => BudgetBreach | undefined;
} {
  const { budget, ...meterOptions } = options;
  const refused = budget?.tracker.checkLaunch(budget.scope);
  const stop = new AbortController();
  const account = budget && !refused ? budget.tracker.startAgent(budget.scope, (breach) => stop.abort(Object.assign(new Error(breach.message), { name: 'BudgetExceeded' }))) : undefined;
  const meter = createCostMeter({ ...meterOptions, ...(account ? { onCost: (usd: number) => account.charge(usd) } : {}) });
  return {
    onEvent: (event) => {
      if (event.type === 'turn-end') meter.observe(event.turn, event.usage);
      forward?.(event);
    },
    settle: (outcome) => {
      account?.end();
      return meter.settle(outcome.usage, outcome.turns);
    },
    ...(refused ? { refused } : {}),
    signal: (signal) => (account ? (signal ? AbortSignal.any([signal, stop.signal]) : stop.signal) : signal),
    breach: () => account?.breach,
  };
}

/** The signal for an agent metered with a budget: already aborted when the budget refused its launch. */
export function budgetSignal(metered: ReturnType<typeof meterAgentEvents>, signal: AbortSignal | undefined): AbortSignal | undefined {
  return metered.refused ? AbortSignal.abort(Object.assign(new Error(metered.refused.message), { name: 'BudgetExceeded' })) : metered.signal(signal);
}
