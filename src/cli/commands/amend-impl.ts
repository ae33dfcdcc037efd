import { amendImpl, type AmendOperation } from '../../engine/amend-impl.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';
import { implPathFrom } from './shared.js';

function invalid(message: string): PolywaveError {
  return new PolywaveError({ code: 'X001_INVALID_INPUT', message });
}

async function operationFrom(options: Record<string, unknown>, io: CommandIo): Promise<AmendOperation> {
  const redirect = typeof options.redirectAgent === 'string' ? options.redirectAgent.trim() : undefined;
  const chosen = [options.addWave === true, redirect !== undefined, options.extendScope === true].filter(Boolean).length;
  if (chosen !== 1) throw invalid('exactly one of --add-wave, --redirect-agent <ID> or --extend-scope is required');
  if (options.addWave === true) {
    // Issue 13: the new wave's first agent (an empty wave fails validate, V005); without --agent the engine refuses (P013).
    if (options.agent === undefined) return { kind: 'add-wave' };
    const id = typeof options.agent === 'string' ? options.agent.trim() : '';
    if (id === '') throw invalid('--agent needs an agent ID');
    const task = (typeof options.newTask === 'string' ? options.newTask : await io.readStdin()).replace(/\s+$/, '');
    if (task.trim() === '') throw invalid('the new agent\'s task is empty: give --new-task <text> or pipe it on stdin');
    return { kind: 'add-wave', agent: { id, task } };
  }
  if (options.extendScope === true) return { kind: 'extend-scope' };
  if (redirect === '') throw invalid('--redirect-agent needs an agent ID');
  if (typeof options.wave !== 'number' || options.wave < 1) throw invalid('--wave <n> is required with --redirect-agent');
  const task = typeof options.newTask === 'string' ? options.newTask : await io.readStdin();
  const newTask = task.replace(/\s+$/, '');
  if (newTask.trim() === '') throw invalid('the new task is empty: give --new-task <text> or pipe it on stdin');
  return { kind: 'redirect-agent', agentId: redirect!, wave: options.wave, newTask };
}

/**
 * `amend-impl <impl> --add-wave --agent ID [--new-task TEXT] | --redirect-agent ID --wave N [--new-task TEXT] | --extend-scope`
 * — E36. Prints `{success, operation, new_wave_number?, agent_id?, warnings[]}` (extend-scope
 * adds the hint `manifest_path`, `message`). A refused amendment (E36 preconditions, E36a
 * validation, E2 freeze) prints `{success: false, operation, error, code: "P013_AMEND_BLOCKED"}`
 * and exits 1 with the file unchanged.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const operation = await operationFrom(options, io);
  const repoDir = repoDirOption(options, io);
  // Outside round P15 (P15-05): E36 is the orchestrator's amendment between its steps. While a run holds the plan (`run`,
  // run-wave, the tier loop) a redirect of an agent it has launched never reached the agent — "success", and the old
  // task's work merged — so add-wave and redirect-agent take the plan's run lock as set-impl-state does (P14-16):
  // RUN_IN_PROGRESS (exit 2), nothing written; stop the run (Ctrl-C is an interruption), amend, run again.
  // (extend-scope writes nothing: no lock.)
  if (operation.kind !== 'extend-scope') {
    const { withRunLock } = await import('../run-lock.js');
    const { projectRootOf } = await import('../../store/program-impl-docs.js');
    const { withProgramsOfImpl } = await import('../program-impl-guard.js');
    return withRunLock(projectRootOf(implPath, repoDir ?? io.cwd), implPath, () => withProgramsOfImpl(implPath, repoDir ?? io.cwd, () => amend(implPath, operation, repoDir, io)));
  }
  return amend(implPath, operation, repoDir, io);
}

async function amend(implPath: string, operation: AmendOperation, repoDir: string | undefined, io: CommandIo): Promise<CommandResult> {
  const result = await amendImpl({ implPath, operation, ...(repoDir ? { repoDir } : {}), env: io.env });
  for (const warning of result.warnings) io.stderr(`amend-impl: warning: ${warning}\n`);
  printJson(io, result);
  if (result.success) return 0;
  io.stderr(`polywave: error[${result.code ?? 'P013_AMEND_BLOCKED'}]: ${result.error ?? 'amendment blocked'}\n`);
  return 1;
}
