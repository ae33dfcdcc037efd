/**
 * Which files the engine reads, and their content ids. Files come from git, never from a directory
 * walk: `git ls-files -s` (tracked files with their index blob ids) plus `git diff-files` for the
 * ones whose working-tree content differs from the index — those are read from disk and hashed the
 * way git hashes a blob, so the cache key is always the id of the content actually analysed.
 * Untracked files (optional) are hashed the same way.
 *
 * Never analysed: anything under `.claude/worktrees/` (other agents' checkouts), `.polywave-state/`,
 * and any `node_modules`, `vendor` or `target` directory. Other worktrees of the repository are
 * separate checkouts git does not list here.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { lstat, readFile } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
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

const excludedDirectory = /(?:^|\/)(?:node_modules|vendor|target)\//;

/** Whether the engine may read `file` (repo-relative). */
export function isAnalysable(file: string): boolean {
  if (file.startsWith('.claude/worktrees/') || file === '.claude/worktrees' || file.startsWith('.polywave-state/')) return false;
  // A directory segment (never the file name) named node_modules, vendor or target.
  if (excludedDirectory.test(file)) return false;
  return languageOf(file) !== undefined;
}

/** The git blob id of `content` (`git hash-object`). */
export function blobId(content: Buffer): string {
  return createHash('sha1').update(`blob ${content.length}\0`).update(content).digest('hex');
}

export interface RepoContext {
  /** Absolute top level of the working tree. */
  root: string;
  git: Git;
  /** `git rev-parse --git-common-dir`, absolute. */
  commonDir: string;
}

/**
 * The repository containing `repoRoot` (top level and common git dir), remembered for the current
 * analysis call only ({@link analysisCall}): a later call asks git again, so a moved or re-created
 * repository, a new `.git` above the directory or another GIT_DIR is never answered from memory.
 */
export function repoContext(repoRoot: string): Promise<RepoContext> {
  const key = path.resolve(repoRoot);
  const contexts = currentScope().contexts;
  let context = contexts.get(key);
  if (!context) {
    context = (async () => {
      const git = createGit(key);
      const out = await git.run(['rev-parse', '--show-toplevel', '--git-common-dir']);
      const [top, common] = out.stdout.split('\n');
      const root = path.resolve(top!.trim());
      return { root, git: createGit(root), commonDir: path.resolve(key, common!.trim()) };
    })();
    context.catch(() => contexts.delete(key));
    contexts.set(key, context);
  }
  return context;
}

function splitZ(text: string): string[] {
  return text.split('\0').filter((entry) => entry.length > 0);
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
}

/** {@link listRepoFiles} plus every listed path. */
export async function listRepo(context: RepoContext, options: { only?: readonly string[]; includeUntracked?: boolean } = {}): Promise<RepoListing> {
  const { git, root } = context;
  const pathspec = options.only ? ['--', ...options.only] : [];
  const [staged, changed, untracked] = await Promise.all([
    git.run(['ls-files', '-s', '-z', ...pathspec]),
    git.run(['diff-files', '--name-only', '-z', ...pathspec]),
    options.includeUntracked ? git.run(['ls-files', '-o', '--exclude-standard', '-z', ...pathspec]) : Promise.resolve({ stdout: '' }),
  ]);
  const modified = new Set(splitZ(changed.stdout));
  const files = new Map<string, RepoFile>();
  const fromDisk: string[] = [];
  const allPaths: string[] = [];
  for (const entry of splitZ(staged.stdout)) {
    const tab = entry.indexOf('\t');
    const file = entry.slice(tab + 1);
    allPaths.push(file);
    const [mode, blob] = entry.slice(0, tab).split(' ');
    if (mode === '160000' || !isAnalysable(file)) continue;
    if (modified.has(file)) fromDisk.push(file);
    else files.set(file, { file, lang: languageOf(file)!, blob: blob!, fromWorktree: false, ...(mode === '120000' ? { symlink: true as const } : {}) });
  }
  for (const file of splitZ(untracked.stdout)) {
    allPaths.push(file);
    if (isAnalysable(file) && !files.has(file)) fromDisk.push(file);
  }
  await Promise.all(
    fromDisk.map(async (file) => {
      const content = await readFile(path.join(root, file)).catch(() => undefined);
      if (content === undefined) return; // deleted in the working tree
      const regular = await lstat(path.join(root, file)).then((stats) => stats.isFile(), () => false);
      files.set(file, { file, lang: languageOf(file)!, blob: blobId(content), fromWorktree: true, ...(regular ? {} : { symlink: true as const }) });
    }),
  );
  const sorted = [...files.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
  const fingerprint = createHash('sha1').update(staged.stdout).update('\0').update(changed.stdout).update('\0').update(untracked.stdout);
  for (const entry of sorted) if (entry.fromWorktree) fingerprint.update(`${entry.file}\0${entry.blob}\n`);
  // go.mod / Cargo.toml edits change resolution: their working-tree state counts too.
  for (const file of modified) if (!isAnalysable(file)) fingerprint.update(`${file}\0${await readFile(path.join(root, file), 'utf8').catch(() => '')}\n`);
  return { files: sorted, allPaths, fingerprint: fingerprint.digest('hex') };
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
    try {
      const bytes = readFileSync(path.join(context.root, entry.file));
      texts.set(entry.file, bytes.toString('utf8'));
      if (exact && blobId(bytes) === entry.blob) exact.add(entry.file);
    } catch {
      // deleted since listed
    }
  }
  return texts;
}
