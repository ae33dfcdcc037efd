import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import { installIsolationHook } from '../../engine/isolation-hook.js';
import { ensureInfoExclude } from '../../engine/worktrees.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';

/**
 * `install-hooks [--repo-dir D]` — installs (idempotently) the E4 layer 0 / E43 pre-commit
 * isolation guard where git runs it for every worktree (core.hooksPath honoured, an existing hook
 * chained) and the agent-file patterns in info/exclude. Prints the install result as JSON.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const directory = typeof options.repoDir === 'string' && options.repoDir.trim() !== '' ? path.resolve(io.cwd, options.repoDir) : io.cwd;
  const git = createGit(directory, { env: io.env });
  if (!(await git.isRepository())) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${directory} is not inside a git repository` });
  const exclude = await ensureInfoExclude(git);
  const result = await installIsolationHook(git);
  for (const warning of result.warnings) io.stderr(`install-hooks: warning: ${warning}\n`);
  printJson(io, { ...result, exclude_path: exclude.path });
  return 0;
}
