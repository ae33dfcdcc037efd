import type { StepDefinition } from '../step.js';
import { classifyCallerCascade, verifyBuild, verifyBuildCommands, type CallerCascadeClassification } from '../verify-build.js';
import { listForDetail, manifestOf, type FinalizeContext, type FinalizeRepo } from './context.js';
import { gatesForRepo } from './pre-merge-gates.js';
import { ensureTargetCheckout } from './target.js';

/** The test and lint commands for a repository (top-level fields for the primary one; scoped gates for the others). */
function commandsFor(context: FinalizeContext, repo: FinalizeRepo): { testCommand: string; lintCommand: string } {
  const manifest = manifestOf(context);
  if (repo.primary) return verifyBuildCommands(manifest);
  const gates = gatesForRepo(manifest.quality_gates?.gates ?? [], repo, context.repos.length);
  return verifyBuildCommands({ quality_gates: { gates } });
}

/** Records an E47 classification on the result (several failing runs add up). */
export function recordCascade(context: FinalizeContext, classification: CallerCascadeClassification): void {
  const errors = [...(context.result.caller_cascade_errors ?? []), ...classification.errors];
  context.result.caller_cascade_errors = errors;
  const genuine = errors.some((error) => error.owner === 'current-wave' || error.owner === 'earlier-wave');
  context.result.caller_cascade_only = errors.length > 0 && !genuine;
}

/** One-line E47 summary of the recorded classification. */
export function describeCascade(context: FinalizeContext): string {
  const errors = context.result.caller_cascade_errors ?? [];
  if (errors.length === 0) return 'no error could be located in a file';
  const cascadeFiles = [...new Set(errors.filter((error) => error.owner === 'later-wave' || error.owner === 'unowned').map((error) => error.file))];
  if (context.result.caller_cascade_only) {
    return `E47 caller cascade only: all ${errors.length} located error(s) are in files owned by later waves or by nobody (${listForDetail(cascadeFiles, 8)})`;
  }
  const own = [...new Set(errors.filter((error) => error.owner === 'current-wave' || error.owner === 'earlier-wave').map((error) => error.file))];
  return `genuine failure: error(s) in files of this or an earlier wave (${listForDetail(own, 8)})${cascadeFiles.length > 0 ? `; cascade errors too in ${listForDetail(cascadeFiles, 5)}` : ''}`;
}

/**
 * Step 5 (E10/E13): the merged target is verified unscoped — the whole project's test command and
 * lint command, in the target's checkout, never from a cache. A failure is classified by E47
 * (errors only in later-wave or unowned files = caller cascade) and blocks the wave; the
 * branches and worktrees stay for the fix.
 */
export const verifyBuildStep: StepDefinition<FinalizeContext> = {
  name: 'verify-build',
  async run(context) {
    if (context.dryRun) return { status: 'skipped', detail: 'dry run: nothing was merged, so nothing to verify' };
    const failures: string[] = [];
    for (const repo of context.repos) {
      const { testCommand, lintCommand } = commandsFor(context, repo);
      await ensureTargetCheckout(context, repo);
      const data = await verifyBuild({
        repoDir: repo.targetDir,
        testCommand,
        lintCommand,
        ...(context.env ? { env: context.env } : {}),
        ...(context.options.signal ? { signal: context.options.signal } : {}),
        ...(context.options.buildTimeoutMs ? { timeoutMs: context.options.buildTimeoutMs } : {}),
        now: context.now,
      });
      context.result.verify_build[repo.key] = data;
      if (data.test_passed && data.lint_passed) continue;
      recordCascade(context, classifyCallerCascade({ output: `${data.test_output ?? ''}\n${data.lint_output ?? ''}`, manifest: manifestOf(context), wave: context.wave, repoDir: repo.targetDir }));
      if (!data.test_passed) failures.push(`test \`${data.test_command}\` failed (exit ${data.test_exit_code ?? '?'}${data.test_error ? `, ${data.test_error}` : ''})`);
      if (!data.lint_passed) failures.push(`lint \`${data.lint_command}\` failed (exit ${data.lint_exit_code ?? '?'}${data.lint_error ? `, ${data.lint_error}` : ''})`);
    }
    const ran = Object.values(context.result.verify_build).filter((data) => data.test_command !== '' || data.lint_command !== '');
    if (failures.length > 0) {
      context.result.build_passed = false;
      context.block = { reason: 'post-merge verification failed', mergeState: 'failed' };
      return {
        status: 'failed',
        detail: `E10/E13: the merged ${context.repos.map((repo) => repo.targetBranch).join(', ')} does not verify: ${failures.join('; ')} — ${describeCascade(context)}. The merges stay; agent branches and worktrees are kept; fix on the target (POLYWAVE_ALLOW_MAIN_COMMIT=1) and re-run finalize-wave`,
        data: context.result.verify_build,
      };
    }
    context.result.build_passed = true;
    if (ran.length === 0) return { status: 'warning', detail: 'E13: no test_command or lint_command (nor test/lint gate) to verify the merged build with', data: context.result.verify_build };
    return { status: 'success', detail: `E10/E13: ${ran.map((data) => [data.test_command, data.lint_command].filter(Boolean).map((command) => `\`${command}\``).join(' + ')).join('; ')} passed on the merged target`, data: context.result.verify_build };
  },
};
