import { prepareTier } from '../../engine/program/prepare-tier.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal } from './prepare-wave.js';
import { tierOptionsFrom } from './tier-options.js';
import { withProgram } from '../replan-recovery.js';
import { programPathFrom } from './shared.js';

/**
 * `prepare-tier <program> --tier N [--skip-critic] [--run-prepare-wave [--wave W] [--merge-target B]]
 * [--repo-dir D]` — P1 across the tier's IMPLs, E16 validation, E37 critic gate, then the IMPL
 * branches/worktrees (E28B), then optionally prepare-wave per IMPL into its IMPL branch. Prints
 * `{tier, conflict_check{conflicts, disjoint}, validations[], branches[], success, errors?}`;
 * exit 1 unless success, 2 bad input.
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const base = tierOptionsFrom(args, options, io);
  const interrupt = interruptSignal();
  try {
    const mergeTarget = typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? options.mergeTarget.trim() : undefined;
    const result = await prepareTier({
      ...base,
      skipCritic: options.skipCritic === true,
      runPrepareWave: options.runPrepareWave === true,
      ...(typeof options.wave === 'number' && options.wave >= 1 ? { wave: options.wave } : {}),
      ...(mergeTarget ? { mergeTarget } : {}),
      now: io.now,
      signal: interrupt.signal,
    });
    printJson(io, result);
    for (const error of result.errors ?? []) io.stderr(`prepare-tier: ${error}\n`);
    return result.success ? 0 : 1;
  } finally {
    interrupt.dispose();
  }
}

/** P13-05/P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: true }, () => runCommand(args, options, io));
}
