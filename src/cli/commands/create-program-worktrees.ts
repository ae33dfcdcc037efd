import { createProgramWorktrees } from '../../engine/program/tier-worktrees.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { tierOptionsFrom } from './tier-options.js';

/**
 * `create-program-worktrees <program> --tier N [--repo-dir D]` — E28B/P5: each IMPL's long-lived
 * branch and worktree (idempotent, never deletes a branch). Prints
 * `{tier_number, worktrees[{impl_slug, path, branch, action}], base_branch, base_commit, failures?, success}`;
 * exit 1 when an IMPL's worktree could not be made ready, 2 bad input.
 */
export async function run(args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const result = await createProgramWorktrees(tierOptionsFrom(args, options, io));
  printJson(io, result);
  for (const failure of result.failures ?? []) io.stderr(`create-program-worktrees: ${failure.impl_slug}: ${failure.error}\n`);
  return result.success ? 0 : 1;
}
