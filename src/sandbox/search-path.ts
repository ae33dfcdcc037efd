import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync, type Dirent } from 'node:fs';
import path from 'node:path';
import { fileSystemLocation, mountTable, within, type MountEntry } from './mount-table.js';

/** The directories execvp searches when PATH is unset (glibc's default). */
const defaultSearchPath = '/usr/local/bin:/usr/bin:/bin';

/**
 * Directories whose content an agent can write — the repositories polywave works on (their main checkouts, where a solo,
 * scaffold or integration agent works and merged work lands, and the agent worktrees inside them) — real paths. X42-11/12:
 * an ABSOLUTE PATH entry inside the main checkout (direnv's `PATH_add bin`, `layout node`'s `node_modules/.bin`) was
 * searched for polywave's own `git` and the sandbox wrapper's `bash`/`bwrap`: an agent that planted `bin/git` there
 * ran code on the host, and replaced the sandbox of its later calls.
 */
const untrustedRoots = new Set<string>();

/** This process's PATH as it was given, before any entry was dropped from it (the sandbox-side PATH starts from it). */
const givenPath = process.env.PATH;

/**
 * A path's real path, resolved as the kernel resolves it: component by component, each symlink followed before the `..`
 * after it (X44-16: `path.resolve` and Node's `realpathSync` drop `<link>/..` as text — `/tmp/lnk/../repo/bin`, with
 * `lnk -> <repo's parent>/deep`, is `<repo>/bin` to execvp). For one that does not exist (yet), its existing part's real
 * path with the rest appended — through a dangling symlink on the way, by its target (X43-01: `~/linkbin -> <repo>/bin`,
 * `bin` absent at the start, was judged by the link's own name, outside every repository — then the agent made
 * `<repo>/bin/git`). Undefined for a path that goes through `/proc` (X44-02: `/proc/self/cwd/bin`, `/dev/fd/…`,
 * `/proc/<pid>/root/…` name another directory in each process — a git child started in the repository searched
 * `<repo>/bin`, while this process saw its own cwd) or through more than 40 symlinks.
 */
function physicalPath(file: string, visited?: string[]): string | undefined {
  // (a relative path — polywave's own directories, never a PATH entry: relative entries are dropped — resolved as text)
  const pending = (path.isAbsolute(file) ? file : path.resolve(file)).split(path.sep);
  let current: string = path.sep;
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    if (part === '' || part === '.') continue;
    if (part === '..') {
      current = path.dirname(current);
      continue;
    }
    const next = path.join(current, part);
    if (current === path.sep && part === 'proc') {
      visited?.push(next);
      return undefined;
    }
    visited?.push(next);
    let link: string | undefined;
    try {
      link = lstatSync(next).isSymbolicLink() ? readlinkSync(next) : undefined;
    } catch {
      // (absent: the rest is appended as it is written)
    }
    if (link === undefined) {
      current = next;
      continue;
    }
    if (++links > 40) return undefined;
    pending.unshift(...link.split(path.sep));
    if (path.isAbsolute(link)) current = path.sep;
  }
  return current;
}

/** {@link physicalPath}, or the path resolved as text where it has none (a path through `/proc`: judged as untrusted by its callers). */
function realOrResolved(file: string): string {
  return physicalPath(file) ?? path.resolve(file);
}

/** `dev:ino` of a directory, or undefined. */
function identityOf(dir: string): string | undefined {
  try {
    const stat = statSync(dir, { bigint: true });
    return `${stat.dev}:${stat.ino}`;
  } catch {
    return undefined;
  }
}

/** The main checkout of a linked worktree whose `.git` file is `dotGit` (`gitdir:` → its `commondir`), or undefined. */
function mainCheckoutOf(dotGit: string): string | undefined {
  try {
    if (lstatSync(dotGit).isDirectory()) return undefined;
    const pointer = /^gitdir:\s*(.+)$/m.exec(readFileSync(dotGit, 'utf8'))?.[1]?.trim();
    if (!pointer) return undefined;
    const gitDir = path.resolve(path.dirname(dotGit), pointer);
    const common = path.resolve(gitDir, readFileSync(path.join(gitDir, 'commondir'), 'utf8').trim());
    return realOrResolved(path.dirname(common));
  } catch {
    return undefined;
  }
}

