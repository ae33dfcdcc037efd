import { lstatSync, readFileSync } from 'node:fs';
import { mkdir, rename } from 'node:fs/promises';
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
  const signatures = new Map<string, string>();
  for (const relative of await gitlinkPaths(git)) signatures.set(relative, signatureOf(path.join(root, relative, '.git')));
  return signatures;
}

/**
 * The gitlink paths of the index, by `index file → stamp → paths`. One agent's tree is listed up
 * to four times (the jail's baseline, run-agent's, the quarantine and the stop audit), mostly with
 * the index unchanged in between: `ls-files --stage` is a function of the index file alone, and
 * git replaces that file on every write (a new inode, by rename), so an unchanged stamp (inode,
 * size, mtime, ctime in ns) is an unchanged answer. The `.git` signatures are read anew every time.
 */
const gitlinkPathCache = new Map<string, { stamp: string; paths: readonly string[] }>();

async function gitlinkPaths(git: Git): Promise<readonly string[]> {
  const indexFile = indexFileOf(git.cwd);
  const before = indexFile === undefined ? undefined : indexStamp(indexFile);
  const cached = indexFile === undefined ? undefined : gitlinkPathCache.get(indexFile);
  if (cached !== undefined && before !== undefined && cached.stamp === before) return cached.paths;
  const { stdout } = await git.run(['--no-optional-locks', 'ls-files', '--stage', '-z']);
  const paths: string[] = [];
  for (const record of stdout.split('\0')) {
    if (!record.startsWith('160000 ')) continue;
    const tab = record.indexOf('\t');
    if (tab < 0) continue;
    paths.push(record.slice(tab + 1));
  }
  // Kept only when the index did not change while git read it.
  if (indexFile !== undefined && before !== undefined && indexStamp(indexFile) === before) {
    gitlinkPathCache.delete(indexFile);
    gitlinkPathCache.set(indexFile, { stamp: before, paths });
    if (gitlinkPathCache.size > 256) gitlinkPathCache.delete(gitlinkPathCache.keys().next().value!);
  }
  return paths;
}

/** The index file of the tree at `top` (its `.git` directory or `.git` file's gitdir), or undefined. */
function indexFileOf(top: string): string | undefined {
  const dotGit = path.join(top, '.git');
  try {
    const stats = lstatSync(dotGit);
    if (stats.isDirectory()) return path.join(dotGit, 'index');
    if (!stats.isFile()) return undefined;
    const match = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'));
    return match ? path.join(path.resolve(top, match[1]!.trim()), 'index') : undefined;
  } catch {
    return undefined;
  }
}

function indexStamp(indexFile: string): string | undefined {
  try {
    const stats = lstatSync(indexFile, { bigint: true });
    return stats.isFile() ? `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}` : undefined;
  } catch {
    return undefined;
  }
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

/** A planted `.git` moved out of the tree (or the move that failed). */
export interface QuarantinedGitlinkRepo {
  /** `<submodule path>/.git`, relative to the tree. */
  path: string;
  movedTo?: string;
  error?: string;
}

/**
 * X8 #2c: moves every `.git` made or changed in a submodule path since `before` out of `root`, to
 * `<git common dir>/polywave/quarantine/<agent>-<time>-gitlinks/<path>/.git` (nothing is deleted),
 * so neither polywave nor the user's own git later runs what its config names. Call it once the
 * agent's processes are gone.
 */
export async function quarantineGitlinkRepos(options: { git: Git; root: string; before: GitlinkRepoSignatures; agentId: string; now?: Date }): Promise<QuarantinedGitlinkRepo[]> {
  const changed = changedGitlinkRepos(options.before, await gitlinkRepoSignatures(options.git, options.root));
  if (changed.length === 0) return [];
  const commonDir = path.resolve(options.root, await options.git.commonDir());
  const stamp = (options.now ?? new Date()).toISOString().replace(/[:.]/g, '-');
  const target = path.join(commonDir, 'polywave', 'quarantine', `${options.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}-gitlinks`);
  const moved: QuarantinedGitlinkRepo[] = [];
  for (const link of changed) {
    const from = path.join(options.root, link, '.git');
    const to = path.join(target, link, '.git');
    try {
      await mkdir(path.dirname(to), { recursive: true });
      await rename(from, to);
      moved.push({ path: `${link}/.git`, movedTo: to });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && signatureOf(from) === 'absent') continue;
      moved.push({ path: `${link}/.git`, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return moved;
}
