import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readlink, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Git } from '../git/git-port.js';
import { runGit } from '../git/run-git.js';
import { mapBounded } from './concurrency.js';

/** Runs `git <args>` in `cwd` and returns stdout (throws on failure). */
export type GitRunner = (args: readonly string[], cwd: string) => Promise<string>;

const defaultGitRunner: GitRunner = (args, cwd) => runGit(args, { cwd });

/** A {@link GitRunner} over the git port (`gitRunnerFromPort(createGit)`). */
export function gitRunnerFromPort(factory: (cwd: string) => Pick<Git, 'run'>): GitRunner {
  return async (args, cwd) => (await factory(cwd).run(args)).stdout;
}

/**
 * The state of a working tree that a gate's outcome depends on (E38, strengthened): the HEAD
 * commit, the staged changes (the index object of every staged path), the unstaged changes (the
 * SHA-256 of every modified or deleted tracked file in the working tree) and every untracked,
 * not-ignored file with the SHA-256 of its content. This is the information of `git diff
 * --cached`, `git diff` and the untracked list, exactly (content, not `--stat`, which misses
 * same-size edits), read with one `git status --porcelain=v2` instead of four git processes.
 * Polywave's own runtime files (`.polywave-state/`) are left out, or writing the cache would
 * change the key.
 */
export interface WorkspaceFingerprint {
  /** Repository top level the fingerprint describes. */
  root: string;
  /** HEAD commit, or `unborn` before the first commit. */
  head: string;
  /** SHA-256 of everything above. */
  digest: string;
}

/** Files under a directory with this name are polywave runtime state, not source. */
const stateDirName = '.polywave-state';

/**
 * Computes the fingerprint of the git working tree containing `dir`. Throws when `dir` is not
 * in a git repository (the caller then runs without the cache).
 */
export async function computeWorkspaceFingerprint(dir: string, options: { git?: GitRunner } = {}): Promise<WorkspaceFingerprint> {
  const git = options.git ?? defaultGitRunner;
  const root = (await findWorktreeRoot(dir)) ?? (await git(['rev-parse', '--show-toplevel'], dir)).trim();
  // --no-optional-locks: never take index.lock (a concurrent commit must not fail because of us).
  // --ignore-submodules=dirty, not none: a moved gitlink still counts, but git starts no status INSIDE
  // a submodule — in an agent's tree that can be a repository the agent made, whose config names
  // programs (filter drivers) git would run there, outside the sandbox (outside attack X8 #2).
  const status = await git(['--no-optional-locks', 'status', '--porcelain=v2', '--branch', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=dirty'], root);

  let head = 'unborn';
  const lines: Array<{ entry: string; worktreePath?: string }> = [];
  const fields = status.split('\0');
  for (let index = 0; index < fields.length; index += 1) {
    const field = fields[index]!;
    if (field === '') continue;
    if (field.startsWith('# branch.oid ')) {
      const oid = field.slice('# branch.oid '.length).trim();
      if (oid !== '(initial)') head = oid;
      continue;
    }
    if (field.startsWith('#')) continue;
    const kind = field[0];
    if (kind === '2') {
      // A rename (only if --no-renames was ignored): the original path is the next field.
      const original = fields[index + 1] ?? '';
      index += 1;
      const renamedPath = pathAfterFields(field, 9);
      if (isStatePath(renamedPath) && isStatePath(original)) continue;
      lines.push({ entry: `${field}\0${original}`, worktreePath: renamedPath });
      continue;
    }
    const entryPath = kind === '1' ? pathAfterFields(field, 8) : kind === 'u' ? pathAfterFields(field, 10) : field.slice(2);
    if (isStatePath(entryPath)) continue;
    if (kind === '1') {
      // `1 XY …`: Y is the working tree against the index; '.' = unchanged, nothing to hash.
      lines.push(field[3] === '.' ? { entry: field } : { entry: field, worktreePath: entryPath });
    } else if (kind === 'u' || kind === '?') {
      lines.push({ entry: field, worktreePath: entryPath });
    }
    // '!' (ignored) entries are not requested and would not count.
  }

  const hashed = await mapBounded(lines, 16, async (line) => (line.worktreePath === undefined ? line.entry : `${line.entry}\0${await hashPath(path.join(root, line.worktreePath))}`));
  const hash = createHash('sha256');
  hash.update(`polywave-gate-fingerprint-v2\0${root}\0${head}\0`);
  for (const line of hashed) hash.update(`${line}\n`);
  return { root, head, digest: hash.digest('hex') };
}

/**
 * The E38 cache key of one gate: SHA-256 of the workspace fingerprint, the command and the
 * directory it runs in. Changing the command (adding a flag) changes the key.
 */
export function gateCacheKey(fingerprint: WorkspaceFingerprint, command: string, cwd: string): string {
  return createHash('sha256').update(`polywave-gate-key-v1\0${fingerprint.digest}\0${command}\0${path.resolve(cwd)}`).digest('hex');
}

/** The path of a porcelain v2 entry: everything after the first `count` space-separated fields. */
function pathAfterFields(entry: string, count: number): string {
  let position = 0;
  for (let field = 0; field < count; field += 1) {
    position = entry.indexOf(' ', position) + 1;
    if (position === 0) return '';
  }
  return entry.slice(position);
}

function isStatePath(relative: string): boolean {
  return relative.split('/').includes(stateDirName);
}

/**
 * The working tree root containing `dir`, found the way git discovers it (the nearest directory
 * holding `.git`, a directory or a linked worktree's file) without starting a process.
 * Undefined when none is found (git is then asked, which also honours GIT_DIR).
 */
async function findWorktreeRoot(dir: string): Promise<string | undefined> {
  let directory = path.resolve(dir);
  for (;;) {
    try {
      await stat(path.join(directory, '.git'));
      return directory;
    } catch {
      // keep looking
    }
    const parent = path.dirname(directory);
    if (parent === directory) return undefined;
    directory = parent;
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** Content hash of a working-tree path: file bytes, a symlink's target, or a marker for others. */
async function hashPath(filePath: string): Promise<string> {
  try {
    const stats = await lstat(filePath);
    if (stats.isSymbolicLink()) return `link:${sha256(await readlink(filePath))}`;
    // A nested repository or submodule shows up as a directory: its own state is not ours to hash.
    if (stats.isDirectory()) return 'dir';
    if (!stats.isFile()) return 'special';
    const executable = (stats.mode & 0o111) !== 0 ? 'x' : '-';
    return await new Promise<string>((resolve, reject) => {
      const hash = createHash('sha256');
      createReadStream(filePath)
        .on('data', (chunk) => hash.update(chunk))
        .on('error', reject)
        .on('end', () => resolve(`file${executable}:${hash.digest('hex')}`));
    });
  } catch (error) {
    // Deleted (an unstaged deletion) or unreadable: still part of the key, distinctly.
    return `absent:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
  }
}
