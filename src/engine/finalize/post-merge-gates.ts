import { toGoGateResult } from '../../gates/go-compat.js';
import { filterGatesByTiming, runGates } from '../../gates/run-gates.js';
import type { StepDefinition } from '../step.js';
import { classifyCallerCascade } from '../verify-build.js';
import { listForDetail, manifestOf, type FinalizeContext } from './context.js';
import { gatesForRepo } from './pre-merge-gates.js';
import { ensureTargetCheckout } from './target.js';
import { describeCascade, recordCascade } from './verify-build-step.js';

/**
 * Step 5.5 (E21): `timing: post-merge` gates on the merged target — never from the cache (E38:
 * the merged tree is new). A required failure is classified by E47 and blocks the wave.
 * A solo wave (I6: one agent committing on the target itself) has no worktree where pre-merge gates
 * could run before a merge: its pre-merge gates run here too, on the target, so none is skipped.
 */
export const postMergeGatesStep: StepDefinition<FinalizeContext> = {
  name: 'run-post-merge-gates',
  async run(context) {
    const manifest = manifestOf(context);
    const solo = context.mode === 'solo';
    const all = solo ? [...(manifest.quality_gates?.gates ?? [])] : filterGatesByTiming(manifest.quality_gates?.gates ?? [], 'post-merge');
    if (all.length === 0) return { status: 'skipped', detail: solo ? 'no quality gates' : 'no post-merge quality gates' };
    if (context.dryRun) return { status: 'skipped', detail: `dry run: ${all.length} post-merge gate(s) not run (nothing was merged)` };
    const failures: string[] = [];
    const warnings: string[] = [];
    let count = 0;
    for (const repo of context.repos) {
      const gates = gatesForRepo(all, repo, context.repos.length);
      if (gates.length === 0) continue;
      await ensureTargetCheckout(context, repo);
      const run = await runGates({
        repoDir: repo.targetDir,
        gates,
        ...(solo ? {} : { timing: 'post-merge' as const }),
        noCache: true,
        // Merged agent code on the target checkout: in a throwaway copy of it, nothing persists (X3 #18).
        throwawayCheckout: true,
        ...(context.options.signal ? { signal: context.options.signal } : {}),
        ...(context.options.events ? { events: context.options.events, labels: { slug: context.slug, wave: context.wave, scope: 'post-merge' } } : {}),
        ...(context.env ? { env: context.env } : {}),
        ...(context.options.gateTimeoutMs ? { defaultTimeoutMs: context.options.gateTimeoutMs } : {}),
        now: context.now,
        configSearchDirs: [repo.root],
      });
      context.result.gate_results[repo.key] = [...(context.result.gate_results[repo.key] ?? []), ...run.results.map(toGoGateResult)];
      count += run.results.length;
      for (const result of run.results) {
        if (result.passed) continue;
        const what = `${result.type} gate \`${result.command}\` ${result.timed_out ? 'timed out' : `exited ${result.exit_code}`}`;
        if (!result.required) {
          warnings.push(`${what} (optional)`);
          continue;
        }
        failures.push(what);
        recordCascade(context, classifyCallerCascade({ output: result.output, manifest, wave: context.wave, repoDir: repo.targetDir }));
      }
    }
    if (failures.length > 0) {
      context.block = { reason: 'post-merge gate failed', mergeState: 'failed' };
      return {
        status: 'failed',
        detail: `E21: required post-merge gate(s) failed on the merged target: ${listForDetail(failures, 8)} — ${describeCascade(context)}`,
        data: { failures, warnings },
      };
    }
    const what = solo ? 'gate(s) of the solo wave (pre- and post-merge, on the checkout it committed to)' : 'post-merge gate(s)';
    return { status: warnings.length > 0 ? 'warning' : 'success', detail: `E21: ${count} ${what} passed (uncached)${warnings.length > 0 ? `; ${warnings.join('; ')}` : ''}` };
  },
};

/**
 * E47 step 6a: when post-merge verification failed only in files owned by later waves (or by
 * nobody), a caller-cascade hotfix may repair it. This engine has no hotfix agent runtime: the
 * step reports the errors and files (`--dry-run` shape of the Go tool) for the orchestrator.
 */
export const cascadeHotfixStep: StepDefinition<FinalizeContext> = {
  name: 'apply-cascade-hotfix',
  run(context) {
    if (!context.result.caller_cascade_only) return undefined;
    const errors = context.result.caller_cascade_errors ?? [];
    const files = [...new Set(errors.map((error) => error.file))].sort();
    return {
      status: 'skipped',
      detail: `E47: ${errors.length} error(s) only in later-wave/unowned files (${listForDetail(files, 8)}): caller cascade of this wave's signature changes — the finalize-wave command runs the E47 hotfix agent on them next (--model; --no-hotfix skips it); otherwise fix those callers on the target (POLYWAVE_ALLOW_MAIN_COMMIT=1), then re-run finalize-wave`,
      data: { step: 'apply-cascade-hotfix', dry_run: true, error_count: errors.length, files, errors },
    };
  },
};
