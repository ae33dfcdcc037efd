import { reconcileState } from '../../engine/reconcile-state.js';
import { refuseImplOfRunningProgram } from '../program-impl-guard.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';
import { implPathFrom } from './shared.js';

/**
 * `reconcile-state <impl> [--repo-dir D]` — E49: derive the IMPL state from git evidence
 * (branches, reports, reachability, merge_state) and write it when the transition is legal; never
 * commits. Prints `{previous_state, derived_state, state_changed, evidence[], recommended_action,
 * agent_summary[]}`. Exit 0 (also when the transition was not allowed: see `evidence`).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const repoDir = repoDirOption(options, io);
  // P14-03: an IMPL of a running PROGRAM tier is the tier loop's (E28B_IMPL_OF_PROGRAM, exit 2, nothing changed).
  await refuseImplOfRunningProgram(implPath, { command: 'reconcile-state', cwd: io.cwd, env: io.env, noMergeTarget: true, ...(repoDir ? { repoDir } : {}) });
  const result = await reconcileState({ implPath, ...(repoDir ? { repoDir } : {}), env: io.env });
  io.stderr(`reconcile-state: derived state ${result.derived_state} (previous ${result.previous_state || '(none)'})${result.state_changed ? ', written' : ''}\n`);
  printJson(io, result);
  return 0;
}
