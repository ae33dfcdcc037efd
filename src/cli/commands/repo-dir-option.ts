import path from 'node:path';
import type { CommandIo } from '../io.js';

/** `--repo-dir` resolved against the command's cwd, if given. */
export function repoDirOption(options: Record<string, unknown>, io: CommandIo): string | undefined {
  return typeof options.repoDir === 'string' && options.repoDir.trim() !== '' ? path.resolve(io.cwd, options.repoDir) : undefined;
}

/** The top of the git work tree holding `directory` (its real path), or undefined outside one (the command's own error then). */
export async function topLevelOf(directory: string, env: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  try {
    // (loaded here: this module is on every command's path, and hook calls must not load child_process — issue 13)
    const { runGit } = await import('../../git/run-git.js');
    const top = (await runGit(['rev-parse', '--show-toplevel'], { cwd: directory, env })).trim();
    return top === '' ? undefined : top;
  } catch {
    return undefined;
  }
}

/**
 * The repository a command on the whole project works in: `--repo-dir`, else the top of the work tree holding the cwd
 * (P12-13, P13-34: run from a subdirectory, a Planner wrote its paths under it and `plan` made `src/deep/docs/PROGRAM/`),
 * else the cwd.
 */
export async function projectDirOf(options: Record<string, unknown>, io: CommandIo): Promise<string> {
  return repoDirOption(options, io) ?? (await topLevelOf(io.cwd, io.env)) ?? io.cwd;
}
