import { stat } from 'node:fs/promises';
import { PolywaveError } from '../errors/polywave-error.js';
import { createGit } from '../git/git-cli.js';

/**
 * The repository a scout tool analyses: `dir` must be a directory inside a git work tree
 * (the file list comes from git: tracked plus untracked-not-ignored files). D011 (exit 2) otherwise.
 */
export async function requireRepoRoot(dir: string): Promise<string> {
  const isDirectory = await stat(dir).then(
    (stats) => stats.isDirectory(),
    () => false,
  );
  if (!isDirectory) throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${dir} is not a directory` });
  const result = await createGit(dir)
    .run(['rev-parse', '--is-inside-work-tree'], { allowExitCodes: [128] })
    .catch(() => ({ exitCode: 128, stdout: '' }));
  if (result.exitCode !== 0 || result.stdout.trim() !== 'true') {
    throw new PolywaveError({ code: 'D011_REPO_ROOT_INVALID', message: `${dir} is not inside a git work tree (pass --repo-dir <repository>)` });
  }
  return dir;
}
