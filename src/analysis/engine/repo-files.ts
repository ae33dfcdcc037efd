/**
 * Which files the engine reads, and their content ids. Files come from git, never from a directory
 * walk: `git ls-files -s` (tracked files with their index blob ids) plus `git diff-files` for the
 * ones whose working-tree content differs from the index — those are read from disk and hashed the
 * way git hashes a blob, so the cache key is always the id of the content actually analysed.
 * Untracked files (optional) are hashed the same way.
 *
 * Never analysed: anything under `.claude/worktrees/` (other agents' checkouts), `.polywave-state/`,
 * and any `node_modules` or `vendor` directory, Cargo's output under `target/`. Other worktrees of the repository are
 * separate checkouts git does not list here.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readFileSync, readSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { fileAttributes } from './attributes.js';
import { languageOf } from './grammars.js';
import { currentScope } from './scope.js';
import type { Lang } from './types.js';

export interface RepoFile {
  /** Repo-relative, `/`-separated. */
  file: string;
  lang: Lang;
  /** Git blob id of the content analysed. */
  blob: string;
  /** Content differs from the index (or untracked): read from the working tree. */
  fromWorktree: boolean;
  /** Not a regular file (a symbolic link in the index or the working tree): git grep skips it. */
  symlink?: true;
}

/**
 * Dependencies and build output: `node_modules/` and `vendor/` anywhere; `target/` where it is Cargo's output
 * (`target/debug/`, `target/release/`, a target triple such as `target/x86_64-unknown-linux-gnu/`, `target/doc/`…) —
 * a directory of a project's own code named `target` is analysed (outside attack X47).
 */
const excludedDirectory = /(?:^|\/)(?:node_modules|vendor|target\/(?:debug|release|doc|package|tmp|build|deps|incremental|criterion|nextest|llvm-cov-target|rust-analyzer|flycheck\d*|[^/]+-[^/]+-[^/]+))\//;

/** Whether the engine may read `file` (repo-relative). */
export function isAnalysable(file: string): boolean {
  if (file.startsWith('.claude/worktrees/') || file === '.claude/worktrees' || file.startsWith('.polywave-state/')) return false;
  // A directory segment (never the file name) named node_modules or vendor, or Cargo's output under target/.
  if (excludedDirectory.test(file)) return false;
  return languageOf(file) !== undefined;
}

/** The git blob id of `content` (`git hash-object`). */
export function blobId(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

/**
 * The bytes of a regular file (a symbolic link is followed unless `noFollow`), or undefined when there is none:
 * opened without blocking and checked on the open file, so a FIFO or a device put where a source file was
 * (or between a check and the read) is never waited on or read without end (outside attack X43-12).
 */
export function readRegularFile(file: string, noFollow?: boolean): Buffer | undefined;
export function readRegularFile(file: string, noFollow: boolean, maxBytes: number): Buffer | 'too large' | undefined;
export function readRegularFile(file: string, noFollow = false, maxBytes?: number): Buffer | 'too large' | undefined {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | (noFollow ? constants.O_NOFOLLOW : 0));
  } catch {
    return undefined;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) return undefined;
    if (maxBytes !== undefined && stats.size > maxBytes) return 'too large';
    // Read into a buffer of the size fstat gave (readFileSync(fd) would ask fstat again: ~8 µs a file, 1,000 files on a
    // cold call): the file as it was then (one edited meanwhile hashes to another id and is cached under none).
    const bytes = Buffer.allocUnsafe(stats.size);
    let length = 0;
    while (length < bytes.length) {
      const got = readSync(fd, bytes, length, bytes.length - length, null);
      if (got === 0) break;
      length += got;
    }
    return length === bytes.length ? bytes : bytes.subarray(0, length);
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Whether a directory on the way from `root` to `file` (repo-relative) is a symbolic link: git does not look beyond one. */
function beyondLink(root: string, file: string): boolean {
  for (let slash = file.indexOf('/'); slash > 0; slash = file.indexOf('/', slash + 1)) {
    if (lstatSync(path.join(root, file.slice(0, slash)), { throwIfNoEntry: false })?.isSymbolicLink()) return true;
  }
  return false;
}

/** Which files module resolution reads the content of (go.mod, Cargo.toml): their working-tree edits count. */
const resolutionFile = /(?:^|\/)(?:go\.mod|Cargo\.toml)$/;

