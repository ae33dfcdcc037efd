import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PolywaveError } from '../../errors/polywave-error.js';
import { updateAgentPrompt } from '../../engine/update-agent-prompt.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { implPathFrom, requireOption } from './shared.js';

/**
 * `update-agent-prompt <impl> --agent X (--prompt TEXT | --file F)` — E6: the orchestrator
 * edits the agent's prompt (its `task`) in the IMPL; the agent's next launch renders its brief
 * from it. `--file -` reads stdin. Prints `{agent, updated, wave, interface_deviations,
 * warnings}`: the deviations other agents reported that name this agent (E6/E8 surface them;
 * a human decides the new prompt). Exit 0 saved, 1 no such agent (nothing written), 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const agent = requireOption(options, 'agent', '--agent');
  const hasPrompt = typeof options.prompt === 'string';
  const hasFile = typeof options.file === 'string' && options.file !== '';
  if (hasPrompt === hasFile) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'give exactly one of --prompt <text> or --file <path|->' });
  let prompt: string;
  if (hasPrompt) prompt = options.prompt as string;
  else {
    const file = options.file as string;
    try {
      prompt = file === '-' ? await io.readStdin() : await readFile(path.resolve(io.cwd, file), 'utf8');
    } catch (error) {
      throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: `cannot read --file ${file}: ${(error as Error).message}` });
    }
  }
  const implPath = implPathFrom(args, io);
  // P15-05: E6 — the orchestrator edits a prompt the agent reads at launch. While a run holds the plan, an agent it has
  // launched never saw the edit ("updated", and the old prompt's work merged): the plan's run lock, as set-impl-state
  // takes it (P14-16) — RUN_IN_PROGRESS (exit 2), nothing written; stop the run, update, run again.
  const { withRunLock } = await import('../run-lock.js');
  const { projectRootOf } = await import('../../store/program-impl-docs.js');
  const { withProgramsOfImpl } = await import('../program-impl-guard.js');
  return withRunLock(projectRootOf(implPath, io.cwd), implPath, () =>
    withProgramsOfImpl(implPath, io.cwd, async (): Promise<CommandResult> => {
      const result = await updateAgentPrompt({ implPath, agent, prompt: prompt.replace(/\s+$/, '') });
      for (const warning of result.warnings) io.stderr(`update-agent-prompt: warning: ${warning}\n`);
      printJson(io, result);
      return 0;
    }),
  );
}

