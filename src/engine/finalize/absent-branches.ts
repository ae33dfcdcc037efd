import { hasCommit } from '../../protocol/completion-report.js';
import type { StepDefinition } from '../step.js';
import { short, type FinalizeContext } from './context.js';

/**
 * E9 already-merged detection: an agent whose branch is gone (deleted after a merge, or a solo
 * agent that worked on the target) must have its reported commit in the target's history —
 * absent branches alone do not prove the work landed. An unreachable commit is a data-loss
 * error with the recovery command `git branch recover-<id> <sha>`.
 */
export const absentBranchesStep: StepDefinition<FinalizeContext> = {
  name: 'check-absent-branches',
  async run(context) {
    const absent = context.agents.filter((agent) => agent.tip === undefined);
    if (absent.length === 0 || context.mode === 'skip-merge') return undefined;
    const problems: string[] = [];
    const recovery: string[] = [];
    const verified: string[] = [];
    for (const agent of absent) {
      const repo = agent.repo;
      const commit = agent.report?.commit?.trim();
      if (!hasCommit(commit)) {
        problems.push(`agent ${agent.id}: branch ${agent.branch} does not exist and ${agent.report ? 'its report names no commit' : 'it has no completion report'} — there is nothing to merge and nothing proves its work is in ${repo.targetBranch}`);
        continue;
      }
      const resolved = await repo.git.tryRevParse(`${commit}^{commit}`);
      if (resolved === undefined) {
        problems.push(`agent ${agent.id}: branch ${agent.branch} does not exist and its reported commit ${commit} is not in the repository (lost unless another clone has it)`);
        continue;
      }
      if (await repo.git.isAncestor(resolved, `refs/heads/${repo.targetBranch}`)) {
        agent.merged = true;
        verified.push(agent.id);
        continue;
      }
      const command = `git branch recover-${agent.id} ${resolved}`;
      recovery.push(command);
      problems.push(`agent ${agent.id}: branch ${agent.branch} is gone and its commit ${short(resolved)} is NOT reachable from ${repo.targetBranch} — deleted without merging (data loss); recover with: ${command}`);
    }
    if (recovery.length > 0) context.result.recovery = [...(context.result.recovery ?? []), ...recovery];
    if (problems.length > 0) {
      return { status: 'failed', detail: `E9: ${problems.join('; ')}`, data: { problems, recovery, verified } };
    }
    return { status: 'success', detail: `E9: the work of ${verified.join(', ')} (branch gone) is in the target's history`, data: { verified } };
  },
};
