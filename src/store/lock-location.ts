import { createHash } from 'node:crypto';
import { mkdir, readFile, realpath, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { codes } from '../errors/codes.js';
import { PolywaveError } from '../errors/polywave-error.js';

/**
 * Where the lock and the group-commit state of one file live. Never in the working tree: under
 * the repository's git common dir (`<common>/polywave/locks/`, shared by every worktree, never
 * committed, never shown by `git status`), or — for a file outside any git repository — in a
 * per-user directory under the system temp dir.
 */
export interface LockLocation {
  /** The file the lock protects: real path of its directory + its name. */
  target: string;
  /** Directory holding the lock file, the inbox and the commit record. */
  directory: string;
  /** The lock file (flock on it; the file itself persists and carries the holder's record). */
  lockPath: string;
  /** Group-commit inbox of the file: one JSON entry per pending edit request. */
  inboxPath: string;
  /** Commit record of a group commit in flight (see group-commit.ts). */
  commitRecordPath: string;
  /** The git common dir the lock lives in; undefined when the file is not in a repository. */
  gitCommonDir?: string;
}

const commonDirs = new Map<string, Promise<string | undefined>>();
const locations = new Map<string, Promise<LockLocation>>();
const createdDirectories = new Map<string, Promise<void>>();

/**
 * The git common dir of the repository containing `directory` (the main `.git` also for a linked
 * worktree or a submodule's gitdir), found by reading `.git` files, not by running git; undefined
 * outside a repository. Cached per directory.
 */
export function gitCommonDirOf(directory: string): Promise<string | undefined> {
  let found = commonDirs.get(directory);
  if (found === undefined) {
    found = findCommonDir(directory);
    commonDirs.set(directory, found);
    // Only a repository found is remembered: a directory may become one (git init) later.
    void found.then((common) => (common === undefined ? commonDirs.delete(directory) : undefined), () => commonDirs.delete(directory));
  }
  return found;
}

async function findCommonDir(start: string): Promise<string | undefined> {
  for (let current = start; ; ) {
    const dotGit = path.join(current, '.git');
    const stats = await stat(dotGit).catch(() => undefined);
    if (stats?.isDirectory()) return commonDirFromGitDir(dotGit);
    if (stats?.isFile()) {
      const match = /^gitdir:\s*(.+?)\s*$/m.exec(await readFile(dotGit, 'utf8').catch(() => ''));
      if (match) return commonDirFromGitDir(path.resolve(current, match[1]!));
    }
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

async function commonDirFromGitDir(gitDir: string): Promise<string | undefined> {
  const pointer = (await readFile(path.join(gitDir, 'commondir'), 'utf8').catch(() => '')).trim();
  const common = pointer === '' ? gitDir : path.resolve(gitDir, pointer);
  return realpath(common).catch(() => undefined);
}

/**
 * The lock location of `filePath` (which may not exist yet; its directory must). Two paths of the
 * same file (symlinked directories, relative paths) get the same location. The directory is
 * created on first use. Cached once the file is known to be in a repository.
 */
export function resolveLockLocation(filePath: string): Promise<LockLocation> {
  const key = path.resolve(filePath);
  let found = locations.get(key);
  if (found === undefined) {
    found = computeLocation(key);
    locations.set(key, found);
    void found.then((location) => (location.gitCommonDir === undefined ? locations.delete(key) : undefined), () => locations.delete(key));
  }
  return found;
}

async function computeLocation(filePath: string): Promise<LockLocation> {
  let directory: string;
  try {
    directory = await realpath(path.dirname(filePath));
  } catch (error) {
    throw new PolywaveError({ code: codes.saveFailed, message: `cannot lock ${filePath}: its directory is not accessible (${(error as NodeJS.ErrnoException).code ?? String(error)})`, exitCode: 2, cause: error });
  }
  // A symlinked file is locked at its real path, so the link and the file it points to share one
  // lock (updateFileLocked's followSymlink then writes there too).
  const target = await realpath(filePath).catch(() => path.join(directory, path.basename(filePath)));
  const gitCommonDir = await gitCommonDirOf(path.dirname(target));
  const uid = typeof process.getuid === 'function' ? String(process.getuid()) : 'user';
  const lockDirectory = gitCommonDir ? path.join(gitCommonDir, 'polywave', 'locks') : path.join(os.tmpdir(), `polywave-locks-${uid}`);
  await ensureDirectory(lockDirectory);
  const name = `${path.basename(target).slice(0, 80)}.${createHash('sha256').update(target).digest('hex').slice(0, 16)}`;
  return {
    target,
    directory: lockDirectory,
    lockPath: path.join(lockDirectory, `${name}.lock`),
    inboxPath: path.join(lockDirectory, `${name}.inbox`),
    commitRecordPath: path.join(lockDirectory, `${name}.commit.json`),
    ...(gitCommonDir ? { gitCommonDir } : {}),
  };
}

/** mkdir -p once per process (0700 for the per-user temp directory). */
export function ensureDirectory(directory: string): Promise<void> {
  let created = createdDirectories.get(directory);
  if (created === undefined) {
    created = mkdir(directory, { recursive: true, mode: 0o700 }).then(
      () => undefined,
      (error: unknown) => {
        createdDirectories.delete(directory);
        throw new PolywaveError({ code: codes.saveFailed, message: `cannot create the lock directory ${directory}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`, exitCode: 2, cause: error });
      },
    );
    createdDirectories.set(directory, created);
  }
  return created;
}
