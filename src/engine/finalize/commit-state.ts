import path from 'node:path';
import { classifyDirtyTree } from '../prepare/tree-steps.js';
import type { StepDefinition } from '../step.js';
import { canonicalPath } from '../worktrees.js';
import { errorText, listForDetail, short, type FinalizeContext } from './context.js';
import { noteTargetMoved } from './tamper-step.js';

/**
 * Issue 13: after a verified wave, the state finalize-wave wrote (the IMPL manifest: state,
 * merge_state, reports, stub/integration reports; anything else under docs/IMPL/ and
 * docs/CONTEXT.md) is committed in the main checkout holding the IMPL, so the tree is left clean —
 * as prepare-wave's `--commit-state` does. Runtime state under `.polywave-state/` is never
 * committed here (E38: the gate cache is not). User files are never committed. Only when the
 * checked-out branch is the wave's target: a wave merged elsewhere (--merge-target) never moves
 * the user's checkout.
 *
 * Not in a PROGRAM tier (`concurrentRefs`): main must not move while the tier's IMPLs run. Not
 * with `commitState: false` or a dry run. Advisory: a failed commit leaves the files as they were.
 */
export const commitStateStep: StepDefinition<FinalizeContext> = {
  name: 'commit-state',
  advisory: true,
  async run(context) {
    if (context.dryRun) return undefined;
    if (context.options.commitState === false) return { status: 'skipped', detail: '--commit-state=false: the state change is left uncommitted' };
    if (context.options.concurrentRefs !== undefined) return { status: 'skipped', detail: 'PROGRAM tier: the main checkout must not move; the state change is left uncommitted' };
    const implRoot = await canonicalPath(await context.gitAt(path.dirname(context.implPath)).topLevel());
    const repo = context.repos.find((item) => item.root === implRoot);
    const git = repo?.git ?? context.gitAt(implRoot);
    const dirty = await classifyDirtyTree({ key: '', root: implRoot, git, primary: true }, context.implPath);
    const files = dirty.owned;
    if (files.length === 0) return { status: 'success', detail: 'nothing to commit: the IMPL state is already committed' };
    const branch = await git.currentBranch();
    if (repo === undefined || branch === undefined || branch !== repo.targetBranch) {
      // The wave merged into another branch than the one checked out here (--merge-target): the user's checkout does not move.
      return { status: 'skipped', detail: `the wave merged into ${repo?.targetBranch ?? 'another repository'}, not the checked-out ${branch ?? 'detached HEAD'}: the state change (${listForDetail(files)}) is left uncommitted`, data: { files } };
    }
    try {
      await git.add(files, { force: true });
      const commit = await git.commit({
        message: `chore: update Polywave state after wave ${context.wave} (finalize-wave)`,
        paths: files,
        env: { POLYWAVE_ALLOW_MAIN_COMMIT: '1' },
      });
      // The tamper record follows: a re-run (E9) must not take this commit for a foreign one.
      await noteTargetMoved(context, repo, commit, { merged: true });
      return { status: 'success', detail: `committed Polywave state: ${listForDetail(files)} (${short(commit)}) on ${branch}`, data: { files, commit, branch } };
    } catch (error) {
      return { status: 'warning', detail: `could not commit the Polywave state (${listForDetail(files)}): ${errorText(error)} — commit it yourself`, data: { files } };
    }
  },
};