/**
 * No program is ever looked up in the repository around `dir` (the nearest directory with a `.git`, and a linked
 * worktree's main checkout: an agent worktree lies inside it) — nor under `dir` itself with `self` (a worker's `--dir`, where its jobs
 * write): entries of PATH inside them are dropped by {@link absolutePathEntries}, and this process's own PATH is
 * filtered again now. A directory in no repository adds nothing (the resident server answers calls from many).
 */
export function distrustSearchRoot(dir: string, options: { self?: boolean } = {}): void {
  // (every git instance calls this for its directory: once per directory)
  const seenKey = `${options.self ? 'self\0' : ''}${dir}`;
  if (seen.has(seenKey)) return;
  if (seen.size > 10_000) seen.clear();
  seen.add(seenKey);
  const real = realOrResolved(dir);
  const before = untrustedRoots.size;
  if (options.self) untrustedRoots.add(real);
  // The nearest repository (the checkout agents work in or merge into); from a linked worktree, its main checkout too.
  for (let current = real; ; current = path.dirname(current)) {
    const dotGit = path.join(current, '.git');
    if (existsSync(dotGit)) {
      untrustedRoots.add(current);
      const main = mainCheckoutOf(dotGit);
      if (main !== undefined) untrustedRoots.add(main);
      break;
    }
    if (path.dirname(current) === current) break;
  }
  if (untrustedRoots.size !== before) {
    judged.clear();
    rootIdentities.clear();
    for (const root of untrustedRoots) {
      const id = identityOf(root);
      if (id !== undefined) rootIdentities.set(id, root);
    }
  }
  if (untrustedRoots.size !== before && process.env.PATH !== undefined) process.env.PATH = absolutePathEntries(process.env.PATH);
}

/** Directories {@link distrustSearchRoot} was called for (by the caller's spelling). */
const seen = new Set<string>();

/** Judged entries that exist (emptied whenever a root is added); an entry absent now is judged again each time. */
const judged = new Map<string, boolean>();

/**
 * `dev:ino` of each untrusted root: the same directory mounted elsewhere (a bind mount) is the same directory. A match
 * counts only while the root is still that directory: a root removed since (a finished test repository, a worktree
 * cleaned up) frees its inode number, which a directory made later gets back — a new `bin` under /tmp was judged inside
 * a long-gone checkout and dropped (CI51: the missing-git test found the default search path's git).
 */
const rootIdentities = new Map<string, string>();

function inUntrustedRoot(entry: string): boolean {
  if (untrustedRoots.size === 0) return false;
  const known = judged.get(entry);
  if (known !== undefined) return known;
  const visited: string[] = [];
  const real = physicalPath(entry, visited);
  // (a path through /proc names another directory in each process: never searched)
  if (real === undefined) return true;
  const roots = [...untrustedRoots];
  const mounts = lazyMountTable();
  let inside = leadsIntoRoot(real, visited, roots, mounts);
  // X46-02: what execvp runs is the program FILE it finds in the entry, and a file there can lead into a root while the
  // directory does not — a symbolic link (`~/bin/git -> <repo>/tools/git`, a repository's git wrapper linked into a bin
  // directory; dangling until an agent's `tools/git` is merged, then polywave's own host git ran the agent's code) or a
  // file bind-mounted from one (`mount --bind <repo>/tools/git /usr/local/bin/git`). An entry holding one is the
  // root's as a whole: PATH cannot leave out one program of a directory.
  if (!inside) inside = programLeadsIntoRoot(real, roots, mounts);
  if (existsSync(entry)) judged.set(entry, inside);
  return inside;
}

/** The mount table, read once per judgment and only when a judgment needs it. */
function lazyMountTable(): () => MountEntry[] {
  let mounts: MountEntry[] | undefined;
  return () => (mounts ??= mountTable());
}

/**
 * Whether the real path `real` (reached through `visited`) is in one of `roots`: by its way there, by the device and
 * inode of its existing directories (`ids`: computed when not given), or by its place in its file system.
 */
