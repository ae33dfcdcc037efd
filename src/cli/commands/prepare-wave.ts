import { prepareWave } from '../../engine/prepare-wave.js';
import type { StepResult } from '../../engine/step.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { loadImpl } from '../../store/manifest-file.js';
import { acquireRunLock } from '../run-lock.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireManifest } from './shared.js';
import { repoDirOption } from './repo-dir-option.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';

/** Reads `--wave` (commander already parsed it as a non-negative integer). */
export function waveOption(options: Record<string, unknown>): number {
  const wave = options.wave;
  if (typeof wave !== 'number' || wave < 1) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--wave is required (a wave number >= 1)' });
  return wave;
}

// In its own module so that commands which need only this do not load prepare-wave's engine.
export { repoDirOption };

/** Progress line on stderr: `prepare-wave: [step] status — detail`. */
export function progressPrinter(command: string, io: CommandIo): (step: StepResult) => void {
  return (step) => io.stderr(`${command}: [${step.step}] ${step.status} — ${step.detail}\n`);
}

/** An AbortSignal fired by Ctrl-C (the steps record why they stopped). */
export function interruptSignal(): { signal: AbortSignal; dispose: () => void } {
  const controller = new AbortController();
  const onSignal = () => controller.abort(new Error('interrupted (SIGINT)'));
  process.once('SIGINT', onSignal);
  return { signal: controller.signal, dispose: () => process.off('SIGINT', onSignal) };
}

/**
 * `prepare-wave <impl> --wave N [--merge-target B] [--commit-state|--no-commit-state] [--no-cache]
 * [--skip-critic] [--rerun] [--commit-baseline] [--no-gowork] [--no-workspace-setup] [--json-only] [--repo-dir D] [--concurrency K]` — prints the PrepareWaveResult
 * JSON (also on failure, exit 1); progress lines go to stderr unless --json-only.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  requireManifest((await loadImpl(implPath)).parsed, implPath);
  await refuseImplOfRunningProgram(implPath, { command: 'prepare-wave', cwd: io.cwd, mergeTarget: options.mergeTarget, env: io.env });
  const jsonOnly = options.jsonOnly === true;
  const repoDir = repoDirOption(options, io);
  // The plan's run lock (the one run, run-wave and finalize-wave take): a prepare-wave while another process
  // runs this plan's waves would create worktrees and rewrite state under it — RUN_IN_PROGRESS, nothing changed.
  const releaseLock = acquireRunLock(repoDir ?? io.cwd, implPath);
  const interrupt = interruptSignal();
  try {
    const result = await prepareWave({
      implPath,
      wave,
      ...(repoDir ? { repoDir } : {}),
      ...(typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? { mergeTarget: options.mergeTarget.trim() } : {}),
      commitState: options.commitState !== false,
      noCache: options.cache === false,
      skipCritic: options.skipCritic === true,
      acceptChanges: options.acceptChanges === true,
      ...(options.rerun === true ? { rerun: true } : {}),
      ...(options.commitBaseline === true ? { commitBaseline: true } : {}),
      // --no-workspace-setup / --no-gowork (Go): skip the worktree setup / its go.work (docs/worktree-setup.md).
      ...(options.workspaceSetup === false ? { workspaceSetup: false } : {}),
      ...(options.gowork === false ? { goWork: false } : {}),
      ...(typeof options.concurrency === 'number' && options.concurrency > 0 ? { concurrency: options.concurrency } : {}),
      env: io.env,
      now: io.now,
      signal: interrupt.signal,
      ...(jsonOnly ? {} : { onStep: progressPrinter('prepare-wave', io) }),
    });
    printJson(io, result);
    if (!result.success && !jsonOnly) {
      const failed = result.steps.find((step) => step.status === 'failed');
      const failing = (failed?.step === 'baseline_gates' ? (failed.data as { failing?: Array<{ type: string; command: string; exit_code: number; output: string }> } | undefined)?.failing : undefined) ?? [];
      for (const gate of failing) {
        io.stderr(`\nbaseline gate failed (E21A): ${gate.type} \`${gate.command}\` (exit ${gate.exit_code})\n${gate.output.split('\n').slice(-40).join('\n')}\n`);
      }
    }
    return result.success ? 0 : 1;
  } finally {
    interrupt.dispose();
    releaseLock();
  }
}
