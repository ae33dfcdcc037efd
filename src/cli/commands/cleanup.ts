import { cleanupWaveWorktrees } from '../../engine/finalize-wave.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { finalizeOptionsFrom } from './finalize-wave.js';
import { acquireRunLock } from '../run-lock.js';

/**
 * `cleanup <impl> --wave N [--merge-target B]` — removes the wave's worktrees and branches, each
 * only after proving its tip is reachable from the target (E9); a worktree with uncommitted
 * changes or an unmerged branch is kept and reported, and work that is not in the target gets a
 * `git branch recover-<id> <sha>` command. `--force` is accepted for compatibility and changes
 * nothing: polywave never force-removes work. Prints `{wave, agents[{agent, worktree_removed,
 * branch_deleted, kept?, recovery?}], recovery[], …}`; exit 1 when something was kept.
 *
 * `cleanup --slug S` / `cleanup --all-stale` (no manifest): the E4a stale-worktree cleanup of
 * `cleanup-stale --slug S` / `cleanup-stale --all` (Go's `cleanup` spelling of it).
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const slug = typeof options.slug === 'string' && options.slug.trim() !== '' ? options.slug.trim() : undefined;
  if (slug !== undefined || options.allStale === true) {
    if (slug !== undefined && options.allStale === true) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'use either --slug <slug> or --all-stale, not both' });
    if (args.length > 0 || options.wave !== undefined) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: '--slug/--all-stale clean stale worktrees without a manifest: drop <impl> and --wave' });
    const stale = await import('./cleanup-stale.js');
    return stale.run([], { ...(slug ? { slug } : { all: true }), force: options.force === true, ...(typeof options.repoDir === 'string' ? { repoDir: options.repoDir } : {}) }, io);
  }
  if (args.length === 0) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'cleanup needs <impl> --wave N (or --slug <slug> / --all-stale for stale worktrees)' });
  const cleanupOptions = finalizeOptionsFrom('cleanup', args, { ...options, jsonOnly: true }, io);
  // P14-40: the plan's run lock (held by `run`, run-wave and the tier loop while they run it): a cleanup during a live
  // wave removed a running agent's worktree and branch (its tip was still the base, "in the target").
  const releaseLock = acquireRunLock(cleanupOptions.repoDir ?? io.cwd, cleanupOptions.implPath);
  let outcome: Awaited<ReturnType<typeof cleanupWaveWorktrees>>;
  try {
    outcome = await cleanupWaveWorktrees(cleanupOptions);
  } finally {
    releaseLock();
  }
  printJson(io, outcome.result ?? { wave: options.wave, agents: [], steps: outcome.steps });
  return outcome.success ? 0 : 1;
}
