import { mergeWave } from '../../engine/finalize-wave.js';
import { withRunLock } from '../run-lock.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { crashHookFromEnv, finalizeOptionsFrom } from './finalize-wave.js';
import { interruptSignal, repoDirOption, waveOption } from './prepare-wave.js';
import { implPathFrom } from './shared.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';

/**
 * `merge-agents <impl> --wave N [--merge-target B]` — the merge step alone (after E7: an agent reporting partial or
 * blocked is never merged — A21-30): WAVE_MERGING, one
 * `--no-ff` merge per agent in wave order, merge log, E9 skips; a conflict aborts that merge and
 * sets BLOCKED. Prints `{wave, merges[{agent, branch, success, error?}], next_state, …}` (also on
 * failure); exit 1 when a merge failed. Verify afterwards with `finalize-wave --skip-merge`.
 */
async function mergeAgentsCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const base = finalizeOptionsFrom('merge-agents', args, options, io);
  const afterMerge = crashHookFromEnv(io.env);
  const interrupt = interruptSignal();
  try {
    const outcome = await mergeWave({ ...base, ...(afterMerge ? { afterMerge } : {}), signal: interrupt.signal });
    printJson(io, { ...(outcome.result ?? { wave: base.wave, merges: [] }), next_state: outcome.next_state, success: outcome.success, steps: outcome.steps });
    return outcome.success ? 0 : 1;
  } finally {
    interrupt.dispose();
  }
}

/** attack-serve-17 X1: the plan's run lock (the one `polywave run` and `polywave serve` take) for the command's life: a second run of the plan is RUN_IN_PROGRESS (exit 2), nothing changed. */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  waveOption(options);
  await refuseImplOfRunningProgram(implPath, { command: 'merge-agents', cwd: io.cwd, mergeTarget: options.mergeTarget, env: io.env });
  return withRunLock(repoDirOption(options, io) ?? io.cwd, implPath, () => mergeAgentsCommand(args, options, io));
}
