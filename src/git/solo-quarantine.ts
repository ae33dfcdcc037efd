/**
 * What an agent working IN the main checkout (solo, integration, scaffold) may not leave there
 * (issue 11, outside attack X14 #3/#5, helper S10). nested-repos.ts moves out a new `.git`; two
 * leftovers got past it:
 *
 * - **An implicit git directory.** A directory holding `HEAD`, `objects/` and `refs/` IS a git dir to
 *   git's discovery (no `.git` needed; `safe.bareRepository` is `all` by default). `docs/IMPL` made one
 *   with `core.worktree=../..`: the user's own `git status` there ran its fsmonitor and clean filter
 *   outside any sandbox. Every directory git would take for a git dir (HEAD + objects/ + refs/, or
 *   HEAD + commondir) that was not one at the agent's start is made harmless when it stops — whether
 *   or not the wave is refused otherwise: a directory without tracked files is moved out whole, else
 *   its untracked git-dir entries (`HEAD`, `objects`, `refs`, `commondir`, `config`…).
 * - **What the stop audit refuses stays.** Untracked unowned files the audit flags (I1) block the
 *   wave but stayed in the checkout (those there before the agent started are the user's: left), and an owned file turned into a link into `.git` (or out of the
 *   checkout) stayed where the user's editor would write through it. Both are moved out; an owned
 *   file that was tracked is written back from its committed version.
 *
 * Everything moved goes to `<git dir>/polywave/quarantine/<agent>-<time>-leftover/<path>` (nothing is
 * deleted), is returned for the agent's denials, and keeps the stop refused ({@link withLeftovers}).
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, lstatSync, readdirSync, readFileSync, realpathSync, rmdirSync, type Dirent } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { hostGitProcessEnvironment } from './harden.js';
import { moveToQuarantine } from './quarantine-move.js';
import { runGit } from './run-git.js';

/** What this module needs of an agent's jail (agents/jail/types.ts Jail): its stop audit. */
export interface AuditedJail {
  audit(options?: { baseCommit?: string }): Promise<{ ok: boolean; violations: Array<{ code: string; reason: string; path?: string }>; changedFiles: string[]; uncommittedFiles: string[] }>;
  /** Whether the agent may write `path` (its own files): a deleted untracked file it may write is not put back. */
  checkWrite?(path: string): Promise<{ allowed: boolean }>;
}

/** The denial code of a leftover moved out of the main checkout after its agent. */
export const soloLeftoverCode = 'SANDBOX_SOLO_LEFTOVER_QUARANTINED';

/** The directories git would take for a git dir when the agent started (relative, `/`-separated). */
export interface SoloLeftoverBaseline {
  gitDirs: ReadonlySet<string>;
  /** Directories not walked (ignored ones the ignored-path guard watches). */
  pruned: ReadonlySet<string>;
  /**
   * Untracked, not ignored files already there, one by one (X27-02: with git's collapsed list, a file an agent added
   * inside a directory that was wholly untracked — a queue made by `queue add`, a `docs/` holding only CONTEXT.md —
   * counted as the user's): the user's, never moved.
   */
  untracked: ReadonlySet<string>;
  /**
   * Tracked files that differed from HEAD already (the user's uncommitted work): their content then (null: deleted
   * then; undefined: too large to keep), so that one the agent changed again is put back as the user left it.
   */
  dirtyTracked?: ReadonlyMap<string, Buffer | null | undefined>;
  /**
   * The untracked files of {@link untracked} as they were (X28-01: the user's own untracked file — a queue item made by
   * `queue add` — rewritten by the agent stayed, being "the user's"): their identity and, when small enough, content.
   */
  untrackedFiles?: ReadonlyMap<string, UntrackedPrint>;
  /** The untracked entries that were directories (nested repositories, listed by git as one entry): what may hold the user's paths below it. */
  untrackedDirs?: ReadonlySet<string>;
  /** FIFOs, sockets and device nodes (git lists none of them: X30-04) there when the agent started. */
  specials?: ReadonlySet<string>;
  /** The permission bits of the checkout's directories and files (its root as `''`) when the agent started: git keeps none but a file's x bit (X30-08). */
  modes?: ReadonlyMap<string, number>;
}

/** An untracked file at the agent's start: what tells a change, and its content when kept (≤ 1 MiB each, 16 MiB in all). */
export interface UntrackedPrint {
  size: number;
  mtimeMs: number;
  ctimeMs: number;
  ino: number;
  mode: number;
  content?: Buffer;
}

