import { runTierGate } from '../../engine/program/tier-gate.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { interruptSignal } from './prepare-wave.js';
import { tierOptionsFrom } from './tier-options.js';

/**
 * `tier-gate <program> --tier N [--repo-dir D]` — E29/P3: every IMPL of the tier complete (PROGRAM
 * status cross-checked with the IMPL docs), then the PROGRAM's `tier_gates`. Prints
 * `{tier_number, passed, gate_results[], impl_statuses[{slug, status, …}], all_impls_done, reason?}`;
 * exit 1 unless passed, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
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
