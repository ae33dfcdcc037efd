import type { StepDefinition } from '../step.js';
import { branchesMergedInto } from './git-batch.js';
import { loadDiffs } from './predict-conflicts.js';
import type { FinalizeContext } from './context.js';

/**
 * For the single-purpose commands (predict-conflicts, scan-stubs, validate-integration): which
 * agent branches are already in the target, and every agent's diff — one `for-each-ref --merged`
 * and one `diff-tree --stdin` per repository. Never fails.
 */
export const inspectBranchesStep: StepDefinition<FinalizeContext> = {
  name: 'inspect-branches',
  advisory: true,
  async run(context) {
    for (const repo of context.repos) {
      const mine = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined);
      if (mine.length === 0) continue;
      const merged = await branchesMergedInto(repo.git, `refs/heads/${repo.targetBranch}`, mine.map((agent) => agent.branch));
      for (const agent of mine) agent.merged = merged.has(agent.branch);
    }
    await loadDiffs(context);
    const present = context.agents.filter((agent) => agent.tip !== undefined);
    return {
      status: 'success',
      detail: `${present.length} agent branch(es)${present.some((agent) => agent.merged) ? ` (${present.filter((agent) => agent.merged).map((agent) => agent.id).join(', ')} already in the target)` : ''}; ${context.agents.length - present.length} without a branch`,
    };
  },
};
