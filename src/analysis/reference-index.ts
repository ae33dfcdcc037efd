import type { Git } from '../git/git-port.js';
import { readBlobs } from './read-blobs.js';
import { identifierPattern, isBinaryText, isTestFile, lexSource } from './source-lexer.js';

/**
 * An identifier index of a repository snapshot, built ONCE per run (engine-cli.md §10.3: the Go
 * E25 scan walks the whole repository once per export). Every source file at `ref` is listed with
 * one `git ls-tree`, read with one `git cat-file --batch` per 2 000 files, lexed (comments and
 * string contents do not count as references) and tokenized; the index maps each identifier to
 * the files where it occurs in code.
 */
export interface ReferenceIndex {
  /** The ref the index was built from, as given. */
  readonly ref: string;
  /** The commit it resolved to. */
  readonly commit: string;
  /** Indexed paths, sorted. */
  readonly files: readonly string[];
  /** Files (sorted) where `name` occurs as an identifier in code. */
  filesReferencing(name: string, options?: FilesReferencingOptions): string[];
  /** True when the file was indexed. */
  hasFile(filePath: string): boolean;
  /** True when `name` occurs as an identifier in the code of an indexed file. */
  fileMentions(filePath: string, name: string): boolean;
  readonly stats: ReferenceIndexStats;
}

export interface FilesReferencingOptions {
  /** Leave this file out (the defining file). */
  excludeFile?: string;
  /** Leave test files out (see `isTestFile`). Default false. */
  excludeTests?: boolean;
}

export interface ReferenceIndexStats {
  files: number;
  identifiers: number;
  /** Characters of source read. */
  characters: number;
  /** Files skipped: too large, binary, or unreadable. */
  skipped: number;
}

export interface BuildReferenceIndexOptions {
  git: Git;
  /** Branch, tag or commit to index (the merge result or an agent branch). */
  ref: string;
  /** File extensions (with or without the dot) to index; default the TS/JS, Go, Python and Rust ones. */
  extensions?: readonly string[];
  /** Larger files are skipped (generated code, bundles); default 2 MiB. */
  maxFileBytes?: number;
}

/** Extensions indexed by default: the four code families, and single-file components that import them. */
export const defaultReferenceExtensions: readonly string[] = ['.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs', '.go', '.py', '.pyi', '.rs', '.vue', '.svelte', '.astro'];

/** Directories never indexed (besides every dot-directory). */
export const skippedIndexDirectories: ReadonlySet<string> = new Set(['vendor', 'node_modules', 'dist']);

interface TreeEntry {
  blob: string;
  size: number;
  path: string;
}

/** Builds the index of the repository at `ref`; see {@link ReferenceIndex}. */
export async function buildReferenceIndex(options: BuildReferenceIndexOptions): Promise<ReferenceIndex> {
  const { git, ref } = options;
  const maxFileBytes = options.maxFileBytes ?? 2 * 1024 * 1024;
  const extensions = (options.extensions ?? defaultReferenceExtensions).map((extension) => (extension.startsWith('.') ? extension : `.${extension}`).toLowerCase());
  const commit = await git.revParse(`${ref}^{commit}`);

  const { stdout } = await git.run(['ls-tree', '-r', '-l', '-z', '--full-tree', commit]);
  const entries: TreeEntry[] = [];
  let skipped = 0;
  for (const record of stdout.split('\0')) {
    if (record === '') continue;
    const tab = record.indexOf('\t');
    const [mode = '', type = '', blob = '', size = ''] = record.slice(0, tab).split(/\s+/);
    const filePath = record.slice(tab + 1);
    if (type !== 'blob' || mode === '120000') continue;
    if (!indexable(filePath, extensions)) continue;
    const bytes = Number.parseInt(size, 10);
    if (!(bytes <= maxFileBytes)) {
      skipped += 1;
      continue;
    }
    entries.push({ blob, size: bytes, path: filePath });
  }
  entries.sort((left, right) => (left.path < right.path ? -1 : left.path > right.path ? 1 : 0));

  const files: string[] = [];
  const postings = new Map<string, number[]>();
  let characters = 0;
  // Read and tokenize in groups (≤ 2 000 files, ≤ 64 MiB): memory stays bounded by one group.
  for (const group of groupEntries(entries)) {
    const texts = await readBlobs(git, group.map((entry) => entry.blob));
    for (const entry of group) {
      const text = texts.get(entry.blob);
      if (text === undefined || isBinaryText(text)) {
        skipped += 1;
        continue;
      }
      const fileIndex = files.length;
      files.push(entry.path);
      characters += text.length;
      const code = lexSource(entry.path, text).code;
      const seen = new Set<string>();
      for (const match of code.matchAll(identifierPattern)) {
        const token = match[0];
        if (seen.has(token)) continue;
        seen.add(token);
        const list = postings.get(token);
        if (list) list.push(fileIndex);
        else postings.set(token, [fileIndex]);
      }
    }
  }

  const fileIndexes = new Map(files.map((filePath, index) => [filePath, index]));
  const testFiles = files.map((filePath) => isTestFile(filePath));
  return {
    ref,
    commit,
    files,
    stats: { files: files.length, identifiers: postings.size, characters, skipped },
    filesReferencing(name, referencingOptions = {}) {
      const list = postings.get(name) ?? [];
      const excluded = referencingOptions.excludeFile === undefined ? -1 : (fileIndexes.get(referencingOptions.excludeFile) ?? -1);
      const result: string[] = [];
      for (const index of list) {
        if (index === excluded) continue;
        if (referencingOptions.excludeTests && testFiles[index]) continue;
        result.push(files[index]!);
      }
      return result;
    },
    hasFile(filePath) {
      return fileIndexes.has(filePath);
    },
    fileMentions(filePath, name) {
      const index = fileIndexes.get(filePath);
      const list = postings.get(name);
      if (index === undefined || list === undefined) return false;
      // Postings are in ascending file order.
      let low = 0;
      let high = list.length - 1;
      while (low <= high) {
        const middle = (low + high) >> 1;
        const value = list[middle]!;
        if (value === index) return true;
        if (value < index) low = middle + 1;
        else high = middle - 1;
      }
      return false;
    },
  };
}

const groupFiles = 2000;
const groupBytes = 64 * 1024 * 1024;

function groupEntries(entries: readonly TreeEntry[]): TreeEntry[][] {
  const groups: TreeEntry[][] = [];
  let current: TreeEntry[] = [];
  let bytes = 0;
  for (const entry of entries) {
    if (current.length > 0 && (current.length >= groupFiles || bytes + entry.size > groupBytes)) {
      groups.push(current);
      current = [];
      bytes = 0;
    }
    current.push(entry);
    bytes += entry.size;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** True when the path is a source file the index (and the grep lookup) considers: code extension, no dot/vendor/node_modules/dist directory. */
export function indexable(filePath: string, extensions: readonly string[]): boolean {
  const segments = filePath.split('/');
  for (let index = 0; index < segments.length - 1; index += 1) {
    const segment = segments[index]!;
    if (segment.startsWith('.') || skippedIndexDirectories.has(segment)) return false;
  }
  const lower = filePath.toLowerCase();
  return extensions.some((extension) => lower.endsWith(extension));
}
