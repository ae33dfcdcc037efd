import path from 'node:path';
import { finalizeWave, type FinalizeWaveOptions } from '../../engine/finalize-wave.js';
import { selectFinalizeRepo } from '../../engine/finalize/cross-repo.js';
import type { MergeProgressEvent } from '../../engine/merge.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { loadImpl } from '../../store/manifest-file.js';
import { projectRootOf } from '../../store/program-impl-docs.js';
import { withRunLock } from '../run-lock.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal, progressPrinter, repoDirOption, waveOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';
import { unsafeNoSandboxFrom } from '../sandbox-option.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';

/**
 * Test hook for crash safety (read here, in the CLI, and passed down as an option):
 * `POLYWAVE_TEST_CRASH_AFTER_MERGE=k` SIGKILLs this process right after the k-th merge of the
 * run has been logged; `k:merged` right after the merge commit, before the log knows it.
 */
export function crashHookFromEnv(env: CommandIo['env']): ((event: MergeProgressEvent) => void) | undefined {
  const value = env.POLYWAVE_TEST_CRASH_AFTER_MERGE?.trim();
  if (!value) return undefined;
  const match = /^(\d+)(?::(merged|logged))?$/.exec(value);
  if (!match) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `POLYWAVE_TEST_CRASH_AFTER_MERGE must be <k> or <k>:merged, got "${value}"` });
  const count = Number(match[1]);
  const phase = match[2] ?? 'logged';
  return (event) => {
    if (event.count === count && event.phase === phase) process.kill(process.pid, 'SIGKILL');
  };
}

/** The finalize options every finalize-family command shares (wave, repo dir, merge target, env, clock, progress). */
export function finalizeOptionsFrom(command: string, args: string[], options: Record<string, unknown>, io: CommandIo, settings: { waveRequired?: boolean } = {}): FinalizeWaveOptions {
  const implPath = implPathFrom(args, io);
  const wave = settings.waveRequired === false && options.wave === undefined ? 0 : waveOption(options);
  const repoDir = repoDirOption(options, io);
  const mergeTarget = typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? options.mergeTarget.trim() : undefined;
  return {
    implPath,
    wave,
    ...(repoDir ? { repoDir } : {}),
    ...(mergeTarget ? { mergeTarget } : {}),
    env: io.env,
    now: io.now,
    ...(options.jsonOnly === true ? {} : { onStep: progressPrinter(command, io) }),
  };
}

/**
 * `finalize-wave <impl> --wave N [--merge-target B] [--skip-merge] [--dry-run] [--no-cache]
 * [--require-no-stubs] [--enforce-integration] [--accept-changes] [--commit-state|--no-commit-state]
 * [--cross-repo-verify] [--json-only] [--repo-dir D]` — verify, predict,
 * gate, merge, verify the merge, mark, clean up. Prints the FinalizeWaveResult JSON with every
 * step's status — on failure too (the Go tool prints `null`); exit 1 when a step failed.
 */
