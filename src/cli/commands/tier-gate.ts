import { runTierGate } from '../../engine/program/tier-gate.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal } from './prepare-wave.js';
import { tierOptionsFrom } from './tier-options.js';
import { withProgram } from '../replan-recovery.js';
import { programPathFrom } from './shared.js';

/**
 * `tier-gate <program> --tier N [--repo-dir D]` — E29/P3: every IMPL of the tier complete (PROGRAM
 * status cross-checked with the IMPL docs), then the PROGRAM's `tier_gates`. Prints
 * `{tier_number, passed, gate_results[], impl_statuses[{slug, status, …}], all_impls_done, reason?}`;
 * exit 1 unless passed, 2 bad input.
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const base = tierOptionsFrom(args, options, io);
  const interrupt = interruptSignal();
  try {
    const result = await runTierGate({ ...base, now: io.now, signal: interrupt.signal });
    printJson(io, result);
    if (!result.passed && result.reason) io.stderr(`tier-gate: tier ${result.tier_number} not passed — ${result.reason}\n`);
    return result.passed ? 0 : 1;
  } finally {
    interrupt.dispose();
  }
}

/** P13-05/P13-07: a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: false }, () => runCommand(args, options, io));
}
