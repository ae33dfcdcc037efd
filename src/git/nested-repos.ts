import { lstatSync, readdirSync, readFileSync, realpathSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { PolywaveError } from '../errors/polywave-error.js';
import { GitError } from './git-error.js';
import type { Git } from './git-port.js';
import { moveToQuarantine } from './quarantine-move.js';
import { runGit } from './run-git.js';

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
// The catches of indexFileOf and indexStamp stay: undefined only means "not cached" (git is asked).
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

/** ENOENT/ENOTDIR: the path is not there (as opposed to there but unreadable). */
function isMissing(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
}

/**
 * `absent` only when the `.git` is not there: one that cannot be read (EACCES: an agent made the
 * submodule path or `.git` unreadable) is `unreadable:<code>`, a change from `absent` (fail closed:
 * it is moved out, or the move's failure is reported).
 */
function signatureOf(dotGit: string): string {
  let stats;
  try {
    stats = lstatSync(dotGit);
  } catch (error) {
    return isMissing(error) ? 'absent' : `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
  }
  try {
    if (stats.isFile()) return `file:${readFileSync(dotGit, 'utf8').slice(0, 4096)}`;
    if (!stats.isDirectory()) return `other:${stats.mode}`;
    let config = 'none';
    try {
      const configStats = lstatSync(path.join(dotGit, 'config'));
      config = `${configStats.size}:${configStats.mtimeMs}:${configStats.ino}`;
    } catch (error) {
      if (!isMissing(error)) config = `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
    }
    return `dir:${stats.ino}:${config}`;
  } catch (error) {
    return `unreadable:${(error as NodeJS.ErrnoException).code ?? 'error'}`;
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
      moved.push({ path: `${link}/.git`, movedTo: await moveToQuarantine(from, to) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && signatureOf(from) === 'absent') continue;
      moved.push({ path: `${link}/.git`, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return moved;
}

// ---------------------------------------------------------------------------------------------
// Outside attack X13 #1, #2, #6 (issue 11): a solo agent (any agent that works in the main
// checkout: solo, integration, scaffold) makes `docs/.git` — its own repository, with its config,
// hooks, filters and a committed polywave.config.json. `git status` of the outer repository never
// shows a `.git`, so neither the jail's audit nor the ignored-path quarantine saw it; the user's next
// command resolved the repository of `docs/IMPL/IMPL-x.yaml` to `docs/` and trusted the agent's
// repository. Two parts: every NEW `.git` in the checkout is moved out after the agent
// ({@link nestedRepoBaseline}, {@link quarantineNewNestedRepos}), and a repository nested in
// another one's work tree is refused as "the repository" ({@link assertNotNestedRepository}).
// ---------------------------------------------------------------------------------------------

/** The code of a plan whose repository is a repository nested in another one's work tree. */
export const nestedRepositoryCode = 'NESTED_REPOSITORY';

/** The code of a refusal because git could not read a repository around the plan's (so nesting is unknown). */
export const nestedRepositoryUncheckedCode = 'NESTED_REPOSITORY_UNCHECKED';

/** Every `.git` (directory, file or link) below `root` (not `root/.git` itself) when the walk started, by relative path; an unreadable directory as `<dir>/`. */
export interface NestedRepoBaseline {
  /** `<relative dir>/.git` → signature. */
  entries: ReadonlyMap<string, string>;
  /** Directories not walked (relative, no trailing slash): ignored ones the ignored-path guard watches. */
  pruned: ReadonlySet<string>;
}

/**
 * The `.git` entries below `root`, by a directory walk that skips every `.git` directory's content
 * and `prune`d directories. Cheap: ~10 ms for this repository without its ignored directories.
 */
export function nestedGitEntries(root: string, prune: ReadonlySet<string> = new Set()): Map<string, string> {
  const found = new Map<string, string>();
  const stack = [''];
  while (stack.length > 0) {
    const relative = stack.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(relative === '' ? root : path.join(root, relative), { withFileTypes: true });
    } catch (error) {
      // Gone while walking: nothing there. Unreadable (an agent's `chmod 000 dir` around a new
      // `dir/.git`): fail closed — recorded as `dir/`, so a new one is reported as a repository that
      // could not be looked for (the stop is refused); one the baseline already had is the user's.
      if (!isMissing(error)) found.set(relative === '' ? './' : `${relative}/`, `unreadable-dir:${(error as NodeJS.ErrnoException).code ?? 'error'}`);
      continue;
    }
    for (const entry of entries) {
      const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.name === '.git') {
        if (relative !== '') found.set(child, signatureOf(path.join(root, child)));
        continue;
      }
      if (entry.isDirectory() && !prune.has(child)) stack.push(child);
    }
  }
  return found;
}

/**
 * The baseline at an agent's launch. `pruneIgnored`: the checkout's ignored directories (git's
 * collapsed list) are not walked — only when the ignored-path guard makes them read-only or moves
 * what appears in them out (sandbox/ignored-paths.ts); without it every directory is walked.
 */
export async function nestedRepoBaseline(options: { root: string; env?: Readonly<Record<string, string | undefined>>; pruneIgnored: boolean }): Promise<NestedRepoBaseline> {
  const pruned = new Set<string>();
  if (options.pruneIgnored) {
    // When git cannot list the ignored directories, nothing is pruned (fail closed: every directory
    // is walked — slower, nothing missed); never a baseline-less agent.
    const listing = await runGit(['--no-optional-locks', 'ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory'], { cwd: options.root, env: { ...process.env, ...options.env } }).catch(() => '');
    for (const entry of listing.split('\0')) if (entry.endsWith('/')) pruned.add(entry.slice(0, -1));
  }
  return { entries: nestedGitEntries(options.root, pruned), pruned };
}

/**
 * A linked worktree (or submodule) git registers in `commonDir`: its `.git` file names a git dir
 * there that points back. Any error is "not registered" (fail closed: quarantined, or refused as
 * a nested repository).
 */
function isRegisteredGitFile(dotGit: string, commonDir: string): boolean {
  try {
    if (!lstatSync(dotGit).isFile()) return false;
    const match = /^gitdir: (.+)$/m.exec(readFileSync(dotGit, 'utf8'));
    if (!match) return false;
    const gitDir = realpathSync(path.resolve(path.dirname(dotGit), match[1]!.trim()));
    const common = realpathSync(commonDir);
    const relative = path.relative(common, gitDir);
    if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return false;
    if (relative.startsWith(`worktrees${path.sep}`)) {
      // git writes `<gitdir>/gitdir` = the worktree's `.git` file: the agent cannot (the common dir is read-only to it).
      return realpathSync(readFileSync(path.join(gitDir, 'gitdir'), 'utf8').trim()) === realpathSync(dotGit);
    }
    return relative.startsWith(`modules${path.sep}`);
  } catch {
    return false;
  }
}

/**
 * After the agent (its processes gone): every `.git` below `root` that was not there at the
 * baseline is moved to `<git common dir>/polywave/quarantine/<agent>-<time>-nested/<path>` (nothing
 * is deleted). Linked worktrees and submodules the repository itself registers are left alone; a
 * changed `.git` of a submodule path is {@link quarantineGitlinkRepos}'s.
 */
export async function quarantineNewNestedRepos(options: { root: string; commonDir: string; before: NestedRepoBaseline; agentId: string; now?: Date }): Promise<QuarantinedGitlinkRepo[]> {
  const now = nestedGitEntries(options.root, options.before.pruned);
  const fresh = [...now.keys()].filter((entry) => !options.before.entries.has(entry) && !isRegisteredGitFile(path.join(options.root, entry), options.commonDir)).sort();
  if (fresh.length === 0) return [];
  const stamp = (options.now ?? new Date()).toISOString().replace(/[:.]/g, '-');
  const target = path.join(options.commonDir, 'polywave', 'quarantine', `${options.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}-nested`);
  const moved: QuarantinedGitlinkRepo[] = [];
  for (const entry of fresh) {
    if (entry.endsWith('/')) {
      moved.push({ path: entry, error: `the directory cannot be read (${now.get(entry)}), so a repository in it could not be looked for` });
      continue;
    }
    const from = path.join(options.root, entry);
    const to = path.join(target, entry);
    try {
      moved.push({ path: entry, movedTo: await moveToQuarantine(from, to) });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT' && signatureOf(from) === 'absent') continue;
      moved.push({ path: entry, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return moved;
}

/**
 * Refuses (NESTED_REPOSITORY, exit 2) a repository top level `top` that lies in another
 * repository's work tree, when that outer repository tracks files under it (a tracked directory
 * turned into a repository: X13 s9/s2) or lists it as untracked and not ignored — unless it is a
 * submodule (a gitlink in the outer index) or a worktree/module the outer repository registers.
 * An outer repository with `status.showUntrackedFiles=no` (a home-directory dotfiles repository)
 * only refuses the first case. Outer repositories are checked upwards. Cost without an outer
 * `.git` in the ancestors: one lstat per ancestor.
 */
export async function assertNotNestedRepository(top: string, env?: Readonly<Record<string, string | undefined>>): Promise<void> {
  const nested = await nestedRepositoryOf(top, env);
  if (nested === undefined) return;
  throw new PolywaveError({
    code: nestedRepositoryCode,
    message: `${nested.repository} is a git repository nested in the work tree of ${nested.outer}, which ${nested.why}; polywave does not take it for the plan's repository (an agent can make such a repository: its config, hooks and polywave.config.json would be trusted). Nothing was changed. Move it out or register it as a submodule`,
    details: { repository: nested.repository, outer: nested.outer },
  });
}

/**
 * What {@link assertNotNestedRepository} refuses (the innermost refused pair), or undefined. Fails
 * closed: when git cannot read a repository around `top` (or its `.git` cannot be looked at), it
 * throws NESTED_REPOSITORY_UNCHECKED (exit 2) naming that repository and git's message — an error is
 * never taken for "not nested" (issue 11: an unreadable outer repository made the check pass).
 */
export async function nestedRepositoryOf(top: string, env?: Readonly<Record<string, string | undefined>>): Promise<{ repository: string; outer: string; why: string } | undefined> {
  let inner = path.resolve(top);
  for (let depth = 0; depth < 64; depth += 1) {
    const outer = outerRepositoryDir(inner);
    if (outer === undefined) return undefined;
    const relative = path.relative(outer, inner).split(path.sep).join('/');
    let why: string | undefined;
    try {
      why = await nestedReason(outer, inner, relative, env);
    } catch (error) {
      throw uncheckedError(outer, inner, error);
    }
    if (why !== undefined) return { repository: inner, outer, why };
    inner = outer;
  }
  return undefined;
}

/** git's own message (its stderr's first line) or the error's. */
function gitMessage(error: unknown): string {
  const stderr = (error as { stderr?: unknown } | undefined)?.stderr;
  if (typeof stderr === 'string' && stderr.trim() !== '') return stderr.trim().split('\n')[0]!;
  return error instanceof Error ? error.message : String(error);
}

function uncheckedError(outer: string, inner: string, error: unknown): PolywaveError {
  return new PolywaveError({
    code: nestedRepositoryUncheckedCode,
    exitCode: 2,
    message: `git could not read ${outer}, a repository around ${inner} (${gitMessage(error)}), so whether ${inner} is a repository nested in its work tree is unknown; polywave does not take it for the plan's repository. Nothing was changed. Fix ${path.join(outer, '.git')} (or move it away), then re-run`,
    details: { repository: inner, outer },
  });
}

/** The nearest ancestor directory of `dir` (not `dir`) holding a `.git` entry. */
function outerRepositoryDir(dir: string): string | undefined {
  let current = path.dirname(dir);
  for (;;) {
    try {
      lstatSync(path.join(current, '.git'));
      return current;
    } catch (error) {
      // none here; a `.git` that cannot be looked at (EACCES, ELOOP…) may be a repository: fail closed
      if (!isMissing(error)) throw uncheckedError(current, dir, error);
    }
    const parent = path.dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

async function nestedReason(outer: string, inner: string, relative: string, env?: Readonly<Record<string, string | undefined>>): Promise<string | undefined> {
  const options = { cwd: outer, env: { ...process.env, ...env } };
  let common: string;
  try {
    common = (await runGit(['rev-parse', '--path-format=absolute', '--git-common-dir'], options)).trim();
  } catch (error) {
    // Stays "not nested" only for an empty `.git` directory: git itself does not take it for a
    // repository (the loop checks the next one up). Anything else git cannot read (a broken or
    // foreign-owned repository, a bad gitfile) is refused by the caller (fail closed).
    if (isEmptyDirectory(path.join(outer, '.git'))) return undefined;
    throw error;
  }
  if (isRegisteredGitFile(path.join(inner, '.git'), common)) return undefined;
  const staged = await runGit(['--no-optional-locks', 'ls-files', '--stage', '-z', '--', relative], options);
  const records = staged.split('\0').filter((record) => record !== '');
  if (records.some((record) => record.startsWith('160000 ') && record.slice(record.indexOf('\t') + 1) === relative)) return undefined;
  if (records.length > 0) return `tracks files under ${relative}/`;
  const untracked = await runGit(['--no-optional-locks', 'ls-files', '-z', '--others', '--exclude-standard', '--directory', '--', relative], options);
  if (untracked === '') return undefined; // ignored there
  // `git config --get` exits 1 for an unset key (the default: untracked files shown); any other failure is an error.
  const showUntracked = (
    await runGit(['config', '--get', 'status.showUntrackedFiles'], options).catch((error: unknown) => {
      if (error instanceof GitError && error.gitExitCode === 1) return '';
      throw error;
    })
  )
    .trim()
    .toLowerCase();
  if (showUntracked === 'no' || showUntracked === 'false') return undefined;
  return `lists ${relative}/ as untracked (not ignored)`;
}

function isEmptyDirectory(directory: string): boolean {
  try {
    return lstatSync(directory).isDirectory() && readdirSync(directory).length === 0;
  } catch {
    return false; // not an empty directory we can see: fail closed
  }
}
