import type { ImplManifest } from './schema/impl-schema.js';
import { agentsOfWave, findWave } from './waves.js';

/** E1 launch order of one wave, with why. */
export interface LaunchOrder {
  /** Agent IDs in launch order. */
  order: string[];
  /** Declaration order. */
  declared: string[];
  reordered: boolean;
  reason: string;
  /** Critical-path depth of each agent (1 = nothing waits for it). */
  depth: Record<string, number>;
}

/**
 * E1 agent launch prioritisation, pure. An agent's critical-path depth is 1 + the largest depth of
 * the agents that depend on it — across the whole manifest (`waves[].agents[].dependencies` and
 * the `depends_on` of the `file_ownership` rows it owns), so an agent whose output a long chain of
 * later work waits for launches first. Ties: fewer owned files first (lower risk), then
 * declaration order. Cycles are cut (a cycle adds nothing). `agent_launch_order` on the wave, when
 * given, puts the agents it lists first in that order. `prioritize: false` (`--no-prioritize`)
 * keeps declaration order.
 */
export function launchOrder(manifest: ImplManifest, waveNumber: number, options: { prioritize?: boolean } = {}): LaunchOrder {
  const agents = agentsOfWave(manifest, waveNumber);
  const declared = agents.map((agent) => agent.id ?? '').filter((id) => id !== '');
  const dependents = new Map<string, Set<string>>();
  const link = (dependency: string, dependent: string) => {
    if (dependency === dependent || dependency === '' || dependent === '') return;
    let set = dependents.get(dependency);
    if (!set) dependents.set(dependency, (set = new Set()));
    set.add(dependent);
  };
  for (const wave of manifest.waves ?? []) for (const agent of wave.agents ?? []) for (const dependency of agent.dependencies ?? []) link(dependency.trim(), agent.id ?? '');
  for (const row of manifest.file_ownership ?? []) for (const dependency of row.depends_on ?? []) link(dependency.trim(), row.agent ?? '');

  const memo = new Map<string, number>();
  const visiting = new Set<string>();
  const depthOf = (id: string): number => {
    const known = memo.get(id);
    if (known !== undefined) return known;
    if (visiting.has(id)) return 0;
    visiting.add(id);
    let deepest = 0;
    for (const dependent of dependents.get(id) ?? []) deepest = Math.max(deepest, depthOf(dependent));
    visiting.delete(id);
    memo.set(id, deepest + 1);
    return deepest + 1;
  };
  const depth = Object.fromEntries(declared.map((id) => [id, depthOf(id)]));
  const ownedCount = new Map(agents.map((agent) => [agent.id ?? '', (manifest.file_ownership ?? []).filter((row) => row.agent === agent.id && (row.wave === undefined || row.wave === waveNumber)).length || (agent.files ?? []).length]));

  const explicit = (findWave(manifest, waveNumber)?.agent_launch_order ?? []).map((id) => id.trim()).filter((id, index, list) => declared.includes(id) && list.indexOf(id) === index);
  let order: string[];
  let reason: string;
  if (options.prioritize === false) {
    order = [...declared];
    reason = 'declaration order (--no-prioritize)';
  } else {
    const ranked = [...declared].sort((left, right) => depth[right]! - depth[left]! || ownedCount.get(left)! - ownedCount.get(right)! || declared.indexOf(left) - declared.indexOf(right));
    order = [...explicit, ...ranked.filter((id) => !explicit.includes(id))];
    reason = explicit.length > 0 ? `agent_launch_order (${explicit.join(', ')}) first, then critical-path depth, then fewer owned files` : 'critical-path depth (deepest first), then fewer owned files, then declaration order';
  }
  return { order, declared, reordered: order.some((id, index) => id !== declared[index]), reason, depth };
}
