import { existsSync } from 'node:fs';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { verifyHookInstalled } from '../../engine/isolation-hook.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/**
 * `verify-hook-installed <worktree>` — is the E4 layer 0 isolation guard in the pre-commit hook
 * git runs in that worktree? Prints `{valid, reason?, hook_path, executable, has_logic}`; exit 1
 * when not.
 */
export async function run(args: string[], _options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const worktree = path.resolve(io.cwd, args[0] ?? '.');
  const git = createGit(worktree, { env: io.env });
  if (!existsSync(worktree) || !(await git.isRepository())) {
    printJson(io, { valid: false, reason: `${worktree} is not a git worktree`, hook_path: '', executable: false, has_logic: false });
    return 1;
  }
  const result = await verifyHookInstalled(git);
  printJson(io, result);
  return result.valid ? 0 : 1;
}
