import { describe, expect, it } from 'vitest';
import { PolywaveError } from '../errors/polywave-error.js';
import { assignAgentIds } from './agent-ids.js';
import { agentIdPattern } from './schema/impl-schema.js';

function codeOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(PolywaveError.isInstance(error)).toBe(true);
    const polywaveError = error as PolywaveError;
    expect(polywaveError.exitCode).toBe(2);
    expect(polywaveError.findings).toHaveLength(1);
    expect(polywaveError.findings[0]?.code).toBe(polywaveError.code);
    return polywaveError.code;
  }
  throw new Error('expected an error');
}

describe('assignAgentIds sequential mode', () => {
  it('assigns A..Z then generations', () => {
    expect(assignAgentIds(3)).toEqual(['A', 'B', 'C']);
    const ids = assignAgentIds(28);
    expect(ids[25]).toBe('Z');
    // reference §10.30: the 27th sequential ID is A2
    expect(ids[26]).toBe('A2');
    expect(ids[27]).toBe('B2');
  });

  it('assigns 234 valid, distinct IDs ending with Z9', () => {
    const ids = assignAgentIds(234);
    expect(ids).toHaveLength(234);
    expect(ids[233]).toBe('Z9');
    expect(new Set(ids).size).toBe(234);
    for (const id of ids) expect(agentIdPattern.test(id)).toBe(true);
  });

  it('rejects 235 agents (I003) and non-positive counts (I001)', () => {
    expect(codeOf(() => assignAgentIds(235))).toBe('I003_AGENT_LIMIT_EXCEEDED');
    expect(codeOf(() => assignAgentIds(0))).toBe('I001_AGENT_COUNT_INVALID');
    expect(codeOf(() => assignAgentIds(-3))).toBe('I001_AGENT_COUNT_INVALID');
    expect(codeOf(() => assignAgentIds(2.5))).toBe('I001_AGENT_COUNT_INVALID');
    expect(codeOf(() => assignAgentIds(Number.NaN))).toBe('I001_AGENT_COUNT_INVALID');
  });

  it('uses the Go messages', () => {
    expect(() => assignAgentIds(0)).toThrow('count must be > 0, got 0');
    expect(() => assignAgentIds(235)).toThrow('count 235 exceeds maximum 234 agents (26 letters × 9 generations)');
  });
});

describe('assignAgentIds grouped mode', () => {
  it('gives categories letters in order of first appearance (reference §10.30)', () => {
    expect(assignAgentIds(5, ['', 'data', '', 'data', 'api'])).toEqual(['A', 'B', 'A2', 'B2', 'C']);
    expect(assignAgentIds(5, [[], ['data', 'x'], [''], ['data'], ['api']])).toEqual(['A', 'B', 'A2', 'B2', 'C']);
    expect(assignAgentIds(3, ['data', 'data', 'api'])).toEqual(['A', 'A2', 'B']);
  });

  it('checks the grouping length first (I002), an empty grouping included', () => {
    expect(codeOf(() => assignAgentIds(3, []))).toBe('I002_AGENT_COUNT_MISMATCH');
    expect(codeOf(() => assignAgentIds(2, ['a', 'b', 'c']))).toBe('I002_AGENT_COUNT_MISMATCH');
    expect(() => assignAgentIds(2, ['a'])).toThrow('grouping length (1) must match count (2)');
    // I001 comes before I002
    expect(codeOf(() => assignAgentIds(0, []))).toBe('I001_AGENT_COUNT_INVALID');
  });

  it('limits a category to 9 agents (I004), reporting the first such category', () => {
    expect(assignAgentIds(9, Array(9).fill('x'))[8]).toBe('A9');
    const grouping = [...Array(10).fill('small'), ...Array(10).fill('other')];
    expect(codeOf(() => assignAgentIds(20, grouping))).toBe('I004_CATEGORY_LIMIT_EXCEEDED');
    expect(() => assignAgentIds(20, grouping)).toThrow('category "small" has 10 agents, maximum is 9 per category');
  });

  it('limits the number of categories to 26 (I005)', () => {
    const categories = Array.from({ length: 27 }, (_, index) => `c${index}`);
    expect(codeOf(() => assignAgentIds(27, categories))).toBe('I005_CATEGORY_COUNT_EXCEEDED');
    expect(assignAgentIds(26, categories.slice(0, 26))[25]).toBe('Z');
  });

  it('checks the total limit before the category limits', () => {
    expect(codeOf(() => assignAgentIds(235, Array(235).fill('x')))).toBe('I003_AGENT_LIMIT_EXCEEDED');
  });
});
