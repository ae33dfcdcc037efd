import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
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

/**
 * Outside round P15 (P15-20): `docs` or `docs/<sub>` of the work tree committed as a symbolic link. Nothing polywave
 * writes there goes through it (a Scout's sandbox and the jail refuse a path through a link; the loop's manifest writes
 * and commits name `docs/…`), and the refusals said neither that it is a link nor how to undo it — the advised
 * `git mv … docs/PROGRAM/…` went through the same link. Returns the refusal's text (the link, where it points, the
 * commands that replace it by a directory), or undefined when neither is a link.
 */
export function linkedDocsDirectory(repoDir: string, sub: 'IMPL' | 'PROGRAM', what: string): string | undefined {
  for (const relative of ['docs', `docs/${sub}`]) {
    const link = path.join(repoDir, relative);
    let target: string;
    try {
      if (!lstatSync(link).isSymbolicLink()) continue;
      target = readlinkSync(link);
    } catch {
      return undefined;
    }
    let real: string | undefined;
    try {
      real = realpathSync(link);
    } catch {
      real = undefined;
    }
    // The link's place becomes a directory holding what its target holds.
    const from = real === undefined ? undefined : path.relative(repoDir, real).split(path.sep).join('/');
    const move =
      real === undefined || from === undefined
        ? `git rm ${relative} && mkdir -p ${relative}, then put ${what} there`
        : from.startsWith('../') || path.isAbsolute(from)
          ? `git rm ${relative} && mkdir -p ${relative} && cp -R ${real}/. ${relative}/ && git add ${relative}`
          : `git rm ${relative} && ${relative === 'docs' ? '' : 'mkdir -p docs && '}git mv ${from} ${relative}`; // (git rm takes an emptied docs/ with it)
    return `${relative} is a symbolic link (to ${target}${real !== undefined && real !== target ? `, ${real}` : ''}): polywave writes ${what} only as real files under docs/${sub}/ of the repository, never through a link — replace the link by a directory (${move}), then commit; nothing changed`;
  }
  return undefined;
}
