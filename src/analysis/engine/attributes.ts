/**
 * The git attributes files that can apply to a repository's paths, read as text without a git
 * process where that is certain: a `.gitattributes` in a listed directory (the working tree's, tracked
 * or not; a tracked one missing from the disk is read by git from the index), `$GIT_COMMON_DIR/info/
 * attributes`, the per-user file (XDG), the system file (`/etc/gitattributes` for a git built with
 * `sysconfdir=/etc`, as Debian's), and `core.attributesFile`. Paths are git's: HOME is the one polywave
 * gives git (the host user's, harden.ts), relative ones are taken from the top level (git's cwd).
 * Where none of them names an attribute the engine cares about, no git process is asked; otherwise
 * `git check-attr` tells, on each call ({@link fileAttributes}; its answer depends on more than these texts):
 * - which files git grep -I could call binary otherwise than their bytes say (a `diff` attribute, the
 *   `binary` macro): then the word index does not stand in for git grep;
 * - which files' working-tree bytes can differ from their index blob while git calls them unmodified
 *   (a `filter` (clean/smudge, LFS), `ident` or `working-tree-encoding`): the listing reads those from disk.
 * Where a file cannot be read as a small regular file (a FIFO, a device, past 1 MiB, a tracked
 * `.gitattributes` missing or not a regular file on disk), git is asked.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { hostGitEnvironment } from '../../git/harden.js';
import type { RepoContext } from './repo-files.js';
import { currentScope } from './scope.js';

/** Where git builds commonly read their system attributes file (`$(sysconfdir)/gitattributes`). */
const systemAttributeFiles = ['/etc/gitattributes', '/usr/local/etc/gitattributes', '/opt/homebrew/etc/gitattributes'];

/** Attributes and configuration files larger than this are left to git (they are a few lines in practice). */
const maxTextBytes = 1024 * 1024;

/**
 * The text of a small regular file (symbolic links followed unless `noFollow`), without ever blocking on a
 * FIFO or reading a device: undefined when there is nothing there, 'unknown' when something is there that is
 * not such a file.
 */
function readSmallFile(file: string, noFollow = false): string | 'unknown' | undefined {
  // Most directories have none: asked without an exception (a thrown ENOENT per directory cost 13 µs: X44-02).
  if (!lstatSync(file, { throwIfNoEntry: false })) return undefined;
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | (noFollow ? constants.O_NOFOLLOW : 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    // ELOOP: a symbolic link where none is followed (git ignores an in-tree .gitattributes link)
    if (code === 'ELOOP' && noFollow) return undefined;
    return 'unknown';
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile() || stats.size > maxTextBytes) return 'unknown';
    return readFileSync(fd, 'utf8');
  } catch {
    return 'unknown';
  } finally {
    closeSync(fd);
  }
}

/** git's boolean reading of an environment variable (unset or empty: false). */
function gitBoolean(value: string | undefined): boolean {
  if (value === undefined || value === '') return false;
  const lower = value.trim().toLowerCase();
  if (lower === 'false' || lower === 'no' || lower === 'off') return false;
  if (/^-?\d+$/.test(lower)) return Number(lower) !== 0;
  return true;
}

/**
 * The attributes files git could apply to paths in `dirs` (repo-relative directories, '' for the top level), each as
 * `<path>\n<text>` — where the text sits matters as much as what it says (X45-01: the same `*.ts -diff` moved to
 * another directory) — and whether one of them could not be read here as a small regular file (`unknown`: git must
 * be asked; its entry is then `<path>\n\0<lstat identity>`, so a change to it still changes the texts).
 * `cacheable` is false with GIT_ATTR_SOURCE (attributes from a tree, whose content is not looked at here): git is asked.
 * `tracked`: the `.gitattributes` paths the index holds. `core.attributesFile` is asked of git only where
 * configuration names it, includes another file or comes from the environment, or the checkout is a linked worktree
 * (its own config.worktree). Read once per analysis call.
 */
export function attributeTexts(context: RepoContext, dirs: Iterable<string>, tracked: ReadonlySet<string> = new Set()): Promise<AttributeTexts> {
  // Asked twice per call (the listing, the word index) with the same directories: once per analysis call (keyed by the
  // directories themselves: two listings of as many directories are not one, X46-08).
  const list = [...dirs];
  const key = createHash('sha1').update(`${context.root}\0${list.join('\0')}\0\0${[...tracked].join('\0')}`).digest('hex');
  const scope = currentScope();
  let known = perCall.get(scope);
  if (!known) {
    known = new Map();
    perCall.set(scope, known);
  }
  let texts = known.get(key);
  if (!texts) {
    texts = readAttributeTexts(context, list, tracked);
    known.set(key, texts);
  }
  return texts;
}

export interface AttributeTexts {
  texts: string[];
  unknown: boolean;
  cacheable: boolean;
}

/** {@link attributeTexts} of the running analysis call (a scope outside any call is new each time: nothing kept). */
const perCall = new WeakMap<object, Map<string, Promise<AttributeTexts>>>();

/** What identifies a file that is there but could not be read here (a change to it changes this). */
function identity(file: string): string {
  const stats = lstatSync(file, { bigint: true, throwIfNoEntry: false });
  return stats ? `${stats.mode}:${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeNs}:${stats.ctimeNs}` : 'none';
}