export interface RepoContext {
  /** Absolute top level of the working tree. */
  root: string;
  git: Git;
  /** `git rev-parse --git-common-dir`, absolute. */
  commonDir: string;
}

/**
 * The repository containing `repoRoot` (top level and common git dir), shared by the engine calls
 * of the current analysis call ({@link analysisCall}). Between calls, a process using the engine's
 * memory (the resident server) keeps the answer of `git rev-parse` for a directory together with
 * what it depended on, and uses it again only when all of that is unchanged ({@link contextSignature});
 * otherwise git is asked again — so a moved or re-created repository, a new `.git` between the
 * directory and the top level, or a changed environment is never answered from memory.
 */
export function repoContext(repoRoot: string): Promise<RepoContext> {
  const key = path.resolve(repoRoot);
  const scope = currentScope();
  const contexts = scope.contexts;
  let context = contexts.get(key);
  if (!context) {
    context = (async () => {
      const known = scope.memory ? knownContexts.get(key) : undefined;
      if (known !== undefined && known.signature === contextSignature(key, known.root)) {
        return { root: known.root, git: createGit(known.root), commonDir: known.commonDir };
      }
      let root: string;
      let commonDir: string;
      const plain = plainRepositoryAt(key);
      if (plain) ({ root, commonDir } = plain);
      else {
        const git = createGit(key);
        const out = await git.run(['rev-parse', '--show-toplevel', '--git-common-dir']);
        const [top, common] = out.stdout.split('\n');
        root = path.resolve(top!.trim());
        commonDir = path.resolve(key, common!.trim());
      }
      if (scope.memory) {
        // Taken after git answered: anything changed since makes the next signature differ.
        const signature = commonDir === path.join(root, '.git') ? contextSignature(key, root) : undefined;
        if (signature === undefined) knownContexts.delete(key);
        else {
          knownContexts.set(key, { root, commonDir, signature });
          while (knownContexts.size > 64) knownContexts.delete(knownContexts.keys().next().value!);
        }
      }
      return { root, git: createGit(root), commonDir };
    })();
    context.catch(() => contexts.delete(key));
    contexts.set(key, context);
  }
  return context;
}

/**
 * Git variables that change nothing about which repository a directory belongs to (identity, prompts, tracing,
 * where the user's and the system's configuration are read: discovery reads `core.worktree`/`core.bare` from the
 * repository's own config only).
 */
const discoveryNeutral = /^GIT_(?:AUTHOR_(?:NAME|EMAIL|DATE)|COMMITTER_(?:NAME|EMAIL|DATE)|TERMINAL_PROMPT|EDITOR|SEQUENCE_EDITOR|PAGER|SSH|SSH_COMMAND|SSH_VARIANT|ASKPASS|CONFIG_NOSYSTEM|CONFIG_GLOBAL|CONFIG_SYSTEM|TRACE\w*|FLUSH|PROTOCOL\w*|HTTP_\w+|SSL_\w+|CURL_\w+|PROXY_\w+|REDACT_COOKIES|OPTIONAL_LOCKS|ADVICE|EXEC_PATH|MERGE_AUTOEDIT|NO_REPLACE_OBJECTS|LFS_\w+)$/;

/**
 * The answer `git rev-parse --show-toplevel --git-common-dir` gives in `key` when it is certain without asking git
 * (a spawn is ~7–15 ms of a long-lived process's main thread: fork copies its page tables): `key` is a real path
 * (no symbolic link in it: git prints the resolved one), owned by this user (git's safe.directory check), holding
 * a `.git` directory of this user that git accepts as a repository (a valid `HEAD`, `objects/` and `refs/`, no
 * `commondir`) whose config names no work tree, no bare repository and no include (those change the answer or can),
 * and no variable of git's that moves the repository (`GIT_DIR`, `GIT_WORK_TREE`, `GIT_CEILING_DIRECTORIES`,
 * `GIT_CONFIG_COUNT`…) is set. Anything else (a subdirectory, a linked worktree, a `.git` file) asks git.
 */
