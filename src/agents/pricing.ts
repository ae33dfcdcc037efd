/**
 * Token prices for the cost estimate of agent runs (reference/agents.md §2.8: the Go tool had no
 * cost accounting at all).
 *
 * Prices are list prices in USD per million tokens as published by Anthropic and OpenAI, checked
 * in January 2026. They change; an estimate is only as good as this table, so unknown models give
 * `undefined` (no cost shown) rather than a guess. Local servers (ollama, lmstudio, any
 * openai-compatible endpoint) cost nothing per token.
 *
 * Token convention (same as {@link AgentUsage}): `inputTokens` are the *uncached* input tokens
 * (Anthropic's `input_tokens`); cache reads and cache writes are counted separately. A backend
 * whose provider reports an inclusive prompt count (OpenAI's `prompt_tokens`) subtracts the
 * cached part before filling AgentUsage.
 */
import type { AgentUsage } from './contract.js';

/**
 * The date the prices below were checked against the providers' published lists (ISO date).
 * Every E40 `cost` event carries it (`pricing_date`), so a stored cost can be re-priced when the
 * table changes. Update it together with the table.
 */
export const pricingTableDate = '2026-01-15';

export interface ModelPrice {
  /** USD per million uncached input tokens. */
  input: number;
  /** USD per million output tokens (reasoning tokens are billed as output). */
  output: number;
  /** USD per million cached input tokens read. */
  cacheRead: number;
  /** USD per million tokens written to the cache (Anthropic 5-minute cache; OpenAI caches for free → input price). */
  cacheWrite: number;
}

/**
 * Model-id prefixes → price; the longest matching prefix wins (so `gpt-4o-mini` is not priced
 * as `gpt-4o`, and `claude-opus-4-5` not as `claude-opus-4`). Date suffixes
 * (`claude-sonnet-4-5-20250929`) and Bedrock-style ids (`us.anthropic.claude-…`) match too.
 * Long-context surcharges (Sonnet above 200k input tokens) are not modelled.
 */
export const modelPrices: Readonly<Record<string, ModelPrice>> = Object.freeze({
  // Anthropic — https://www.anthropic.com/pricing (January 2026)
  'claude-opus-4': { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 }, // Opus 4 and 4.1
  'claude-opus-4-5': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'claude-opus-4-6': { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  'claude-sonnet-4': { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 }, // Sonnet 4, 4.5, 4.6
  'claude-haiku-4': { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 }, // Haiku 4.5
  // OpenAI — https://openai.com/api/pricing (January 2026)
  'gpt-4o': { input: 2.5, output: 10, cacheRead: 1.25, cacheWrite: 2.5 },
  'gpt-4o-mini': { input: 0.15, output: 0.6, cacheRead: 0.075, cacheWrite: 0.15 },
  'gpt-4.1': { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2 },
  'gpt-4.1-mini': { input: 0.4, output: 1.6, cacheRead: 0.1, cacheWrite: 0.4 },
  'gpt-4.1-nano': { input: 0.1, output: 0.4, cacheRead: 0.025, cacheWrite: 0.1 },
  'o3': { input: 2, output: 8, cacheRead: 0.5, cacheWrite: 2 },
  'o3-mini': { input: 1.1, output: 4.4, cacheRead: 0.55, cacheWrite: 1.1 },
  'o3-pro': { input: 20, output: 80, cacheRead: 20, cacheWrite: 20 },
  'o4-mini': { input: 1.1, output: 4.4, cacheRead: 0.275, cacheWrite: 1.1 },
});

const localProviders: ReadonlySet<string> = new Set(['ollama', 'lmstudio', 'openai-compatible', 'script']);

/** The price entry for a model id (longest prefix match), or undefined. */
export function findModelPrice(modelId: string): ModelPrice | undefined {
  // `us.anthropic.claude-…-v1:0` (Bedrock) and `anthropic/claude-…` (gateways) → the bare id.
  const bare = modelId.trim().toLowerCase().replace(/^.*?(?:anthropic[./]|openai\/)/, '');
  let best: string | undefined;
  for (const prefix of Object.keys(modelPrices)) {
    if (!bare.startsWith(prefix)) continue;
    // A number must not continue: `o3` matches `o3-2025-04-16` but not `o30`.
    if (/[0-9]$/.test(prefix) && /^[0-9]/.test(bare.slice(prefix.length))) continue;
    if (best === undefined || prefix.length > best.length) best = prefix;
  }
  return best === undefined ? undefined : modelPrices[best];
}

/**
 * Estimated cost in USD of `usage` on `provider`/`modelId`: 0 for local providers, undefined for
 * a model the table does not know.
 */
export function estimateCostUsd(provider: string, modelId: string, usage: AgentUsage): number | undefined {
  if (localProviders.has(provider)) return 0;
  const price = findModelPrice(modelId);
  if (!price) return undefined;
  const dollars =
    (usage.inputTokens * price.input + usage.outputTokens * price.output + usage.cacheReadTokens * price.cacheRead + usage.cacheWriteTokens * price.cacheWrite) / 1_000_000;
  // Round to a millionth of a dollar so sums of floats stay readable in JSON.
  return Math.round(dollars * 1_000_000) / 1_000_000;
}
