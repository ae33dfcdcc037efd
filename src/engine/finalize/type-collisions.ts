import { codeFamilyOf, detectTypeCollisions, isTestFile, packageOf, type CollisionReport } from '../../analysis/index.js';
import type { FinalizeAgent } from './context.js';
import type { StepDefinition } from '../step.js';
import { listForDetail, type FinalizeContext } from './context.js';

/**
 * E41 (finalize step 1.5, blocking): two agents adding the same top-level type, function or
 * constant name to one namespace in different files — the merge would compile to a duplicate
 * declaration although no file conflicts. Read from the agents' branches (analysis module).
 */
export const typeCollisionsStep: StepDefinition<FinalizeContext> = {
  name: 'check-type-collisions',
  async run(context) {
    const reports: Record<string, CollisionReport> = {};
    const found: string[] = [];
    for (const repo of context.repos) {
      const all = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined);
      if (all.length < 2 || repo.base === undefined) continue;
      // A collision needs two agents adding code to one namespace: only those are analysed.
      const agents = agentsSharingNamespaces(all);
      if (agents.length < 2) {
        reports[repo.key] = { collisions: [], valid: true };
        continue;
      }
      const report = await detectTypeCollisions({ git: repo.git, base: repo.base, agents: agents.map((agent) => ({ agentId: agent.id, ref: agent.tip! })) });
      reports[repo.key] = report;
      found.push(...report.collisions.map((collision) => `${collision.kind} ${collision.type_name} in ${collision.package || '.'} (${collision.agents.join(', ')}: ${collision.files.join(', ')}) — ${collision.resolution}`));
    }
    context.result.collision_reports = reports;
    if (Object.keys(reports).length === 0) return { status: 'skipped', detail: 'E41: fewer than two agent branches to compare' };
    if (found.length > 0) {
      context.block = { reason: 'E41: type collisions across agent branches', mergeState: 'idle' };
      return { status: 'failed', detail: `E41: ${found.length} declaration collision(s) across agent branches: ${listForDetail(found, 8)} — nothing was merged; rename or move the declarations to a scaffold`, data: reports };
    }
    return { status: 'success', detail: 'E41: no type/function/constant collisions across agent branches', data: reports };
  },
};

/**
 * The agents that changed non-test code in a namespace (package directory) another agent also
 * changed code in — from the diffs already computed (no git). Agents without a diff are kept.
 */
function agentsSharingNamespaces(agents: readonly FinalizeAgent[]): FinalizeAgent[] {
  const owners = new Map<string, Set<string>>();
  const namespacesOf = new Map<string, Set<string>>();
  for (const agent of agents) {
    const namespaces = new Set((agent.diff ?? []).filter((entry) => entry.status !== 'D' && codeFamilyOf(entry.path) !== undefined && !isTestFile(entry.path)).map((entry) => packageOf(entry.path)));
    namespacesOf.set(agent.id, namespaces);
    for (const namespace of namespaces) owners.set(namespace, (owners.get(namespace) ?? new Set()).add(agent.id));
  }
  return agents.filter((agent) => agent.diff === undefined || [...(namespacesOf.get(agent.id) ?? [])].some((namespace) => (owners.get(namespace)?.size ?? 0) > 1));
}