async function finalizeWaveCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const base = finalizeOptionsFrom('finalize-wave', args, options, io);
  const manifest = requireManifest((await loadImpl(base.implPath)).parsed, base.implPath);
  // E51: on a cross-repo wave, pick the primary repository (or refuse a --repo-dir owning nothing).
  const selection = await selectFinalizeRepo({ manifest, implPath: base.implPath, wave: base.wave, ...(base.repoDir ? { repoDir: base.repoDir } : {}), env: io.env });
  if (selection.repoDir) base.repoDir = selection.repoDir;
  if (selection.note) io.stderr(`finalize-wave: ${selection.note}\n`);
  const afterMerge = crashHookFromEnv(io.env);
  const maxRetries = options.maxGateRetries === undefined ? 2 : Number(options.maxGateRetries);
  if (!Number.isInteger(maxRetries) || maxRetries < 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `--max-gate-retries: a non-negative integer, got "${String(options.maxGateRetries)}"` });
  const interrupt = interruptSignal();
  try {
    const finalize = (extra: Partial<FinalizeWaveOptions> = {}) => finalizeWave({
      ...base,
      skipMerge: options.skipMerge === true,
      dryRun: options.dryRun === true,
      noCache: options.cache === false,
      requireNoStubs: options.requireNoStubs === true,
      ...(options.strictOwnership === true ? { strictOwnership: true } : {}),
      enforceIntegration: options.enforceIntegration === true,
      acceptChanges: options.acceptChanges === true,
      // Issue 13: the state change is committed after a verified wave unless --no-commit-state.
      // --cross-repo-verify (Go) is accepted: every repository of a cross-repo wave is always verified (verify-build and post-merge gates per repository).
      commitState: options.commitState !== false,
      ...(afterMerge ? { afterMerge } : {}),
      signal: interrupt.signal,
      ...extra,
    });
    let result = await finalize();
    // What the E21 repair and E47 hotfix agents run with.
    const agentRun = {
      implPath: base.implPath,
      wave: base.wave,
      manifest,
      repoRoot: base.repoDir ?? projectRootOf(base.implPath, path.dirname(base.implPath)),
      ...(typeof options.model === 'string' && options.model.trim() !== '' ? { model: options.model.trim() } : {}),
      env: io.env,
      ...(unsafeNoSandboxFrom(options, io) ? { unsafeNoSandbox: true } : {}),
      signal: interrupt.signal,
      log: (line: string) => {
        if (options.jsonOnly !== true) io.stderr(`finalize-wave: ${line}\n`);
      },
    };
    // E21 closed-loop gate retry (the CLI path): a repair agent per agent whose required pre-merge gate failed, then finalize again.
    if (!result.success && result.failed_step?.step === 'run-gates' && options.gateRetry !== false && options.dryRun !== true && options.skipMerge !== true) {
      const { closedLoopGateRetry } = await import('../../orchestrator/gate-repair.js');
      const repair = await closedLoopGateRetry(result, { ...agentRun, maxRetries, finalize: () => finalize() });
      result = { ...repair.result, gate_retry: { attempts: repair.attempts, ...(repair.skipped ? { skipped: repair.skipped } : {}) } } as typeof result;
    }
    // E47: a build failing only in later-wave/unowned callers gets the hotfix agent on the target, then finalize again.
    if (!result.success && result.failed_step?.step === 'verify-build' && result.caller_cascade_only === true && options.hotfix !== false && options.dryRun !== true) {
      const { applyCascadeHotfix } = await import('../../orchestrator/cascade-hotfix.js');
      // A commit on top of the merged target is accepted by the tamper check (and listed); anything else the agent touched is not.
      const fixed = await applyCascadeHotfix(result, { ...agentRun, finalize: () => finalize() });
      result = { ...fixed.result, cascade_hotfix: fixed.hotfix } as typeof result;
    }
    printJson(io, result);
    if (options.jsonOnly !== true) {
      if (result.stub_report && result.stub_report.hits.length > 0 && result.stub_table) io.stderr(`\n${result.stub_table}\n`);
      if (!result.success && result.failed_step) io.stderr(`\nfinalize-wave: wave ${result.wave} not finalized — [${result.failed_step.step}] ${result.failed_step.detail}\n`);
      for (const command of result.recovery ?? []) io.stderr(`recover: ${command}\n`);
    }
    return result.success ? 0 : 1;
  } finally {
    interrupt.dispose();
  }
}

/** attack-serve-17 X1: the plan's run lock (the one `polywave run` and `polywave serve` take) for the command's life: a second run of the plan is RUN_IN_PROGRESS (exit 2), nothing changed. A dry run changes nothing and takes no lock. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  waveOption(options);
  await refuseImplOfRunningProgram(implPath, { command: 'finalize-wave', cwd: io.cwd, mergeTarget: options.mergeTarget, env: io.env });
  if (options.dryRun === true) return finalizeWaveCommand(args, options, io);
  return withRunLock(repoDirOption(options, io) ?? io.cwd, implPath, () => finalizeWaveCommand(args, options, io));
}