export function plainRepositoryAt(key: string): { root: string; commonDir: string } | undefined {
  if (Object.keys(process.env).some((name) => name.startsWith('GIT_') && !discoveryNeutral.test(name))) return undefined;
  const uid = process.getuid?.();
  if (uid === undefined) return undefined;
  try {
    if (realpathSync.native(key) !== key) return undefined;
    const gitDir = path.join(key, '.git');
    const top = lstatSync(key, { throwIfNoEntry: false });
    const dir = lstatSync(gitDir, { throwIfNoEntry: false });
    if (!top?.isDirectory() || top.uid !== uid || !dir?.isDirectory() || dir.uid !== uid) return undefined;
    if (!lstatSync(path.join(gitDir, 'objects'), { throwIfNoEntry: false })?.isDirectory() || !lstatSync(path.join(gitDir, 'refs'), { throwIfNoEntry: false })?.isDirectory()) return undefined;
    if (lstatSync(path.join(gitDir, 'commondir'), { throwIfNoEntry: false })) return undefined;
    const head = lstatSync(path.join(gitDir, 'HEAD'), { throwIfNoEntry: false });
    if (!head?.isFile() || head.size > 4096) return undefined;
    if (!/^(?:ref: refs\/[^\s]+|[0-9a-f]{40}(?:[0-9a-f]{24})?)\n?$/.test(readFileSync(path.join(gitDir, 'HEAD'), 'utf8'))) return undefined;
    const config = lstatSync(path.join(gitDir, 'config'), { throwIfNoEntry: false });
    if (config) {
      if (!config.isFile() || config.size > 1024 * 1024) return undefined;
      // (git refuses a repository whose format version or extensions it does not know: its error, not ours — X55-01;
      // a key may follow its section header on one line: `[core] bare = true`)
      for (const line of readFileSync(path.join(gitDir, 'config'), 'utf8').split(/\r?\n/)) {
        if (/worktree|include|extensions/i.test(line)) return undefined;
        if (/bare/i.test(line) && !/^\s*bare\s*=\s*(?:false|no|off|0)\s*$/i.test(line)) return undefined;
        const version = /repositoryformatversion\s*=\s*(\S*)/i.exec(line);
        if (version && !/^[01]$/.test(version[1]!) ) return undefined;
        if (/^\s*\[[^\]]*\]\s*\S/.test(line)) return undefined;
      }
    }
    return { root: key, commonDir: gitDir };
  } catch {
    return undefined;
  }
}

/** Directories whose repository this process found before (memory scope only), with what that answer depended on. */
const knownContexts = new Map<string, { root: string; commonDir: string; signature: string }>();

/** Git's own variables and where its configuration and binary are found: a change asks git again. */
function environmentKey(): string {
  const env = process.env;
  const names = Object.keys(env).filter((name) => name.startsWith('GIT_') || name === 'HOME' || name === 'XDG_CONFIG_HOME' || name === 'PATH').sort();
  return names.map((name) => `${name}=${env[name]}`).join('\0');
}

function statKey(file: string): string | undefined {
  const stats = lstatSync(file, { bigint: true, throwIfNoEntry: false });
  return stats && `${stats.mode}:${stats.dev}:${stats.ino}:${stats.uid}`;
}

/**
 * What git's answer for `key` (top level `root`, common dir `root/.git`) depends on, or undefined
 * where it is not remembered. Git finds the repository by walking up from the directory to the
 * first one holding `.git` (or being a git directory itself, which needs a HEAD): every directory
 * from `key` up to `root` is the same one (device, inode — a moved or re-created directory is
 * another), none below `root` holds `.git` or `HEAD`, and `root/.git` is the same directory with
 * the same config file (core.worktree, core.bare), a HEAD, and no `commondir` (not a linked
 * worktree). Only for directories the process's user owns (git's safe.directory check) and plain
 * paths below the top level (no symbolic link between them, not inside `.git`).
 */
function contextSignature(key: string, root: string): string | undefined {
  const relative = path.relative(root, key);
  if (relative.startsWith('..') || path.isAbsolute(relative) || relative === '.git' || relative.startsWith(`.git${path.sep}`)) return undefined;
  const uid = process.getuid?.();
  const parts = [environmentKey()];
  for (let dir = key; ; dir = path.dirname(dir)) {
    const stats = lstatSync(dir, { bigint: true, throwIfNoEntry: false });
    if (!stats?.isDirectory() || Number(stats.uid) !== uid) return undefined;
    parts.push(`${dir}:${stats.dev}:${stats.ino}`);
    if (dir === root) break;
    if (lstatSync(path.join(dir, '.git'), { throwIfNoEntry: false }) || lstatSync(path.join(dir, 'HEAD'), { throwIfNoEntry: false })) return undefined;
    if (path.dirname(dir) === dir) return undefined;
  }
  const gitDir = path.join(root, '.git');
  const gitStats = lstatSync(gitDir, { bigint: true, throwIfNoEntry: false });
  if (!gitStats?.isDirectory() || Number(gitStats.uid) !== uid) return undefined;
  const config = lstatSync(path.join(gitDir, 'config'), { bigint: true, throwIfNoEntry: false });
  if (!statKey(path.join(gitDir, 'HEAD')) || statKey(path.join(gitDir, 'commondir'))) return undefined;
  parts.push(`${gitStats.dev}:${gitStats.ino}`, config ? `${config.ino}:${config.size}:${config.mtimeNs}:${config.ctimeNs}` : '-');
  return parts.join('\n');
}

