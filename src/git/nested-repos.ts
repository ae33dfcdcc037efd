import { lstatSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Git } from './git-port.js';

/**
 * Outside attack X8 #2c (issue 11): an agent turns a submodule path of its tree (a gitlink in the
 * index; empty in a worktree, where submodules are not initialised) into a git repository whose
 * `config` names a program (`core.fsmonitor`, a filter driver…). polywave's own git no longer
 * enters submodules (harden.ts), but in a solo agent's main checkout the planted repository stays,
 * and the user's next `git status` runs the program. The jail audit compares the `.git` of every
 * gitlink path with what was there when the jail was made: a new or changed one is a violation.
 */

/** `.git` of each gitlink path of the index: `absent`, `file:<gitdir line>` or `dir:<inode>:<config size/mtime>`. */
export type GitlinkRepoSignatures = ReadonlyMap<string, string>;

/** Signatures of the `.git` entries of every gitlink (mode 160000) path of `git`'s index. */
export async function gitlinkRepoSignatures(git: Git, root: string): Promise<GitlinkRepoSignatures> {
  const { stdout } = await git.run(['--no-optional-locks', 'ls-files', '--stage', '-z']);
  const signatures = new Map<string, string>();
  for (const record of stdout.split('\0')) {
    if (!record.startsWith('160000 ')) continue;
    const tab = record.indexOf('\t');
    if (tab < 0) continue;
    const relative = record.slice(tab + 1);
    signatures.set(relative, signatureOf(path.join(root, relative, '.git')));
  }
  return signatures;
}

function signatureOf(dotGit: string): string {
  try {
    const stats = lstatSync(dotGit);
    if (stats.isFile()) return `file:${readFileSync(dotGit, 'utf8').slice(0, 4096)}`;
    if (!stats.isDirectory()) return `other:${stats.mode}`;
    let config = 'none';
    try {
      const configStats = lstatSync(path.join(dotGit, 'config'));
      config = `${configStats.size}:${configStats.mtimeMs}:${configStats.ino}`;
    } catch {
      // no config file
    }
    return `dir:${stats.ino}:${config}`;
  } catch {
    return 'absent';
  }
}

/** Gitlink paths whose `.git` is new or changed since `before` (sorted). */
export function changedGitlinkRepos(before: GitlinkRepoSignatures, after: GitlinkRepoSignatures): string[] {
  return [...after]
    .filter(([relative, signature]) => signature !== (before.get(relative) ?? 'absent'))
    .map(([relative]) => relative)
    .sort();
}
