import path from 'node:path';
import { checkGitConfigOrigins, commonDirOfCheckout, gitConfigInWorkingTreeCode } from '../../git/config-origins.js';
import type { StepDefinition, StepOutcome } from '../step.js';
import type { FinalizeContext } from './context.js';

/** The config listings of a finalize run, by checkout (see {@link gitConfigRefusal}). */
const runListings = new WeakMap<FinalizeContext, Map<string, Promise<string>>>();

/**
 * Issue 11 (outside attack X10 N2a–d, R1): before finalize's first merge — and before its git
 * commands compare, commit or check out anything an agent wrote — no git config file of the
 * repository may lie in a working tree (the main checkout, an agent worktree, the target
 * checkout). A file that became a config origin during the wave (an owned `.gitconfig` reached by
 * an include, a solo agent's write) would name programs git runs here outside every sandbox.
 * Which files apply is asked from git in each of those checkouts (src/git/config-origins.ts).
 */
export async function gitConfigRefusal(context: FinalizeContext): Promise<StepOutcome | undefined> {
  const repos = context.repos.length > 0 ? context.repos : [context.primary];
  const targets = await Promise.all(
    repos.map(async (repo) => {
      const checkouts = new Set<string>([repo.targetDir, ...context.agents.filter((agent) => agent.repo === repo && agent.worktree).map((agent) => agent.worktreePath)]);
      checkouts.delete(repo.root);
      const commonDir = context.tamper.commonDirs.get(repo.root) ?? (await commonDirOfCheckout(repo.root)) ?? path.resolve(repo.root, await repo.git.commonDir());
      return { label: repos.length > 1 ? `${repo.key}: ` : '', root: repo.root, commonDir, checkouts: [...checkouts].filter((checkout) => checkout !== '') };
    }),
  );
  // One `git config --list` per checkout and run: check-git-config (before load-manifest) and the
  // check before check-tamper both list the main checkout; the second takes the first's listing.
  let listings = runListings.get(context);
  if (listings === undefined) runListings.set(context, (listings = new Map()));
  const check = await checkGitConfigOrigins(targets, context.env ?? process.env, listings);
  if (!check.refused) return undefined;
  return { status: 'failed', detail: check.detail.replace('Nothing was written. ', 'Nothing was merged. '), data: { code: gitConfigInWorkingTreeCode, includes: check.files } };
}

/** `step` preceded by the check (same step name: finalize's check-tamper refuses GIT_CONFIG_IN_WORKTREE first). */
export function withGitConfigCheck(step: StepDefinition<FinalizeContext>): StepDefinition<FinalizeContext> {
  return {
    ...step,
    async run(context) {
      return (await gitConfigRefusal(context)) ?? step.run(context);
    },
  };
}

/** The check as a step of its own, before load-manifest (the main checkout only: nothing else is known yet). */
export const gitConfigCheckStep: StepDefinition<FinalizeContext> = {
  name: 'check-git-config',
  async run(context) {
    return (await gitConfigRefusal(context)) ?? { status: 'success', detail: 'no git config file inside a working tree' };
  },
};