function splitZ(text: string): string[] {
  return text.split('\0').filter((entry) => entry.length > 0);
}

/** One `git ls-files -s -v -z` entry: `<tag> <mode> <blob> <stage>\t<path>`. */
function parseStaged(entry: string): { tag: string; mode: string; blob: string; file: string } {
  const tab = entry.indexOf('\t');
  const [tag, mode, blob] = entry.slice(0, tab).split(' ');
  return { tag: tag!, mode: mode!, blob: blob!, file: entry.slice(tab + 1) };
}

/** Every directory holding one of `paths` ('' excluded). */
export function directoriesOf(paths: readonly string[]): Set<string> {
  const dirs = new Set<string>();
  for (const file of paths) {
    for (let slash = file.lastIndexOf('/'); slash > 0; slash = file.lastIndexOf('/', slash - 1)) {
      const dir = file.slice(0, slash);
      if (dirs.has(dir)) break;
      dirs.add(dir);
    }
  }
  return dirs;
}

/**
 * Every analysable file (or the `only` subset), sorted by path. Deleted-but-tracked files are
 * skipped. Modified and untracked files are hashed from the working tree.
 */
export async function listRepoFiles(context: RepoContext, options: { only?: readonly string[]; includeUntracked?: boolean } = {}): Promise<RepoFile[]> {
  return (await listRepo(context, options)).files;
}

export interface RepoListing {
  /** Analysable files, sorted. */
  files: RepoFile[];
  /** Every listed path, analysable or not (go.mod, Cargo.toml, __init__.py …): what module resolution needs. */
  allPaths: string[];
  /** Changes whenever any listed path or content changes (index entries + hashes of working-tree files). */
  fingerprint: string;
  /**
   * Some index entry is assume-unchanged or skip-worktree (git grep searches those otherwise than their working-tree
   * bytes: the index blob, or not at all), or an attribute (`diff`, the `binary` macro) can make git grep -I pass a
   * listed file over: only git grep answers which files hold a word.
   */
  grepOnly?: true;
}

/**
 * The last listing of each repository (memory scope only, whole repository, no untracked files):
 * `git ls-files -s` is asked again only when the index file changed (git replaces it on every
 * write: another inode, size or time), and the listing object is reused when `git diff-files` and
 * the hashes of the modified files are what they were — the same inputs give the same listing.
 */
const knownListings = new Map<string, { indexKey: string; staged: string; changed?: string; diskKey?: string; listing?: RepoListing }>();

/** The identity of `<root>/.git/index` (a main worktree's own index only), or undefined. */
function indexKey(context: RepoContext): string | undefined {
  if (context.commonDir !== path.join(context.root, '.git')) return undefined;
  const gitDir = lstatSync(context.commonDir, { throwIfNoEntry: false });
  const index = gitDir?.isDirectory() ? lstatSync(path.join(context.commonDir, 'index'), { bigint: true, throwIfNoEntry: false }) : undefined;
  return index?.isFile() ? `${index.dev}:${index.ino}:${index.size}:${index.mtimeNs}:${index.ctimeNs}` : undefined;
}

