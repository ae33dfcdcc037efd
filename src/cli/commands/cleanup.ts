import { cleanupWaveWorktrees } from '../../engine/finalize-wave.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { finalizeOptionsFrom } from './finalize-wave.js';

/**
 * `cleanup <impl> --wave N [--merge-target B]` — removes the wave's worktrees and branches, each
 * only after proving its tip is reachable from the target (E9); a worktree with uncommitted
 * changes or an unmerged branch is kept and reported, and work that is not in the target gets a
 * `git branch recover-<id> <sha>` command. `--force` is accepted for compatibility and changes
 * nothing: polywave never force-removes work. Prints `{wave, agents[{agent, worktree_removed,
 * branch_deleted, kept?, recovery?}], recovery[], …}`; exit 1 when something was kept.
 * (Stale worktrees of any wave: `cleanup-stale`.)
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const outcome = await cleanupWaveWorktrees(finalizeOptionsFrom('cleanup', args, { ...options, jsonOnly: true }, io));
  printJson(io, outcome.result ?? { wave: options.wave, agents: [], steps: outcome.steps });
  return outcome.success ? 0 : 1;
}