function leadsIntoRoot(real: string, visited: readonly string[], roots: readonly string[], mounts: () => MountEntry[], ids: readonly string[] = existingIdentities(real)): boolean {
  // X45-01: every directory the lookup passes through counts, not only where it ends: `<repo>/.venv -> ../venv` (a
  // virtualenv kept beside the checkout) resolves outside, but the link itself is in the checkout, where the agent
  // replaces it with a directory of its own after the entry was judged — judged by the way there, the entry is the
  // checkout's (and the verdict, kept for an existing entry, stays true while nothing outside the roots changes).
  if ([real, ...visited].some((file) => roots.some((root) => within(file, root)))) return true;
  // X43-02: a PATH entry reaching the checkout through a bind mount (`/src` and `/workspaces/x` of one tree): realpath
  // does not see mounts — the entry's existing directories are compared with the roots by device and inode.
  for (const id of ids) {
    const root = rootIdentities.get(id);
    if (root !== undefined && identityOf(root) === id) return true;
  }
  // X45-02: a bind mount of a directory INSIDE a root (`<repo>/tools` at `/opt/tools`) has no ancestor that is the root:
  // the entry and the roots are compared by where they lie in their file systems (the mount table).
  return inRootByMount(real, roots, mounts());
}

/** `dev:ino` of `real` and of each directory above it that exists (the nearest first). */
function existingIdentities(real: string): string[] {
  const ids: string[] = [];
  for (let current = real; ; current = path.dirname(current)) {
    const id = identityOf(current);
    if (id !== undefined) ids.push(id);
    if (path.dirname(current) === current) break;
  }
  return ids;
}

/** Whether `real` lies, in its file system, inside where one of `roots` lies in the same file system (X45-02). */
function inRootByMount(real: string, roots: readonly string[], mounts: readonly MountEntry[]): boolean {
  const at = fileSystemLocation(mounts, real);
  if (at === undefined) return false;
  return roots.some((root) => {
    const rootAt = fileSystemLocation(mounts, root);
    return rootAt !== undefined && rootAt.device === at.device && within(at.inside, rootAt.inside);
  });
}

/** A symbolic link of a PATH entry resolved: its target's real path (undefined: through /proc, or a loop), the way there, and the target's identities. */
interface ResolvedLink {
  target: string | undefined;
  visited: string[];
  ids: string[];
  throughProc: boolean;
}

/**
 * The symbolic links directly in each judged directory, resolved, while the directory is unchanged (inode, mtime,
 * ctime): a new root only changes which of them count, so judging a `/usr/bin` of ~400 links again for each new worktree
 * costs string comparisons, not ~4,000 lstat calls.
 */
const linksCache = new Map<string, { stamp: string; links: ResolvedLink[] }>();

