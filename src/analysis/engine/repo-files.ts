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
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { createGit } from '../../git/git-cli.js';
import type { Git } from '../../git/git-port.js';
import { languageOf } from './grammars.js';
import type { Lang } from './types.js';

export interface RepoFile {
  /** Repo-relative, `/`-separated. */
  file: string;
  lang: Lang;
  /** Git blob id of the content analysed. */
  blob: string;
  /** Content differs from the index (or untracked): read from the working tree. */
  fromWorktree: boolean;
}

const excludedSegments = new Set(['node_modules', 'vendor', 'target']);

/** Whether the engine may read `file` (repo-relative). */
export function isAnalysable(file: string): boolean {
  if (file.startsWith('.claude/worktrees/') || file === '.claude/worktrees' || file.startsWith('.polywave-state/')) return false;
  const segments = file.split('/');
  for (let index = 0; index < segments.length - 1; index += 1) if (excludedSegments.has(segments[index]!)) return false;
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

const contexts = new Map<string, Promise<RepoContext>>();

/** The repository containing `repoRoot` (top level and common git dir), cached per process. */
export function repoContext(repoRoot: string): Promise<RepoContext> {
  const key = path.resolve(repoRoot);
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
  for (const entry of splitZ(staged.stdout)) {
    const tab = entry.indexOf('\t');
    const file = entry.slice(tab + 1);
    const [mode, blob] = entry.slice(0, tab).split(' ');
    if (mode === '160000' || !isAnalysable(file)) continue;
    if (modified.has(file)) fromDisk.push(file);
    else files.set(file, { file, lang: languageOf(file)!, blob: blob!, fromWorktree: false });
  }
  for (const file of splitZ(untracked.stdout)) if (isAnalysable(file) && !files.has(file)) fromDisk.push(file);
  await Promise.all(
    fromDisk.map(async (file) => {
      const content = await readFile(path.join(root, file)).catch(() => undefined);
      if (content === undefined) return; // deleted in the working tree
      files.set(file, { file, lang: languageOf(file)!, blob: blobId(content), fromWorktree: true });
    }),
  );
  return [...files.values()].sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
}

/** The texts of `files`: working-tree files from disk, the rest from git's object store in one batch. */
export async function readTexts(context: RepoContext, files: readonly RepoFile[]): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  // Unmodified tracked files have the index content on disk too: reading the file is much cheaper
  // than a cat-file round trip. Verify the hash only when the size differs from expectations is not
  // possible cheaply, so the working tree is trusted for files git reports unmodified.
  await Promise.all(
    files.map(async (entry) => {
      const text = await readFile(path.join(context.root, entry.file), 'utf8').catch(() => undefined);
      if (text !== undefined) texts.set(entry.file, text);
    }),
  );
  return texts;
}
