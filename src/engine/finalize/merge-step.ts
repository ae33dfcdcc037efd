import { isProtocolOwnedPath, normalizeReportedPath } from '../../protocol/conflicts.js';
import { adoptMergeLog, mergeAgents, type PathOwnership } from '../merge.js';
import type { StepDefinition } from '../step.js';
import { listForDetail, manifestOf, short, type FinalizeContext } from './context.js';
import { describeHops, writeState } from './state.js';
import { ensureTargetCheckout } from './target.js';
import { noteTargetMoved, verifyRepositories } from './tamper-step.js';

/**
 * Step 4: the IMPL goes to WAVE_MERGING with `merge_state: in_progress` (one locked manifest
 * edit), then one `git merge --no-ff` per agent in wave declaration order into the target, with
 * the merge log written after each (see mergeAgents: E9 skips what an interrupted run merged).
 * A conflict aborts that merge, leaves the target as it was before it, and blocks the wave.
 */
export const mergeStep: StepDefinition<FinalizeContext> = {
  name: 'merge-agents',
  async run(context) {
    const manifest = manifestOf(context);
    const pending = context.agents.filter((agent) => agent.tip !== undefined && !agent.merged);
    if (context.dryRun) {
      return { status: 'skipped', detail: `dry run: would merge ${pending.length} agent branch(es) with --no-ff: ${listForDetail(pending.map((agent) => agent.branch), 10)}` };
    }
    // Issue 11: the repository is checked again right before anything changes (the pre-merge
    // gates ran the agents' code since check-tamper); merge-agents on its own is checked here only.
    const untampered = await verifyRepositories(context, 'pre-merge');
    if (untampered.status === 'failed') return untampered;
    // The state write overlaps the merge's own probes; nothing merges before it is on disk. It
    // carries only the state: report fields wait for the next write (it is on the critical path).
    const writing = writeState(context, 'WAVE_MERGING', 'in_progress', [], { takePending: false });
    writing.catch(() => undefined);
    const owners = new Map<string, string[]>();
    for (const row of manifest.file_ownership ?? []) {
      if (row.wave !== context.wave || !row.file || !row.agent) continue;
      const file = normalizeReportedPath(row.file);
      owners.set(file, [...(owners.get(file) ?? []), row.agent]);
    }
    const ownership = (file: string): PathOwnership => ({
      agents: owners.get(normalizeReportedPath(file)) ?? [],
      protocolOwned: isProtocolOwnedPath(file) || normalizeReportedPath(file) === 'docs/CONTEXT.md',
    });

    let merged = 0;
    let skipped = 0;
    for (const repo of context.repos) {
      const candidates = context.agents.filter((agent) => agent.repo === repo && agent.tip !== undefined);
      if (candidates.length === 0) continue;
      if (repo.targetDir === '') await writing;
      const git = await ensureTargetCheckout(context, repo);
      const result = await mergeAgents({
        git,
        targetBranch: repo.targetBranch,
        wave: context.wave,
        // The tips the pre-merge checks judged are what gets merged.
        agents: candidates.map((agent) => ({ agent: agent.id, branch: agent.branch, tip: agent.tip!, ...(agent.data.task ? { task: agent.data.task } : {}) })),
        ready: writing,
        ...(candidates.every((agent) => agent.merged !== undefined) ? { known: { head: repo.targetTip, merged: new Set(candidates.filter((agent) => agent.merged).map((agent) => agent.branch)) } } : {}),
        logPath: await adoptMergeLog(repo.root, context.slug, context.wave),
        now: context.now,
        ownership,
        afterMerge: async (event) => {
          // Issue 16: merge progress per agent on the bus (the live board), once the merge log knows it.
          if (event.phase === 'logged') context.options.events?.emit({ v: 1, type: 'agent-merge', slug: context.slug, wave: context.wave, agent: event.agent, branch: event.branch, merged: merged + event.count, total: pending.length });
          await context.options.afterMerge?.(event);
        },
        ...(context.options.signal ? { signal: context.options.signal } : {}),
      });
      context.result.merge_result[repo.key] = result;
      // The record follows the target the orchestrator moved (a later re-run compares from there).
      if (result.target_after !== result.target_before || result.success) await noteTargetMoved(context, repo, result.target_after, { merged: result.success });
      merged += result.merged_count;
      skipped += result.skipped_count;
      for (const outcome of result.merges) {
        const agent = candidates.find((item) => item.id === outcome.agent);
        if (agent && (outcome.status === 'merged' || outcome.status === 'already-merged')) agent.merged = true;
      }
      if (!result.success) {
        const failed = result.merges.find((outcome) => outcome.status === 'conflict' || outcome.status === 'failed');
        context.block = { reason: `merge of ${failed?.branch ?? 'an agent branch'} failed`, mergeState: 'failed' };
        const detail = result.conflict
          ? `E12: ${result.conflict.explanation}`
          : `merging ${failed?.branch ?? '?'} failed: ${failed?.error ?? 'unknown error'} — ${repo.targetBranch} is at ${short(result.target_after)}; nothing after it was merged`;
        return { status: 'failed', detail, data: result };
      }
    }
    const write = await writing;
    return {
      status: 'success',
      detail: `${describeHops(write)}; merged ${merged} agent branch(es) with --no-ff into ${context.repos.map((repo) => repo.targetBranch).join(', ')}${skipped > 0 ? `; ${skipped} already merged by an earlier run (E9, skipped)` : ''}`,
      data: context.result.merge_result,
    };
  },
};