async function readAttributeTexts(context: RepoContext, dirs: readonly string[], tracked: ReadonlySet<string>): Promise<AttributeTexts> {
  const env = hostGitEnvironment(process.env);
  const fromTop = (file: string) => path.resolve(context.root, file);
  const texts: string[] = [];
  let unknown = env.GIT_ATTR_SOURCE !== undefined;
  const add = (file: string, noFollow = false) => {
    const text = readSmallFile(file, noFollow);
    if (text === 'unknown') {
      unknown = true;
      texts.push(`${file}\n\0${identity(file)}`);
    } else if (text !== undefined) texts.push(`${file}\n${text}`);
  };
  for (const dir of dirs) {
    const relative = dir === '' ? '.gitattributes' : `${dir}/.gitattributes`;
    const file = path.join(context.root, relative);
    // git reads an in-tree .gitattributes only as a regular file, and a tracked one it cannot read there from the index
    if (tracked.has(relative) && !lstatSync(file, { throwIfNoEntry: false })?.isFile()) {
      unknown = true;
      texts.push(`${file}\n\0${identity(file)}`);
      continue;
    }
    add(file, true);
  }
  add(path.join(context.commonDir, 'info', 'attributes'));
  const home = env.HOME ? fromTop(env.HOME) : undefined;
  const xdg = env.XDG_CONFIG_HOME ? path.join(fromTop(env.XDG_CONFIG_HOME), 'git', 'attributes') : home ? path.join(home, '.config', 'git', 'attributes') : undefined;
  if (xdg !== undefined) add(xdg);
  if (!gitBoolean(env.GIT_ATTR_NOSYSTEM)) for (const file of systemAttributeFiles) add(file);
  // core.attributesFile: the config files that can set it are read as text (no git process); where one
  // names it or includes another file, configuration comes from the environment, or this is a linked
  // worktree (its config.worktree lives in its own git dir), git is asked.
  let ask = Object.keys(env).some((name) => name === 'GIT_CONFIG_PARAMETERS' || name === 'GIT_CONFIG_COUNT' || name === 'GIT_CONFIG') || !lstatSync(path.join(context.root, '.git'), { throwIfNoEntry: false })?.isDirectory();
  const globals = env.GIT_CONFIG_GLOBAL !== undefined ? [fromTop(env.GIT_CONFIG_GLOBAL)] : [env.XDG_CONFIG_HOME ? path.join(fromTop(env.XDG_CONFIG_HOME), 'git', 'config') : home ? path.join(home, '.config', 'git', 'config') : '', home ? path.join(home, '.gitconfig') : ''];
  const configs = [env.GIT_CONFIG_SYSTEM !== undefined ? fromTop(env.GIT_CONFIG_SYSTEM) : '/etc/gitconfig', ...globals, path.join(context.commonDir, 'config'), path.join(context.commonDir, 'config.worktree')];
  for (const file of ask ? [] : configs) {
    if (file === '') continue;
    const text = readSmallFile(file);
    if (text === undefined) continue;
    if (text === 'unknown' || /attributesfile|include/i.test(text)) ask = true;
  }
  if (ask) {
    const configured = (await context.git.run(['config', '--path', '--get', 'core.attributesFile'], { allowExitCodes: [1] })).stdout.trim();
    if (configured !== '') add(fromTop(configured));
  }
  return { texts, unknown, cacheable: env.GIT_ATTR_SOURCE === undefined };
}

/** What the attributes say about a listing's files ({@link fileAttributes}). */
export interface FileAttributes {
  /** Files a `filter`, `ident` or `working-tree-encoding` applies to: their disk bytes can differ from the index blob. */
  converted: ReadonlySet<string>;
  /** Some file has a `diff` attribute (set, unset — the `binary` macro — or a driver): git grep -I may pass it over. */
  grepAttributed: boolean;
  /** Changes when the answer does ('' or 'plain' where no git process was asked: nothing applies). */
  key: string;
}

/**
 * The attributes of `files` (repo-relative, a listing's analysable ones) that the engine must know: from `git check-attr`
 * only where an attributes file that can apply names `filter`, `ident`, `working-tree-encoding`, `diff` or `binary`
 * (any mention: a quoted pattern, a macro, a path containing the word — a false alarm costs one git process), or where
 * one cannot be read here.
 */
export async function fileAttributes(context: RepoContext, dirs: Iterable<string>, tracked: ReadonlySet<string>, files: readonly string[]): Promise<FileAttributes> {
  const { texts, unknown, cacheable } = await attributeTexts(context, dirs, tracked);
  // (the text after each file's path line: a path naming a word counts too — a false alarm costs one git process)
  if (!unknown && cacheable && !texts.some((text) => /filter|ident|working-tree-encoding|diff|binary/.test(text))) return { converted: new Set(), grepAttributed: false, key: texts.length === 0 ? '' : 'plain' };
  // Asked of git on every call where it can matter: its answer depends on more than the texts read here (a tracked
  // .gitattributes' index copy, core.ignorecase, configuration from the caller's environment, a file changed in place:
  // outside round X46 made a remembered answer stale five ways). One process over the listing's files (~20 ms on 5,000).
  const converted = new Set<string>();
  let grepAttributed = false;
  if (files.length > 0) {
    const answer = await context.git.run(['check-attr', '-z', '--stdin', 'filter', 'ident', 'working-tree-encoding', 'diff'], { input: files.join('\0') + '\0' });
    const fields = answer.stdout.split('\0');
    for (let at = 0; at + 2 < fields.length; at += 3) {
      const value = fields[at + 2]!;
      if (value === 'unspecified') continue;
      if (fields[at + 1] === 'diff') grepAttributed = true;
      else if (value !== 'unset') converted.add(fields[at]!);
    }
  }
  // The key is the answer itself: the same answer keeps the listing (repo-files.ts knownListings), another one makes it anew.
  const key = createHash('sha1').update(`${grepAttributed}\0${[...converted].sort().join('\0')}`).digest('hex');
  return { converted, grepAttributed, key };
}
