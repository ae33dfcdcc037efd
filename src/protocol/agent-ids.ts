import type { Finding } from '../errors/finding.js';
import { PolywaveError } from '../errors/polywave-error.js';
import { agentIdPattern } from './schema/impl-schema.js';

/** Most agents one manifest can name: 26 letters × 9 generations (`A`…`Z9`). */
export const maxAgentIds = 234;
/** Most agents one category (one letter) can hold: the bare letter plus generations 2–9. */
export const maxAgentsPerCategory = 9;
/** Most categories in grouped mode: one letter each. */
export const maxCategories = 26;

/**
 * One agent's grouping entry: a category name, or a list of tags whose first tag is the
 * category (the Go `[][]string` form). `''` or `[]` is the unnamed category.
 */
export type AgentGrouping = string | readonly string[];

function fail(code: string, message: string): never {
  const finding: Finding = { code, message, severity: 'error' };
  throw new PolywaveError({ code, message, exitCode: 2, findings: [finding] });
}

function categoryOf(entry: AgentGrouping): string {
  return typeof entry === 'string' ? entry : (entry[0] ?? '');
}

/** The ID for letter index `letter` (0 = A) and generation `generation` (1 = bare letter). */
function idFor(letter: number, generation: number): string {
  const base = String.fromCharCode(65 + letter);
  return generation === 1 ? base : `${base}${generation}`;
}

/**
 * Assigns agent IDs matching `^[A-Z][2-9]?$` (reference §9.5, `assign-agent-ids`).
 *
 * - Sequential mode (no `grouping`): `A…Z`, then `A2…Z2`, …, up to `Z9` (the 27th ID is `A2`).
 * - Grouped mode: categories take letters in order of first appearance and each further agent
 *   of a category the next generation: `['', 'data', '', 'data', 'api']` → `A, B, A2, B2, C`.
 *
 * Checks, in this order (each throws a PolywaveError with exit code 2 and one finding):
 * I001 count not a positive integer; I002 `grouping` given with a length ≠ count (an empty
 * grouping array counts as grouped mode); I003 count > 234; I004 a category with > 9 agents
 * (the first such category in order of appearance — Go reports a random one); I005 > 26
 * categories; I006 a generated ID fails the pattern (cannot happen after the checks above).
 */
export function assignAgentIds(count: number, grouping?: readonly AgentGrouping[]): string[] {
  if (!Number.isInteger(count) || count <= 0) fail('I001_AGENT_COUNT_INVALID', `count must be > 0, got ${count}`);
  if (grouping !== undefined && grouping.length !== count) {
    fail('I002_AGENT_COUNT_MISMATCH', `grouping length (${grouping.length}) must match count (${count})`);
  }
  if (count > maxAgentIds) {
    fail('I003_AGENT_LIMIT_EXCEEDED', `count ${count} exceeds maximum ${maxAgentIds} agents (26 letters × 9 generations)`);
  }

  let ids: string[];
  if (grouping === undefined) {
    ids = Array.from({ length: count }, (_, index) => idFor(index % 26, Math.floor(index / 26) + 1));
  } else {
    const categories = grouping.map(categoryOf);
    const sizes = new Map<string, number>();
    for (const category of categories) sizes.set(category, (sizes.get(category) ?? 0) + 1);
    for (const [category, size] of sizes) {
      if (size > maxAgentsPerCategory) {
        fail('I004_CATEGORY_LIMIT_EXCEEDED', `category ${JSON.stringify(category)} has ${size} agents, maximum is ${maxAgentsPerCategory} per category`);
      }
    }
    if (sizes.size > maxCategories) {
      fail('I005_CATEGORY_COUNT_EXCEEDED', `grouped mode requires ≤ ${maxCategories} distinct categories, got ${sizes.size}`);
    }
    const letters = new Map<string, number>([...sizes.keys()].map((category, index) => [category, index]));
    const generations = new Map<string, number>();
    ids = categories.map((category) => {
      const generation = (generations.get(category) ?? 0) + 1;
      generations.set(category, generation);
      return idFor(letters.get(category)!, generation);
    });
  }

  ids.forEach((id, index) => {
    if (!agentIdPattern.test(id)) fail('I006_INVALID_AGENT_ID_GENERATED', `generated invalid agent ID ${JSON.stringify(id)} at index ${index}`);
  });
  return ids;
}
