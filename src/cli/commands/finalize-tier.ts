import type { TierMergeProgressEvent } from '../../engine/program/tier-merge.js';
import { finalizeTier } from '../../engine/program/finalize-tier.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal, progressPrinter } from './prepare-wave.js';
import { tierOptionsFrom } from './tier-options.js';
import { withProgram } from '../replan-recovery.js';
import { programPathFrom } from './shared.js';

/**
 * Test hook for crash safety (read here, in the CLI, and passed down): `POLYWAVE_TEST_CRASH_AFTER_TIER_MERGE=k`
 * SIGKILLs this process right after the k-th IMPL merge of the run was recorded; `k:merged` right
 * after the merge commit, before the record knows it.
 */
export function tierCrashHookFromEnv(env: CommandIo['env']): ((event: TierMergeProgressEvent) => void) | undefined {
  const value = env.POLYWAVE_TEST_CRASH_AFTER_TIER_MERGE?.trim();
  if (!value) return undefined;
  const match = /^(\d+)(?::(merged|recorded))?$/.exec(value);
  if (!match) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `POLYWAVE_TEST_CRASH_AFTER_TIER_MERGE must be <k>, <k>:merged or <k>:recorded, got "${value}"` });
  const count = Number(match[1]);
  const phase = match[2] ?? 'recorded';
  return (event) => {
    if (event.count === count && event.phase === phase) process.kill(process.pid, 'SIGKILL');
  };
}

/**
 * `finalize-tier <program> --tier N [--auto] [--keep-branches] [--json-only] [--repo-dir D]` —
 * merge the tier's IMPL branches into the main line in tier order (crash-resumable), run the tier
 * gate, close the IMPLs, mark them complete in the PROGRAM and commit it; with --auto freeze the
 * tier's contracts (E30) and advance (E33). Prints the FinalizeTierResult JSON (also on failure);
 * exit 1 when a step failed, 2 bad input (nothing changed).
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const base = tierOptionsFrom(args, options, io);
  const afterMerge = tierCrashHookFromEnv(io.env);
  const interrupt = interruptSignal();
  try {
    const result = await finalizeTier({
      ...base,
      auto: options.auto === true,
      removeMerged: options.keepBranches !== true,
      now: io.now,
      signal: interrupt.signal,
      ...(afterMerge ? { afterMerge } : {}),
      ...(options.jsonOnly === true ? {} : { onStep: progressPrinter('finalize-tier', io) }),
    });
    printJson(io, result);
    if (options.jsonOnly !== true) for (const error of result.errors ?? []) io.stderr(`finalize-tier: ${error.code}: ${error.message}\n`);
    return result.success ? 0 : 1;
  } finally {
    interrupt.dispose();
  }
}

/** P13-05/P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: true }, () => runCommand(args, options, io));
}