/** One leftover: moved (`movedTo`), or not (`error`); `restored` when an owned tracked file was written back. */
export interface SoloLeftover {
  path: string;
  why: 'git-dir' | 'unowned' | 'link' | 'unowned-tracked' | 'unowned-untracked' | 'special' | 'mode' | 'empty-dir';
  movedTo?: string;
  restored?: boolean;
  error?: string;
}

/** Entries of a directory that make it a git dir (git's is_git_directory: HEAD + objects/ + refs/, or HEAD + commondir). */
const gitDirEntries = ['HEAD', 'objects', 'refs', 'commondir', 'config', 'hooks', 'info', 'packed-refs', 'index', 'gitdir'];

function kind(dirents: readonly Dirent[], name: string): 'file' | 'dir' | 'link' | undefined {
  const entry = dirents.find((dirent) => dirent.name === name);
  if (!entry) return undefined;
  return entry.isSymbolicLink() ? 'link' : entry.isDirectory() ? 'dir' : 'file';
}

/**
 * True when git's discovery would take directory `dir` with these entries for a git dir: a HEAD that is
 * not a directory, and `objects` and `refs` that git's is_git_directory accepts — it only asks
 * `access(X_OK)`, so an EXECUTABLE FILE counts as well as a directory (outside attack X16 #16, checked
 * with git 2.39: `objects`/`refs` as `chmod +x` files are taken, as plain files not); a link counts
 * (git follows it; a dangling one is counted too, erring on the side of moving it); or a `commondir`.
 */