function linksIn(real: string): ResolvedLink[] {
  let stamp: string;
  try {
    const stat = statSync(real, { bigint: true });
    if (!stat.isDirectory()) return [];
    stamp = `${stat.dev}:${stat.ino}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch {
    return [];
  }
  const cached = linksCache.get(real);
  if (cached?.stamp === stamp) return cached.links;
  let entries: Dirent[];
  try {
    entries = readdirSync(real, { withFileTypes: true });
  } catch {
    return [];
  }
  const links: ResolvedLink[] = [];
  for (const dirent of entries) {
    if (!dirent.isSymbolicLink()) continue;
    const visited: string[] = [];
    const target = physicalPath(path.join(real, dirent.name), visited);
    links.push({ target, visited, ids: target === undefined ? [] : existingIdentities(target), throughProc: visited.some((file) => within(file, '/proc')) });
  }
  if (linksCache.size > 1_000) linksCache.clear();
  linksCache.set(real, { stamp, links });
  return links;
}

/**
 * X46-02: whether a file directly in the directory `real` leads into one of `roots`: a symbolic link whose way or target
 * is in one ({@link leadsIntoRoot}; dangling too — by where it points: the file can be made there later), or that goes
 * through `/proc` (another directory in each process); or a mount point there (a bound file) showing a file of one.
 */
function programLeadsIntoRoot(real: string, roots: readonly string[], mounts: () => MountEntry[]): boolean {
  for (const link of linksIn(real)) {
    // (a loop of links: execvp cannot run it either)
    if (link.target === undefined ? link.throughProc : leadsIntoRoot(link.target, link.visited, roots, mounts, link.ids)) return true;
  }
  return mounts().some((mount) => path.dirname(mount.mountPoint) === real && inRootByMount(mount.mountPoint, roots, mounts()));
}

/**
 * PATH with only its absolute entries outside every repository polywave works on (X40-02, X41-01/02/05, X42-11/12).
 * polywave starts host programs (git, the sandbox wrapper's `bash` and the `bwrap` in it, the sandbox probe) with a cwd
 * an agent can write — its worktree, or the main checkout where its merged work lands — and an empty entry
 * (`PATH=:$PATH`, `PATH=$EXTRA:$PATH` with EXTRA unset) or a relative one (`node_modules/.bin`, `.`) is searched relative
 * to that cwd: the agent's own `git` or `bash` ran on the host, outside the sandbox; an absolute entry inside the
 * checkout (`<repo>/bin`, `<repo>/node_modules/.bin`) is a directory the agent can write just the same. Never empty (an
 * empty PATH is the current directory too): the default search path then. Undefined when unset.
 */
export function absolutePathEntries(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const kept = value.split(path.delimiter).filter((entry) => path.isAbsolute(entry) && !inUntrustedRoot(entry));
  return kept.length > 0 ? kept.join(path.delimiter) : defaultSearchPath;
}

/** `env` with {@link absolutePathEntries} of its PATH (the same object when nothing changes). */
export function withAbsolutePath<T extends Readonly<Record<string, string | undefined>>>(env: T): T {
  const value = env.PATH;
  const kept = absolutePathEntries(value);
  return kept === value ? env : ({ ...env, PATH: kept } as T);
}

/** The nearest directory at or above `dir` (a real path) holding a `.git`, or undefined. */
function repositoryAround(dir: string): string | undefined {
  for (let current = dir; ; current = path.dirname(current)) {
    if (existsSync(path.join(current, '.git'))) return current;
    if (path.dirname(current) === current) return undefined;
  }
}

/**
 * The PATH for a command run INSIDE a sandbox whose working directory is `cwd` (follow-up of X42-11/12). The host never
 * searches an entry inside a repository polywave works on ({@link absolutePathEntries}), but inside the sandbox such an
 * entry is the agent's own (its worktree, writable) or read-only (the main checkout's view): a binary there is code the
 * agent could run anyway, so a project's `<checkout>/node_modules/.bin` (direnv's `layout node`) or `<checkout>/bin`
 * (`PATH_add bin`) is searched again there, at its place in the PATH polywave was given. An entry inside the main
 * checkout of the linked worktree `cwd` lies in (an agent worktree, which sees the main checkout as an empty view) is
 * searched in the worktree first (`<worktree>/bin` for `<checkout>/bin`: the same tracked files, the agent's branch),
 * then as it is. Relative and empty entries stay dropped (searched from a cwd the agent chose). `value` (the host-side
 * PATH the command is given) keeps its own entries; undefined when unset. Never used to start a host program: the
 * sandbox wrapper hands it in {@link sandboxPathVariable}, and the runner inside the sandbox exports it.
 */
export function sandboxSearchPath(value: string | undefined, cwd: string, given: string | undefined = givenPath): string | undefined {
  if (value === undefined) return undefined;
  // (absolute entries only, as on the host: an empty or relative one is the cwd's — X41-02's planted `bash` ran as the
  // sandbox runner's shell)
  const current = value.split(path.delimiter).filter((entry) => path.isAbsolute(entry));
  const present = new Set(current);
  const realCwd = realOrResolved(cwd);
  const repository = repositoryAround(realCwd);
  const main = repository === undefined ? undefined : mainCheckoutOf(path.join(repository, '.git'));
  // The checkout's entries of the given PATH, each put before the next given entry the command's PATH has (its own
  // order kept as it is), or at its end.
  const before = new Map<string, string[]>();
  let pending: string[] = [];
  for (const entry of (given ?? '').split(path.delimiter)) {
    if (!path.isAbsolute(entry)) continue;
    if (!inUntrustedRoot(entry)) {
      if (present.has(entry) && pending.length > 0) {
        before.set(entry, [...(before.get(entry) ?? []), ...pending]);
        pending = [];
      }
      continue;
    }
    const real = realOrResolved(entry);
    if (repository !== undefined && main !== undefined && main !== repository && within(real, main) && !within(real, repository)) pending.push(path.join(repository, path.relative(main, real)));
    pending.push(entry);
  }
  const result: string[] = [];
  const add = (entry: string) => {
    if (!result.includes(entry)) result.push(entry);
  };
  for (const entry of current) {
    for (const inserted of before.get(entry) ?? []) add(inserted);
    add(entry);
  }
  for (const inserted of pending) add(inserted);
  return result.length > 0 ? result.join(path.delimiter) : undefined;
}

/** The variable the sandbox wrapper hands {@link sandboxSearchPath} in; the runner inside the sandbox exports it as PATH. */
export const sandboxPathVariable = 'POLYWAVE_SANDBOX_PATH';
