import { describe, expect, it } from 'vitest';
import { emptyUsage, type AgentUsage } from './contract.js';
import { estimateCostUsd, findModelPrice, modelPrices } from './pricing.js';

const usage = (fields: Partial<AgentUsage>): AgentUsage => ({ ...emptyUsage(), ...fields });
const million = 1_000_000;

describe('estimateCostUsd', () => {
  it('prices Anthropic models per million tokens, cache reads and writes separately', () => {
    expect(estimateCostUsd('anthropic', 'claude-sonnet-4-5', usage({ inputTokens: million, outputTokens: million }))).toBe(18);
    expect(estimateCostUsd('anthropic', 'claude-sonnet-4-5-20250929', usage({ cacheReadTokens: million, cacheWriteTokens: million }))).toBe(0.3 + 3.75);
    expect(estimateCostUsd('anthropic', 'claude-haiku-4-5', usage({ inputTokens: 2 * million, outputTokens: 100_000 }))).toBe(2.5);
  });

  it('tells Opus 4.5+ apart from Opus 4 / 4.1 (longest prefix wins)', () => {
    expect(estimateCostUsd('anthropic', 'claude-opus-4-1-20250805', usage({ inputTokens: million }))).toBe(15);
    expect(estimateCostUsd('anthropic', 'claude-opus-4-20250514', usage({ inputTokens: million }))).toBe(15);
    expect(estimateCostUsd('anthropic', 'claude-opus-4-5', usage({ inputTokens: million }))).toBe(5);
    expect(estimateCostUsd('anthropic', 'claude-opus-4-6', usage({ outputTokens: million }))).toBe(25);
  });

  it('prices OpenAI models, mini variants not as their big siblings', () => {
    expect(estimateCostUsd('openai', 'gpt-4o', usage({ inputTokens: million, outputTokens: million }))).toBe(12.5);
    expect(estimateCostUsd('openai', 'gpt-4o-mini', usage({ inputTokens: million, outputTokens: million }))).toBe(0.75);
    expect(estimateCostUsd('openai', 'gpt-4o-2024-08-06', usage({ cacheReadTokens: million }))).toBe(1.25);
    expect(estimateCostUsd('openai', 'gpt-4.1', usage({ inputTokens: million }))).toBe(2);
    expect(estimateCostUsd('openai', 'gpt-4.1-mini-2025-04-14', usage({ inputTokens: million }))).toBe(0.4);
    expect(estimateCostUsd('openai', 'o3', usage({ outputTokens: million }))).toBe(8);
    expect(estimateCostUsd('openai', 'o3-2025-04-16', usage({ outputTokens: million }))).toBe(8);
    expect(estimateCostUsd('openai', 'o4-mini', usage({ inputTokens: million }))).toBe(1.1);
  });

  it('is 0 for local providers and undefined for unknown models', () => {
    expect(estimateCostUsd('ollama', 'qwen2.5-coder:32b', usage({ inputTokens: 5 * million }))).toBe(0);
    expect(estimateCostUsd('lmstudio', 'gpt-4o', usage({ inputTokens: million }))).toBe(0);
    expect(estimateCostUsd('openai-compatible', 'anything', usage({ inputTokens: million }))).toBe(0);
    expect(estimateCostUsd('openai', 'gpt-5-experimental', usage({ inputTokens: million }))).toBeUndefined();
    expect(estimateCostUsd('anthropic', 'claude-3-opus', usage({ inputTokens: million }))).toBeUndefined();
    expect(estimateCostUsd('openai', 'o30', usage({ inputTokens: million }))).toBeUndefined();
  });

  it('accepts Bedrock-style and gateway-style ids, and small counts round to micro-dollars', () => {
    expect(findModelPrice('us.anthropic.claude-sonnet-4-5-20250929-v1:0')).toBe(modelPrices['claude-sonnet-4']);
    expect(findModelPrice('anthropic/claude-haiku-4-5')).toBe(modelPrices['claude-haiku-4']);
    expect(findModelPrice('openai/gpt-4o-mini')).toBe(modelPrices['gpt-4o-mini']);
    expect(estimateCostUsd('anthropic', 'claude-sonnet-4-5', usage({ inputTokens: 1, outputTokens: 1 }))).toBe(0.000018);
    expect(estimateCostUsd('anthropic', 'claude-sonnet-4-5', emptyUsage())).toBe(0);
  });
});
