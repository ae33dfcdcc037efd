import path from 'node:path';
import { updateProgramState } from '../../engine/program/program-edits.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { isProgramState } from '../../protocol/program/program-state-machine.js';
import { programStates } from '../../protocol/schema/program-schema.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { programPathFrom, requireOption } from './shared.js';
import { withProgram } from '../replan-recovery.js';

/**
 * `update-program-state <program> --state S [--force]` — moves the PROGRAM to state S, checked
 * against the PROGRAM state machine (Go checks nothing); `--force` writes an illegal transition
 * anyway (a warning names why it was illegal). Prints `{updated, manifest_path, previous_state,
 * new_state}` (`updated: false` when the PROGRAM already was in S: nothing written). Exit 0; 1 illegal transition (N008, nothing written); 2 unknown state.
 */
async function runCommand(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const filePath = programPathFrom(args, io);
  const state = requireOption(options, 'state', '--state').toUpperCase();
  if (!isProgramState(state)) {
    throw new PolywaveError({ code: 'V008_INVALID_STATE', message: `unknown PROGRAM state "${state}" — must be one of: ${programStates.join(', ')}` });
  }
  const outcome = await updateProgramState(filePath, state, { force: options.force === true });
  if (outcome.forced !== undefined) io.stderr(`polywave: warning[N008_STATE_TRANSITION]: --force: ${outcome.forced}\n`);
  printJson(io, { updated: outcome.changed, manifest_path: path.relative(io.cwd, filePath) || filePath, previous_state: outcome.previous ?? '', new_state: state });
  return 0;
}

/** P13-05/P13-07: the PROGRAM's run lock for the command's life (RUN_IN_PROGRESS while program-execute or program-replan runs), after a killed re-plan's half revision is put back first (src/cli/replan-recovery.ts). */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  return withProgram(programPathFrom(args, io), io, { lock: true }, () => runCommand(args, options, io));
}
