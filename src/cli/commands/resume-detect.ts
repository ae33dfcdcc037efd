import { createGit } from '../../git/git-cli.js';
import { detectResumable } from '../../engine/resume-detect.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';

/**
 * `resume-detect [--repo-dir D]` — interrupted IMPLs of docs/IMPL: array of `{impl_path, slug,
 * wave, orphaned_worktrees[], reports_missing[], suggested_action, …}`; `[]` when none.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const directory = repoDirOption(options, io) ?? io.cwd;
  const git = createGit(directory, { env: io.env });
  if (!(await git.isRepository())) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${directory} is not inside a git repository` });
  const result = await detectResumable({ git, gitAt: (worktree) => createGit(worktree, { env: io.env }) });
  printJson(io, result);
  return 0;
}
