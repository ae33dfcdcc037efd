import { clearActiveWave } from '../isolation-hook.js';
import type { StepDefinition } from '../step.js';
import { errorText, type FinalizeContext } from './context.js';
import { describeHops, flushPendingEdits, writeState } from './state.js';

/**
 * The wave is merged and verified: WAVE_VERIFIED with `merge_state: completed` (one locked
 * manifest edit), and the isolation guard is disarmed (`.polywave-state/active-wave` removed
 * from each repository, if it belongs to this IMPL). On the final wave the IMPL is ready for
 * close-impl (WAVE_VERIFIED → COMPLETE).
 */
export const markVerifiedStep: StepDefinition<FinalizeContext> = {
  name: 'mark-wave-verified',
  async run(context) {
    if (context.dryRun) return { status: 'skipped', detail: 'dry run: state not changed' };
    const write = await writeState(context, 'WAVE_VERIFIED', 'completed');
    const cleared: string[] = [];
    for (const repo of context.repos) {
      if (await clearActiveWave(repo.root, { slug: context.slug })) cleared.push(repo.root);
    }
    context.result.complete_ready = context.result.final_wave;
    const next = context.result.final_wave ? 'final wave: ready for close-impl (COMPLETE)' : `next: prepare-wave --wave ${context.wave + 1}`;
    return {
      status: 'success',
      detail: `${describeHops(write)}, merge_state completed${cleared.length > 0 ? '; isolation guard disarmed (active-wave marker removed)' : ''}; ${next}`,
      data: { ...write, active_wave_cleared: cleared, complete_ready: context.result.complete_ready },
    };
  },
};

/**
 * E7/E12: a step blocked the wave — the IMPL goes to BLOCKED (with a `merge_state` that the E9
 * consistency rule accepts: idle before any merge, failed after). Branches, worktrees and the
 * guard stay as they are, for the fix.
 */
export const markBlockedStep: StepDefinition<FinalizeContext> = {
  name: 'mark-blocked',
  async run(context) {
    const block = context.block;
    if (block === undefined) return undefined;
    if (context.dryRun) return { status: 'skipped', detail: `dry run: would set state BLOCKED (${block.reason})` };
    try {
      const write = await writeState(context, 'BLOCKED', block.mergeState);
      return { status: 'success', detail: `${describeHops(write)}${block.mergeState ? `, merge_state ${block.mergeState}` : ''}: ${block.reason}`, data: write };
    } catch (error) {
      return { status: 'warning', detail: `could not record BLOCKED: ${errorText(error)}` };
    }
  },
};

/** Writes report fields no state change took along (a run that stopped without blocking, or a single-purpose command). */
export const saveReportsStep: StepDefinition<FinalizeContext> = {
  name: 'save-reports',
  advisory: true,
  async run(context) {
    if (context.pendingEdits.length === 0 || context.dryRun) return undefined;
    try {
      const written = await flushPendingEdits(context);
      return { status: 'success', detail: `written to the manifest: ${written.join(', ')}` };
    } catch (error) {
      return { status: 'warning', detail: `could not write ${context.pendingEdits.map((item) => item.what).join(', ')}: ${errorText(error)}` };
    }
  },
};
