import { createGit } from '../../git/git-cli.js';
import { cleanStaleWorktrees, detectStaleWorktrees } from '../../engine/stale-worktrees.js';
import { PolywaveError } from '../../errors/polywave-error.js';
import { printJson, type CommandIo, type CommandResult } from '../io.js';
import { repoDirOption } from './prepare-wave.js';

/**
 * `cleanup-stale (--slug S | --all) [--dry-run] [--force] [--repo-dir D]` — E4a: detect and
 * remove stale agent worktrees. A worktree with uncommitted changes, or whose HEAD is not
 * reachable from HEAD/main/master, is never removed (reported in `skipped`), even with --force
 * (which only allows removing locked worktrees). Prints `{detected, cleaned[], skipped[], errors[]}`.
 */
export async function run(_args: string[], options: Record<string, unknown>, io: CommandIo): Promise<CommandResult> {
  const slug = typeof options.slug === 'string' && options.slug.trim() !== '' ? options.slug.trim() : undefined;
  const all = options.all === true;
  if ((slug === undefined) === !all) throw new PolywaveError({ code: 'X001_INVALID_INPUT', message: 'exactly one of --slug <slug> or --all is required' });
  const directory = repoDirOption(options, io) ?? io.cwd;
  const git = createGit(directory, { env: io.env });
  if (!(await git.isRepository())) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${directory} is not inside a git repository` });
  const stale = await detectStaleWorktrees({ git, ...(slug ? { slug } : {}) });
  const bases = ['HEAD'];
  for (const branch of ['main', 'master']) if (await git.branchExists(branch)) bases.push(`refs/heads/${branch}`);
  const result = await cleanStaleWorktrees(stale, {
    git,
    gitAt: (worktree) => createGit(worktree, { env: io.env }),
    bases,
    dryRun: options.dryRun === true,
    force: options.force === true,
  });
  printJson(io, result);
  return result.errors.length > 0 ? 1 : 0;
}
