import { createWaveWorktrees } from '../../engine/prepare-wave.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { loadImpl } from '../../store/manifest-file.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { progressPrinter, repoDirOption, waveOption } from './prepare-wave.js';
import { implPathFrom, requireManifest } from './shared.js';

/**
 * `create-worktrees <impl> --wave N` — only the worktrees (E5 names, parallel, E9 re-entrant,
 * isolation guard, E2 freeze record). Prints `{worktrees[{agent,path,branch}]}`; exit 1 with a
 * coded error (G001_WORKTREE_CREATE_FAILED) when a step fails.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const implPath = implPathFrom(args, io);
  const wave = waveOption(options);
  requireManifest((await loadImpl(implPath)).parsed, implPath);
  const repoDir = repoDirOption(options, io);
  const result = await createWaveWorktrees({
    implPath,
    wave,
    ...(repoDir ? { repoDir } : {}),
    ...(typeof options.mergeTarget === 'string' && options.mergeTarget.trim() !== '' ? { mergeTarget: options.mergeTarget.trim() } : {}),
    env: io.env,
    now: io.now,
    onStep: progressPrinter('create-worktrees', io),
  });
  if (!result.success) {
    const failed = result.steps.find((step) => step.status === 'failed');
    throw new PolywaveError({ code: 'G001_WORKTREE_CREATE_FAILED', message: `[${failed?.step ?? 'create_worktrees'}] ${failed?.detail ?? 'failed'}`, exitCode: 1, details: { steps: result.steps } });
  }
  printJson(io, { worktrees: result.worktrees });
  return 0;
}