/** A pathspec git matches literally: a clean repo-relative path (the file itself or a directory above files). */
const plainPath = /^(?!\/)(?!.*(?:^|\/)\.{1,2}(?:\/|$))(?!.*\/\/)[^*?[\\:]+(?<!\/)$/;

/** {@link listRepoFiles} plus every listed path. */
export async function listRepo(context: RepoContext, options: { only?: readonly string[]; includeUntracked?: boolean } = {}): Promise<RepoListing> {
  const scope = currentScope();
  if (!scope.memory || options.includeUntracked) return listRepoNow(context, options);
  // One listing of the whole repository per call; a list of plain paths is taken from it.
  if (options.only && !options.only.every((file) => plainPath.test(file))) return listRepoNow(context, options);
  let whole = scope.listings.get(context.root);
  if (!whole) {
    whole = listRepoNow(context, {});
    whole.catch(() => scope.listings.delete(context.root));
    scope.listings.set(context.root, whole);
  }
  const listing = await whole;
  const grepOnly = listing.grepOnly ? { grepOnly: true as const } : {};
  if (!options.only) return { files: [...listing.files], allPaths: [...listing.allPaths], fingerprint: listing.fingerprint, ...grepOnly };
  const wanted = new Set(options.only);
  const matches = (file: string) => {
    if (wanted.has(file)) return true;
    for (let slash = file.lastIndexOf('/'); slash > 0; slash = file.lastIndexOf('/', slash - 1)) if (wanted.has(file.slice(0, slash))) return true;
    return false;
  };
  const fingerprint = createHash('sha1').update(listing.fingerprint).update(`\0only\0${[...wanted].sort().join('\0')}`).digest('hex');
  return { files: listing.files.filter((entry) => matches(entry.file)), allPaths: listing.allPaths.filter(matches), fingerprint, ...grepOnly };
}

async function listRepoNow(context: RepoContext, options: { only?: readonly string[]; includeUntracked?: boolean }): Promise<RepoListing> {
  const { git, root } = context;
  const pathspec = options.only ? ['--', ...options.only] : [];
  const remember = currentScope().memory && !options.only && !options.includeUntracked;
  // Taken before git reads the index: a change after this makes the next call's key differ.
  const currentIndex = remember ? indexKey(context) : undefined;
  const known = currentIndex === undefined ? undefined : knownListings.get(root);
  const sameIndex = known !== undefined && known.indexKey === currentIndex;
  const [staged, changed, untracked] = await Promise.all([
    // -v: a lower-case tag marks an assume-unchanged entry, S a skip-worktree one.
    sameIndex ? { stdout: known.staged } : git.run(['ls-files', '-s', '-v', '-z', ...pathspec]),
    git.run(['diff-files', '--name-only', '-z', ...pathspec]),
    options.includeUntracked ? git.run(['ls-files', '-o', '--exclude-standard', '-z', ...pathspec]) : Promise.resolve({ stdout: '' }),
  ]);
  const modified = new Set(splitZ(changed.stdout));
  const stagedEntries = splitZ(staged.stdout).map(parseStaged);
  // Files git calls unmodified whose working-tree bytes may still differ from the index blob: assume-unchanged
  // and skip-worktree entries (git does not look at the disk), a name git wrote in bytes that are not UTF-8 (the
  // decoded name is not the file's), and files a filter, `ident` or `working-tree-encoding` converts. They are
  // read from disk like modified files, so their facts, lines and blob ids all come from the bytes analysed.
  let grepOnly = false;
  const unlike = new Set<string>();
  for (const entry of stagedEntries) {
    if (entry.mode === '160000' || !isAnalysable(entry.file) || modified.has(entry.file)) continue;
    const flagged = entry.tag !== 'H' && entry.tag !== 'M';
    if (flagged) grepOnly = true;
    if (flagged || entry.file.includes('\uFFFD')) unlike.add(entry.file);
  }
  const trackedAttributes = new Set(stagedEntries.flatMap((entry) => (entry.file === '.gitattributes' || entry.file.endsWith('/.gitattributes') ? [entry.file] : [])));
  // Which files an attribute converts (read from disk) or marks for git grep -I (the word index then stays out): asked of
  // git only where an attributes file that can apply names such an attribute, and remembered for the same files and texts.
  const attributes = await fileAttributes(context, ['', ...directoriesOf(stagedEntries.map((entry) => entry.file))], trackedAttributes, stagedEntries.flatMap((entry) => (entry.mode !== '160000' && isAnalysable(entry.file) ? [entry.file] : [])));
  for (const file of attributes.converted) if (!modified.has(file)) unlike.add(file);
  if (attributes.grepAttributed) grepOnly = true;
  // Working-tree state that the listing depends on: content of every modified file (hashed), link or not.
  const fromDisk = new Map<string, { blob: string; symlink: boolean } | null>();
  const otherModified = new Map<string, string>();
  for (const file of [...modified, ...unlike].filter(isAnalysable)) fromDisk.set(file, diskState(root, file));
  // go.mod / Cargo.toml edits change resolution: their working-tree state counts too.
  for (const file of modified) if (resolutionFile.test(file)) otherModified.set(file, readRegularFile(path.join(root, file))?.toString('utf8') ?? '');
  const diskKey = currentIndex === undefined ? undefined : JSON.stringify([[...fromDisk].sort(), [...otherModified].sort(), [...unlike].sort(), attributes.key, grepOnly]);
  if (sameIndex && known.listing && known.changed === changed.stdout && known.diskKey === diskKey) return known.listing;
  const files = new Map<string, RepoFile>();
  const allPaths: string[] = [];
  const listedModified: string[] = [];
  // A symbolic link in the index is one for git grep whatever the disk holds (and a link on disk is one whatever the index says).
  const indexLinks = new Set<string>();
  for (const { file, mode, blob } of stagedEntries) {
    allPaths.push(file);
    if (mode === '160000' || !isAnalysable(file)) continue;
    if (mode === '120000') indexLinks.add(file);
    if (modified.has(file) || unlike.has(file)) listedModified.push(file);
    else files.set(file, { file, lang: languageOf(file)!, blob, fromWorktree: false, ...(mode === '120000' ? { symlink: true as const } : {}) });
  }
  const untrackedFiles: string[] = [];
  for (const file of splitZ(untracked.stdout)) {
    allPaths.push(file);
    if (isAnalysable(file) && !files.has(file)) untrackedFiles.push(file);
  }
  for (const file of untrackedFiles) if (!fromDisk.has(file)) fromDisk.set(file, diskState(root, file));
  for (const file of [...listedModified, ...untrackedFiles]) {
    const state = fromDisk.get(file);
    if (state) files.set(file, { file, lang: languageOf(file)!, blob: state.blob, fromWorktree: true, ...(state.symlink || indexLinks.has(file) ? { symlink: true as const } : {}) });
  }
  const sorted = [...files.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const fingerprint = createHash('sha1').update(staged.stdout).update('\0').update(changed.stdout).update('\0').update(untracked.stdout);
  for (const entry of sorted) if (entry.fromWorktree) fingerprint.update(`${entry.file}\0${entry.blob}\n`);
  for (const [file, text] of otherModified) fingerprint.update(`${file}\0${text}\n`);
  for (const file of [...unlike].sort()) fingerprint.update(`unlike\0${file}\n`);
  fingerprint.update(`attributes\0${attributes.key}\0${grepOnly}\n`);
  const listing: RepoListing = { files: sorted, allPaths, fingerprint: fingerprint.digest('hex'), ...(grepOnly ? { grepOnly: true as const } : {}) };
  if (currentIndex !== undefined) {
    knownListings.delete(root);
    knownListings.set(root, { indexKey: currentIndex, staged: staged.stdout, changed: changed.stdout, diskKey, listing });
    while (knownListings.size > 16) knownListings.delete(knownListings.keys().next().value!);
  }
  return listing;
}

/**
 * A working-tree file's blob id (of the bytes a link leads to, for a link) and whether it is a link; null when
 * git would call it deleted: gone, not a file (a FIFO, a device), or beyond a linked directory.
 */
function diskState(root: string, file: string): { blob: string; symlink: boolean } | null {
  if (beyondLink(root, file)) return null;
  const full = path.join(root, file);
  const link = lstatSync(full, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;
  const content = readRegularFile(full);
  return content === undefined ? null : { blob: blobId(content), symlink: link };
}

/** The texts of `files`: working-tree files from disk, the rest from git's object store in one batch. */
export function readTexts(context: RepoContext, files: readonly RepoFile[], exact?: Set<string>): Map<string, string> {
  // Files git reports unmodified hold the index content on disk (git's own stat check), and
  // modified ones were hashed from disk: reading the working tree is always the analysed content.
  // Synchronous: many small reads are faster without the thread pool round trips.
  // `exact` collects the files whose bytes still have the listed blob id (not edited since listed):
  // only what is derived from those may be stored under that id.
  const texts = new Map<string, string>();
  for (const entry of files) {
    const bytes = readRegularFile(path.join(context.root, entry.file));
    if (bytes === undefined) continue; // deleted (or no longer a file) since listed
    try {
      texts.set(entry.file, bytes.toString('utf8'));
      if (exact && blobId(bytes) === entry.blob) exact.add(entry.file);
    } catch {
      // past V8's longest string: passed over
    }
  }
  return texts;
}
