import type { StepDefinition } from '../step.js';
import { branchesMergedInto, countCommitsBeyond } from './git-batch.js';
import { loadDiffs } from './predict-conflicts.js';
import { listForDetail, short, type FinalizeAgent, type FinalizeContext, type VerifyCommitsData } from './context.js';

/**
 * An agent that has not reported complete: no report yet (I4 says so — it may still be working)
 * or partial/blocked (E7 says so). An empty branch is expected then, not an isolation failure.
 */
function notReportedComplete(agent: FinalizeAgent): boolean {
  return agent.report?.status !== 'complete';
}

/**
 * I5 (E4 layer 4): every agent branch has at least one commit beyond the wave's base — counted
 * for all agents of a repository with one `rev-list`. Also learns which branches are already in
 * the target (E9: merged by an interrupted run) with one `for-each-ref --merged`.
 */
export const verifyCommitsStep: StepDefinition<FinalizeContext> = {
  name: 'verify-commits',
  async run(context) {
    const empty: FinalizeAgent[] = [];
    const warnings: string[] = [];
    const withBranch = context.agents.filter((agent) => agent.tip !== undefined);
    for (const repo of context.repos) {
      const mine = withBranch.filter((agent) => agent.repo === repo);
      const data: VerifyCommitsData = { base_commit: repo.base ?? '', agents: [] };
      context.result.verify_commits[repo.key] = data;
      if (mine.length === 0) continue;
      if (repo.base === undefined) {
        return { status: 'failed', detail: `cannot tell the base of wave ${context.wave} in ${repo.root}: no base_commit recorded and no common ancestor of ${repo.targetBranch} and the agent branches` };
      }
      // The diffs the next steps need are fetched alongside (one more process, in parallel).
      const [counts, merged] = await Promise.all([
        countCommitsBeyond(repo.git, repo.base, mine.map((agent) => agent.tip!)),
        branchesMergedInto(repo.git, `refs/heads/${repo.targetBranch}`, mine.map((agent) => agent.branch)),
        repo.primary ? loadDiffs(context) : Promise.resolve(undefined),
      ]);
      for (const agent of mine) {
        agent.commitCount = counts.get(agent.tip!) ?? 0;
        agent.merged = merged.has(agent.branch);
        data.agents.push({
          agent: agent.id,
          branch: agent.branch,
          commit_count: agent.commitCount,
          has_commits: agent.commitCount > 0,
          tip: agent.tip!,
          ...(agent.merged ? { already_merged: true } : {}),
          ...(repo.primary ? {} : { cross_repo: true }),
        });
        if (agent.commitCount === 0 && !notReportedComplete(agent)) empty.push(agent);
        const reported = agent.report?.commit?.trim();
        if (agent.commitCount > 0 && reported && reported !== 'uncommitted' && !agent.tip!.startsWith(reported)) {
          // The report names another commit: the agent committed after reporting, or amended/rebased.
          const known = await repo.git.tryRevParse(`${reported}^{commit}`);
          if (known === undefined || !(await repo.git.isAncestor(known, agent.tip!))) {
            warnings.push(`agent ${agent.id}: reported commit ${short(reported)} is not on ${agent.branch} (tip ${short(agent.tip)}) — the branch tip is what gets merged`);
          }
        }
      }
    }
    const missing = context.agents.filter((agent) => agent.tip === undefined && context.mode === 'full');
    if (empty.length > 0) {
      const names = empty.map((agent) => `${agent.id} (${agent.branch} at ${short(agent.tip)} = base ${short(agent.repo.base)})`);
      return {
        status: 'failed',
        detail:
          `I5: ${empty.length} agent branch(es) have no commits beyond the wave base: ${listForDetail(names)}. ` +
          `An agent commits its work on its own branch in its own worktree before reporting; an empty branch means the work was never committed there — ` +
          `if the agent committed somewhere else (the main checkout, another branch), worktree isolation failed (E4): move those commits onto its branch (git cherry-pick) and re-run finalize-wave; ` +
          `if it never committed, re-run the agent. Nothing was merged.`,
        data: { agents: empty.map((agent) => agent.id), verify_commits: context.result.verify_commits },
      };
    }
    const total = withBranch.reduce((sum, agent) => sum + (agent.commitCount ?? 0), 0);
    const merged = withBranch.filter((agent) => agent.merged).map((agent) => agent.id);
    const notes = [
      ...(merged.length > 0 ? [`already in the target (E9, merged by an earlier run): ${merged.join(', ')}`] : []),
      ...(missing.length > 0 ? [`branch already gone: ${missing.map((agent) => agent.id).join(', ')}`] : []),
      ...warnings,
    ];
    return {
      status: warnings.length > 0 ? 'warning' : 'success',
      detail: `${withBranch.length} agent branch(es) with ${total} commit(s) beyond the base (I5)${notes.length > 0 ? `; ${notes.join('; ')}` : ''}`,
      data: context.result.verify_commits,
    };
  },
};
