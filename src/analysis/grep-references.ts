import type { Git } from '../git/git-port.js';
import { blobSpec, readBlobs } from './read-blobs.js';
import { defaultReferenceExtensions, indexable } from './reference-index.js';
import { identifierPattern, isBinaryText, lexSource } from './source-lexer.js';

/** Above this many names one grep is no cheaper than the full index. */
export const maxGrepNames = 400;

/**
 * Where each of `names` occurs as an identifier in code: ONE `git grep -l -w -F` over `refs` (C
 * speed, no index of the whole repository) plus the given `files`, then only the matching files
 * are read (one `cat-file --batch`) and lexed, so a name in a comment or a string does not count.
 * Paths are repository-relative; `excludePaths` drops grep hits on paths whose content comes from
 * elsewhere. E25 uses it for a wave's merged result: the target tree, minus the paths the agents
 * changed or deleted, plus each agent's changed files at its tip (I1: no two agents change one file).
 */
export async function grepReferences(
  git: Git,
  options: {
    refs: readonly string[];
    names: readonly string[];
    excludePaths?: ReadonlySet<string>;
    /** Files read and lexed directly instead of grepped (`spec` for cat-file, repository-relative `path`). */
    files?: ReadonlyArray<{ spec: string; path: string }>;
    extensions?: readonly string[];
  },
): Promise<Map<string, Set<string>>> {
  const found = new Map<string, Set<string>>(options.names.map((name) => [name, new Set<string>()]));
  const names = [...new Set(options.names)].filter((name) => /^[A-Za-z_$][\w$]*$/.test(name));
  if (names.length === 0 || (options.refs.length === 0 && (options.files ?? []).length === 0)) return found;
  const extensions = (options.extensions ?? defaultReferenceExtensions).map((extension) => (extension.startsWith('.') ? extension : `.${extension}`).toLowerCase());
  const hits: Array<{ spec: string; path: string }> = (options.files ?? []).filter((file) => indexable(file.path, extensions));
  const result =
    options.refs.length === 0
      ? { exitCode: 1, stdout: '' }
      : await git.run(['grep', '-l', '-z', '-w', '-F', '-I', ...names.flatMap((name) => ['-e', name]), ...options.refs, '--', ...extensions.map((extension) => `*${extension}`)], { allowExitCodes: [1] });
  for (const record of result.exitCode === 1 ? [] : result.stdout.split('\0')) {
    if (record === '') continue;
    const colon = record.indexOf(':');
    if (colon <= 0) continue;
    const ref = record.slice(0, colon);
    const filePath = record.slice(colon + 1);
    if (!indexable(filePath, extensions) || options.excludePaths?.has(filePath)) continue;
    hits.push({ spec: blobSpec(ref, filePath), path: filePath });
  }
  const texts = await readBlobs(git, hits.map((hit) => hit.spec));
  const wanted = new Set(names);
  for (const hit of hits) {
    const text = texts.get(hit.spec);
    if (text === undefined || isBinaryText(text)) continue;
    for (const match of lexSource(hit.path, text).code.matchAll(identifierPattern)) {
      if (wanted.has(match[0])) found.get(match[0])!.add(hit.path);
    }
  }
  return found;
}
