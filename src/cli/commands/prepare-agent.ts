import { prepareAgent } from '../../engine/prepare-wave.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { progressPrinter, repoDirOption, waveOption } from './prepare-wave.js';
import { implPathFrom, requireManifest, requireOption } from './shared.js';

/**
 * `prepare-agent <impl> --wave N --agent X [--no-worktree]` — one agent's brief, ownership record
 * and journal (E23, E44); with --no-worktree (solo waves) the brief goes to
 * `.polywave-state/<slug>/wave{N}/agent-{X}/brief.md`. Prints the Go PrepareAgentResult keys.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  const agent = requireOption(options, 'agent', '--agent');
  requireManifest((await loadImpl(implPath)).parsed, implPath);
  const repoDir = repoDirOption(options, io);
  const result = await prepareAgent({
    implPath,
    wave,
    agent,
    noWorktree: options.worktree === false,
    ...(repoDir ? { repoDir } : {}),
    ...(typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? { mergeTarget: options.mergeTarget.trim() } : {}),
    env: io.env,
    now: io.now,
    onStep: progressPrinter('prepare-agent', io),
  });
  printJson(io, result);
  return result.success ? 0 : 1;
}