function looksLikeGitDir(dir: string, dirents: readonly Dirent[]): boolean {
  const head = kind(dirents, 'HEAD');
  if (head === undefined || head === 'dir') return false;
  if (kind(dirents, 'commondir') !== undefined) return true;
  const accepted = (name: string): boolean => {
    const found = kind(dirents, name);
    if (found === undefined) return false;
    if (found !== 'file') return true;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  return accepted('objects') && accepted('refs');
}

/**
 * Every directory below `root` (not `root` itself: git looks for `root/.git` first) git would take
 * for a git dir, by a walk that skips `.git` directories and `prune`d ones. An unreadable directory
 * is `<dir>/` (a new one is reported: what it holds could not be looked at).
 */
export function implicitGitDirs(root: string, prune: ReadonlySet<string> = new Set(), specials?: Set<string>, modes?: Map<string, number>): Set<string> {
  const found = new Set<string>();
  const stack = [''];
  while (stack.length > 0) {
    const relative = stack.pop()!;
    let dirents: Dirent[];
    try {
      dirents = readdirSync(relative === '' ? root : path.join(root, relative), { withFileTypes: true });
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') found.add(relative === '' ? './' : `${relative}/`);
      continue;
    }
    if (relative !== '' && looksLikeGitDir(path.join(root, relative), dirents)) found.add(relative);
    if (modes) {
      for (const entry of [relative, ...dirents.filter((dirent) => dirent.isFile() || (dirent.isDirectory() && dirent.name !== '.git')).map((dirent) => (relative === '' ? dirent.name : `${relative}/${dirent.name}`))]) {
        if (entry !== relative && modes.has(entry)) continue;
        try {
          modes.set(entry, lstatSync(entry === '' ? root : path.join(root, entry)).mode & 0o7777);
        } catch {
          // gone meanwhile
        }
      }
    }
    for (const dirent of dirents) {
      const child = relative === '' ? dirent.name : `${relative}/${dirent.name}`;
      if (dirent.isDirectory() && dirent.name !== '.git' && !prune.has(child)) stack.push(child);
      else if (specials && (dirent.isFIFO() || dirent.isSocket() || dirent.isCharacterDevice() || dirent.isBlockDevice())) specials.add(child);
    }
  }
  return found;
}

/** What {@link untrackedBaseline} keeps of the checkout's untracked and uncommitted files at the agent's launch. */
export type UntrackedBaseline = Pick<SoloLeftoverBaseline, 'untracked' | 'dirtyTracked' | 'untrackedFiles' | 'untrackedDirs'>;

/** An untracked file's content is kept when it is at most this large (and the total stays within {@link untrackedKeptTotal}). */
export const untrackedKeptEach = 1024 * 1024;
const untrackedKeptTotal = 16 * 1024 * 1024;

/**
 * The checkout's untracked (not ignored) files and uncommitted tracked changes at the agent's launch, with the
 * content kept that fits (untracked ≤ 1 MiB each, 16 MiB in all; tracked changes 64 MiB in all). Taken before the
 * agent's sandbox is planned: an untracked file too large to keep is bound read-only in it (run-agent.ts).
 * Throws when git cannot list the untracked paths.
 */
export async function untrackedBaseline(root: string, options: { env?: Readonly<Record<string, string | undefined>> } = {}): Promise<UntrackedBaseline> {
  const env = { ...process.env, ...options.env, GIT_OPTIONAL_LOCKS: '0' };
  const [listing, changed] = await Promise.all([
    runGit(['ls-files', '-z', '--others', '--exclude-standard'], { cwd: root, env }),
    runGit(['diff', '--name-only', '-z', '--no-renames', 'HEAD', '--'], { cwd: root, env }).catch(() => ''),
  ]);
  const untracked = new Set(listing.split('\0').filter(Boolean).map((entry) => entry.replace(/\/+$/, '')));
  // The user's uncommitted changes to tracked files, kept (up to 64 MiB in all) to be put back should the agent change them.
  const dirtyTracked = new Map<string, Buffer | null | undefined>();
  let kept = 0;
  for (const entry of changed.split('\0').filter(Boolean)) {
    let content: Buffer | null | undefined;
    try {
      const stats = lstatSync(path.join(root, entry));
      if (stats.isFile() && kept + stats.size <= 64 * 1024 * 1024) {
        content = readFileSync(path.join(root, entry));
        kept += content.length;
      }
    } catch (error) {
      // X28-02: deleted by the user (not yet committed) is a state of its own: an agent that makes it again is undone.
      content = (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : undefined;
    }
    dirtyTracked.set(entry, content);
  }
  const untrackedFiles = new Map<string, UntrackedPrint>();
  const untrackedDirs = new Set<string>();
  let keptUntracked = 0;
  for (const entry of untracked) {
    try {
      const stats = lstatSync(path.join(root, entry));
      if (stats.isDirectory()) untrackedDirs.add(entry);
      if (!stats.isFile()) continue;
      const print: UntrackedPrint = { size: stats.size, mtimeMs: stats.mtimeMs, ctimeMs: stats.ctimeMs, ino: stats.ino, mode: stats.mode & 0o7777 };
      if (stats.size <= untrackedKeptEach && keptUntracked + stats.size <= untrackedKeptTotal) {
        print.content = readFileSync(path.join(root, entry));
        keptUntracked += print.content.length;
      }
      untrackedFiles.set(entry, print);
    } catch {
      // gone meanwhile
    }
  }
  return { untracked, dirtyTracked, untrackedFiles, untrackedDirs };
}

/** The untracked files of `baseline` whose content was not kept (too large): what the agent's sandbox binds read-only. */
export function untrackedNotKept(baseline: UntrackedBaseline): string[] {
  return [...(baseline.untrackedFiles ?? new Map<string, UntrackedPrint>())].filter(([, print]) => print.content === undefined).map(([entry]) => entry);
}

/**
 * The baseline at the agent's launch; `pruned`: the ignored directories nested-repos' baseline does not
 * walk either; `untracked`: {@link untrackedBaseline}'s answer when the caller took it already. Throws when git
 * cannot list the untracked paths (the caller then runs no quarantine of untracked paths rather than move the
 * user's own files).
 */
export async function soloLeftoverBaseline(root: string, options: { pruned?: ReadonlySet<string>; env?: Readonly<Record<string, string | undefined>>; untracked?: UntrackedBaseline } = {}): Promise<SoloLeftoverBaseline> {
  const pruned = options.pruned ?? new Set<string>();
  const files = options.untracked ?? (await untrackedBaseline(root, options.env ? { env: options.env } : {}));
  const specials = new Set<string>();
  const modes = new Map<string, number>();
  return { gitDirs: implicitGitDirs(root, pruned, specials, modes), pruned, specials, modes, ...files };
}

/**
 * Writes `entry` back (never over something that is there again: `wx`), with `mode` when given — never through a
 * link: a directory on its way the agent turned into a symlink (to your home, out of the checkout) is refused.
 */
async function writeBack(root: string, entry: string, content: Buffer, mode?: number): Promise<void> {
  const file = path.join(root, entry);
  const parts = entry.split('/').slice(0, -1);
  for (let index = 1; index <= parts.length; index += 1) {
    const dir = path.join(root, ...parts.slice(0, index));
    let stats: ReturnType<typeof lstatSync> | undefined;
    try {
      stats = lstatSync(dir);
    } catch {
      break; // absent from here on: made below as directories
    }
    if (!stats.isDirectory()) throw new Error(`"${parts.slice(0, index).join('/')}" is no longer a directory (${stats.isSymbolicLink() ? 'a symbolic link' : 'a file'})`);
  }
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content, { flag: 'wx' });
  if (mode !== undefined) await chmod(file, mode);
}

/**
 * `entry` is an untracked path of the baseline, or lies in an untracked DIRECTORY of it (a nested repository). Not
 * below an untracked file of yours (X30-01: `TODO.md` replaced by a directory holding `TODO.md/evil.test.js` counted
 * as yours and stayed).
 */
function wasThere(before: SoloLeftoverBaseline, entry: string): boolean {
  if (before.untracked.has(entry)) return true;
  for (let current = path.posix.dirname(entry); current !== '.' && current !== ''; current = path.posix.dirname(current)) {
    if (before.untracked.has(current) && (before.untrackedDirs?.has(current) ?? !(before.untrackedFiles?.has(current) ?? false))) return true;
  }
  return false;
}

/** Of `paths` (relative), those git tracks a file at or below (one `git ls-files`, literal pathspecs). */
async function trackedAmong(root: string, paths: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<Set<string>> {
  if (paths.length === 0) return new Set();
  const listing = await runGit(['--literal-pathspecs', 'ls-files', '-z', '--', ...paths], { cwd: root, env: { ...process.env, ...env, GIT_OPTIONAL_LOCKS: '0' } });
  const files = listing.split('\0').filter(Boolean);
  return new Set(paths.filter((entry) => files.some((file) => file === entry || file.startsWith(`${entry}/`))));
}

/** The link at `absolute` leads into the git dir or out of `root` (or nowhere it can be resolved). */
function dangerousLink(absolute: string, root: string): boolean {
  try {
    if (!lstatSync(absolute).isSymbolicLink()) return false;
  } catch {
    return false;
  }
  const realRoot = realpathSync(root);
  let target: string;
  try {
    target = realpathSync(absolute);
  } catch {
    return true; // dangling: it may be made to point anywhere later
  }
  const relative = path.relative(realRoot, target);
  return relative === '' || relative.startsWith('..') || path.isAbsolute(relative) || relative.split(path.sep)[0] === '.git';
}

/** `<commit>:<file>` as a regular file (mode and content), or undefined (absent, a link, a gitlink). */
async function committedFile(root: string, commit: string, file: string, env: Readonly<Record<string, string | undefined>>): Promise<{ mode: number; content: Buffer } | undefined> {
  const genv = { ...process.env, ...env, GIT_OPTIONAL_LOCKS: '0' };
  const tree = await runGit(['ls-tree', '-z', commit, '--', file], { cwd: root, env: genv }).catch(() => '');
  const catEnv = hostGitProcessEnvironment(['cat-file'], genv);
  const match = /^(100644|100755) blob ([0-9a-f]+)\t/.exec(tree);
  if (!match) return undefined;
  const content = await new Promise<Buffer>((resolve, reject) => {
    execFile('git', ['cat-file', 'blob', match[2]!], { cwd: root, env: catEnv, encoding: 'buffer', maxBuffer: 64 * 1024 * 1024 }, (error, stdout) => (error ? reject(error) : resolve(stdout)));
  });
  return { mode: match[1] === '100755' ? 0o755 : 0o644, content };
}

/** Which of `entries` (relative to `root`) git ignores; none when git cannot tell (they are then judged as the agent's). */
async function ignoredAmong(root: string, entries: readonly string[], env: Readonly<Record<string, string | undefined>>): Promise<Set<string>> {
  const listing = await runGit(['check-ignore', '-z', '--stdin'], { cwd: root, env: { ...process.env, ...env, GIT_OPTIONAL_LOCKS: '0' }, input: `${entries.join('\0')}\0` }).catch(() => '');
  return new Set(listing.split('\0').filter((entry) => entry !== ''));
}

/**
 * After an agent in the main checkout (its processes gone): moves out every new implicit git dir,
 * every untracked path the stop audit flags (I1) and every changed path that is a link into `.git` or
 * out of the checkout; an owned tracked file moved out is written back from HEAD (else the base).
 */
export async function quarantineSoloLeftovers(options: {
  root: string;
  jail: AuditedJail;
  before: SoloLeftoverBaseline;
  agentId: string;
  baseCommit?: string;
  env?: Readonly<Record<string, string | undefined>>;
  now?: Date;
  /** Directories (relative to `root`) whose new empty subdirectories are not the agent's: polywave's state, what its sandbox had read-only (X44-15). */
  notTheAgents?: readonly string[];
}): Promise<SoloLeftover[]> {
  const { root } = options;
  const env = options.env ?? {};
  const gitDir = path.join(root, '.git');
  const stamp = (options.now ?? new Date()).toISOString().replace(/[:.]/g, '-');
  const target = path.join(gitDir, 'polywave', 'quarantine', `${options.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}-leftover`);
  const results: SoloLeftover[] = [];
  const moved = new Set<string>();
  const move = async (entry: string, why: SoloLeftover['why']): Promise<SoloLeftover> => {
    const from = path.join(root, entry);
    const to = path.join(target, entry);
    try {
      const movedTo = await moveToQuarantine(from, to);
      moved.add(entry);
      return { path: entry, why, movedTo };
    } catch (error) {
      return { path: entry, why, error: error instanceof Error ? error.message : String(error) };
    }
  };

  // 1. New implicit git dirs, whatever else the stop decides.
  const specialsNow = new Set<string>();
  const modesNow = new Map<string, number>();
  const fresh = [...implicitGitDirs(root, options.before.pruned, specialsNow, options.before.modes ? modesNow : undefined)].filter((entry) => !options.before.gitDirs.has(entry)).sort();
  for (const entry of fresh) {
    if (entry.endsWith('/')) {
      results.push({ path: entry, why: 'git-dir', error: 'the directory cannot be read, so a git directory in it could not be looked for' });
      continue;
    }
    if ((await trackedAmong(root, [entry], env)).size === 0) {
      results.push(await move(entry, 'git-dir'));
      continue;
    }
    // It holds the project's files (docs/IMPL): only its untracked git-dir entries go.
    const present = gitDirEntries.filter((name) => {
      try {
        lstatSync(path.join(root, entry, name));
        return true;
      } catch {
        return false;
      }
    });
    const tracked = await trackedAmong(root, present.map((name) => `${entry}/${name}`), env);
    for (const name of present) if (!tracked.has(`${entry}/${name}`)) results.push(await move(`${entry}/${name}`, 'git-dir'));
    try {
      if (looksLikeGitDir(path.join(root, entry), readdirSync(path.join(root, entry), { withFileTypes: true }))) results.push({ path: entry, why: 'git-dir', error: 'still a git directory: its HEAD, objects or refs are tracked files' });
    } catch {
      // gone: nothing left to look at
    }
  }

  // X30-04: a FIFO, socket or device node the agent left (git lists none: no audit sees it; a `.npmrc` FIFO hangs every
  // npm in the checkout) is moved out, whoever owns the path (run-agent moves them before any git listing: X30-13).
  if (options.before.specials) {
    const inMoved = (entry: string): boolean => [...moved].some((done) => entry === done || entry.startsWith(`${done}/`));
    for (const entry of [...specialsNow].filter((special) => !options.before.specials!.has(special) && !inMoved(special)).sort()) results.push(await move(entry, 'special'));
  }

  // X30-08: write for group or others, setuid or setgid the agent ADDED to the checkout's root, a directory or a file (on
  // a shared host another user could then rewrite what you run, or swap the checkout's .git) is taken back off.
  if (options.before.modes) {
    // (X44-15: the sticky bit too)
    const widening = 0o7022;
    for (const [entry, mode] of modesNow) {
      const was = options.before.modes.get(entry);
      if (was === undefined || (mode & widening & ~was) === 0) continue;
      const result: SoloLeftover = { path: entry === '' ? '.' : entry, why: 'mode' };
      try {
        await chmod(entry === '' ? root : path.join(root, entry), mode & ~(widening & ~was));
        result.restored = true;
      } catch (error) {
        result.error = `its permission bits could not be put back: ${error instanceof Error ? error.message : String(error)}`;
      }
      results.push(result);
    }
  }

  // X44-15: a directory made while the agent ran and left EMPTY (git lists none: `src/b.ts/` in a later agent's path broke
  // its wave, an empty `.husky/` changes what tools do) is removed, deepest first. Only one the agent made: not one
  // in `notTheAgents` (polywave's own state — the journal's `tool-results/` — and what the agent's sandbox has
  // read-only: it could not make a directory there), nor one git ignores (the output and caches of the tools a run
  // starts — a build's `dist/`, `node_modules/.vite-temp/`; a new ignored path is sandbox/ignored-paths.ts's).
  if (options.before.modes) {
    const outside = (options.notTheAgents ?? []).map((entry) => entry.replace(/\/+$/, '')).filter((entry) => entry !== '');
    const theAgents = (entry: string): boolean => !outside.some((dir) => entry === dir || entry.startsWith(`${dir}/`));
    const isEmptyDir = (entry: string): boolean => {
      try {
        const full = path.join(root, entry);
        return lstatSync(full).isDirectory() && readdirSync(full).length === 0;
      } catch {
        return false;
      }
    };
    const made = [...modesNow.keys()].filter((entry) => entry !== '' && !options.before.modes!.has(entry) && theAgents(entry)).sort((a, b) => b.split('/').length - a.split('/').length || b.localeCompare(a));
    // (a directory only the removal of an empty one below empties is judged too: the first listing of the empty ones
    // is asked of git at once, their parents one by one as they come)
    const candidates = made.filter(isEmptyDir);
    const ignored = candidates.length === 0 ? new Set<string>() : await ignoredAmong(root, candidates, env);
    for (const entry of made) {
      // (one a move above emptied is the move's: reported with it)
      if ([...moved].some((done) => done.startsWith(`${entry}/`))) continue;
      if (!isEmptyDir(entry)) continue;
      if (candidates.includes(entry) ? ignored.has(entry) : (await ignoredAmong(root, [entry], env)).has(entry)) continue;
      try {
        rmdirSync(path.join(root, entry));
        results.push({ path: entry, why: 'empty-dir', restored: true });
      } catch (error) {
        results.push({ path: entry, why: 'empty-dir', error: `it could not be removed: ${error instanceof Error ? error.message : String(error)}` });
      }
    }
  }

  // 2. What the stop audit refuses: untracked unowned paths, and links into .git / out of the checkout.
  const audit = await options.jail.audit(options.baseCommit ? { baseCommit: options.baseCommit } : {});
  const flagged = [...new Set(audit.violations.filter((violation) => violation.code === 'JAIL_UNOWNED_CHANGE' && violation.path).map((violation) => violation.path!.replace(/\/+$/, '')))];
  const exists = (entry: string): boolean => {
    try {
      lstatSync(path.join(root, entry));
      return true;
    } catch {
      return false;
    }
  };
  const within = (entry: string): boolean => [...moved].some((done) => entry === done || entry.startsWith(`${done}/`));
  const candidates = flagged.filter((entry) => exists(entry) && !within(entry) && !wasThere(options.before, entry));
  const tracked = await trackedAmong(root, candidates, env);
  for (const entry of candidates) if (!tracked.has(entry)) results.push(await move(entry, 'unowned'));
  // X27: a TRACKED file the agent does not own, changed (or deleted) while it ran — a queue item's autonomy, another IMPL's
  // task, the PROGRAM's tier gate, polywave.config.json — stayed, and later steps read and committed it. Its version goes to
  // the quarantine and the file is put back: as the user left it (uncommitted work), else as committed at HEAD.
  const trackedFlagged = flagged.filter((entry) => !within(entry) && !results.some((result) => result.path === entry));
  const trackedNow = await trackedAmong(root, trackedFlagged, env);
  for (const entry of trackedFlagged) {
    if (!trackedNow.has(entry)) continue;
    const before = options.before.dirtyTracked;
    const userCopy = before?.get(entry);
    if (userCopy === null) {
      // X28-02: you had deleted it (not yet committed); the agent made it again: its copy goes, the file stays deleted.
      const gone = await move(entry, 'unowned-tracked');
      results.push(gone.movedTo ? { ...gone, restored: true } : gone);
      continue;
    }
    if (before?.has(entry) && userCopy === undefined) {
      // uncommitted before (deleted, or too large to keep): left as it is, and said
      results.push({ path: entry, why: 'unowned-tracked', error: 'it had uncommitted changes of yours before the agent ran, too large to keep, so it was left as it is: look at it before you commit' });
      continue;
    }
    const isFile = ((): boolean => {
      try {
        const stats = lstatSync(path.join(root, entry));
        return stats.isFile() || stats.isSymbolicLink();
      } catch {
        return false;
      }
    })();
    let result: SoloLeftover = { path: entry, why: 'unowned-tracked' };
    if (isFile) result = await move(entry, 'unowned-tracked');
    if (isFile && result.movedTo === undefined) {
      results.push(result);
      continue;
    }
    try {
      const committed = userCopy === undefined ? await committedFile(root, 'HEAD', entry, env) : undefined;
      if (userCopy !== undefined) await writeBack(root, entry, userCopy);
      else if (committed) await writeBack(root, entry, committed.content, committed.mode);
      result.restored = userCopy !== undefined || committed !== undefined;
      if (!result.restored && !isFile) result.error = 'deleted, and not a regular file at HEAD to put back';
    } catch (error) {
      result.error = `could not be put back: ${error instanceof Error ? error.message : String(error)}`;
    }
    results.push(result);
  }
  // X28-01: an untracked file of yours from before the agent (never moved as a leftover: it is yours) that the agent
  // rewrote — flagged by the audit, so not the agent's to write. Its version goes to the quarantine, yours is put back.
  for (const entry of flagged) {
    const print = options.before.untrackedFiles?.get(entry);
    if (!print || within(entry) || results.some((result) => result.path === entry)) continue;
    let now: ReturnType<typeof lstatSync> | undefined;
    try {
      now = lstatSync(path.join(root, entry));
    } catch {
      now = undefined;
    }
    if (now?.isFile() && now.size === print.size && now.mtimeMs === print.mtimeMs && now.ctimeMs === print.ctimeMs && now.ino === print.ino) continue;
    if (print.content === undefined) {
      results.push({ path: entry, why: 'unowned-untracked', error: 'an untracked file of yours the agent changed; too large to have been kept, so it was left as it is: look at it' });
      continue;
    }
    const result = now ? await move(entry, 'unowned-untracked') : { path: entry, why: 'unowned-untracked' as const };
    if (now && result.movedTo === undefined) {
      results.push(result);
      continue;
    }
    try {
      await writeBack(root, entry, print.content, print.mode);
      result.restored = true;
    } catch (error) {
      result.error = `could not be put back: ${error instanceof Error ? error.message : String(error)}`;
    }
    results.push(result);
  }
  const links = [...new Set([...audit.changedFiles, ...audit.uncommittedFiles].map((entry) => entry.replace(/\/+$/, '')))].filter((entry) => !within(entry) && !wasThere(options.before, entry) && dangerousLink(path.join(root, entry), root));
  for (const entry of links) {
    const result = await move(entry, 'link');
    if (result.movedTo) {
      // An owned file the project tracks: written back as committed (HEAD, else the wave's base).
      for (const commit of ['HEAD', ...(options.baseCommit ? [options.baseCommit] : [])]) {
        const committed = await committedFile(root, commit, entry, env);
        if (!committed) continue;
        try {
          await writeBack(root, entry, committed.content, committed.mode);
          result.restored = true;
        } catch {
          // something is there again, or the directory is gone: left as it is
        }
        break;
      }
    }
    results.push(result);
  }
  // An untracked file of yours from before the agent that it deleted (git status shows nothing: the audit flags
  // nothing) is put back from the copy kept at its start, unless the agent may write it (one it owns).
  for (const [entry, print] of options.before.untrackedFiles ?? new Map<string, UntrackedPrint>()) {
    // (also inside a path moved out above: a link or a git dir the agent put where your directory was)
    if (results.some((result) => result.path === entry)) continue;
    if (exists(entry)) {
      // an empty directory the agent left where your file was (what it put in it was moved out above) makes way
      let emptyDir: boolean;
      try {
        emptyDir = lstatSync(path.join(root, entry)).isDirectory() && readdirSync(path.join(root, entry)).length === 0;
      } catch {
        emptyDir = false;
      }
      if (!emptyDir) continue;
      try {
        rmdirSync(path.join(root, entry));
      } catch {
        continue;
      }
    }
    if (options.jail.checkWrite && (await options.jail.checkWrite(entry)).allowed) continue;
    if (print.content === undefined) {
      results.push({ path: entry, why: 'unowned-untracked', error: 'an untracked file of yours the agent deleted; too large to have been kept, so it could not be put back' });
      continue;
    }
    const result: SoloLeftover = { path: entry, why: 'unowned-untracked' };
    try {
      await writeBack(root, entry, print.content, print.mode);
      result.restored = true;
    } catch (error) {
      result.error = `deleted by the agent, and could not be put back: ${error instanceof Error ? error.message : String(error)}`;
    }
    results.push(result);
  }
  return results;
}

/**
 * The FIFOs, sockets and device nodes made since `before` (git lists none of them), moved to the quarantine — first
 * thing after the agent, before any git command reads the tree: git opens a `.gitignore` or `.gitattributes` on its
 * way without O_NONBLOCK, so a FIFO there holds every listing (X30-13).
 */
export async function quarantineNewSpecials(options: { root: string; before: SoloLeftoverBaseline; agentId: string; now?: Date }): Promise<SoloLeftover[]> {
  if (!options.before.specials) return [];
  const now = new Set<string>();
  implicitGitDirs(options.root, options.before.pruned, now);
  const stamp = (options.now ?? new Date()).toISOString().replace(/[:.]/g, '-');
  const target = path.join(options.root, '.git', 'polywave', 'quarantine', `${options.agentId.replace(/[^A-Za-z0-9_-]/g, '_')}-${stamp}-specials`);
  const results: SoloLeftover[] = [];
  for (const entry of [...now].filter((special) => !options.before.specials!.has(special)).sort()) {
    try {
      results.push({ path: entry, why: 'special', movedTo: await moveToQuarantine(path.join(options.root, entry), path.join(target, entry)) });
    } catch (error) {
      results.push({ path: entry, why: 'special', error: error instanceof Error ? error.message : String(error) });
    }
  }
  return results;
}

/** The reason line of a leftover for the agent's denials and log. */
export function leftoverReason(entry: SoloLeftover): string {
  const what =
    entry.why === 'git-dir'
      ? `"${entry.path}" makes a directory git takes for a repository (HEAD, objects/, refs/: the user's git there would run what its config names)`
      : entry.why === 'link'
        ? `"${entry.path}" is a link into .git or out of the checkout (an editor saving it writes there)`
        : entry.why === 'special'
          ? `"${entry.path}" is a FIFO, socket or device node (git lists none; a tool that reads it hangs)`
          : entry.why === 'mode'
            ? `"${entry.path}" was made writable to group or others, setuid/setgid or sticky (git keeps no such bit)`
            : entry.why === 'empty-dir'
              ? `"${entry.path}" is an empty directory made while the agent ran (git lists none)`
        : entry.why === 'unowned-tracked'
          ? `"${entry.path}" is a tracked file the agent does not own (I1), changed while it ran`
          : entry.why === 'unowned-untracked'
            ? `"${entry.path}" is an untracked file of yours the agent does not own (I1), changed while it ran`
            : `"${entry.path}" is an untracked path the agent does not own (I1)`;
  const restoredHow = entry.why === 'unowned-tracked' || entry.why === 'unowned-untracked' ? ' (put back as it was before the agent)' : ' (the committed file written back)';
  if (entry.why === 'empty-dir') return `${what}, left in the main checkout by the agent: ${entry.restored ? 'removed' : `not undone: ${entry.error ?? 'unknown error'}`} (${soloLeftoverCode})`;
  if (entry.why === 'mode') return `${what}, left in the main checkout by the agent: ${entry.restored ? 'those bits were taken back off' : `not undone: ${entry.error ?? 'unknown error'}`} (${soloLeftoverCode})`;
  const outcome = entry.movedTo
    ? `moved to ${entry.movedTo}${entry.restored ? restoredHow : ''}`
    : entry.restored
      ? 'put back as it was before the agent'
      : `could not be moved out: ${entry.error ?? 'unknown error'}`;
  return `${what}, left in the main checkout by the agent: ${outcome} (${soloLeftoverCode})`;
}

/** `jail` whose audit also refuses each leftover moved out (the stop stays refused though the checkout is clean now). */
export function withLeftovers<J extends AuditedJail>(jail: J, leftovers: readonly SoloLeftover[]): J {
  if (leftovers.length === 0) return jail;
  return Object.freeze<J>({
    ...jail,
    async audit(auditOptions?: { baseCommit?: string }) {
      const audit = await jail.audit(auditOptions);
      const known = new Set(audit.violations.map((violation) => violation.path));
      const violations = [
        ...audit.violations,
        ...leftovers.filter((entry) => !known.has(entry.path)).map((entry) => ({ code: entry.why === 'unowned' || entry.why === 'unowned-tracked' || entry.why === 'unowned-untracked' || entry.why === 'special' || entry.why === 'mode' || entry.why === 'empty-dir' ? 'JAIL_UNOWNED_CHANGE' : 'JAIL_GIT_INTERNALS', path: entry.path, reason: leftoverReason(entry) })),
      ];
      return { ...audit, ok: false, violations };
    },
  });
}
