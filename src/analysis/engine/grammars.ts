/**
 * Loads web-tree-sitter and the prebuilt grammar WASM shipped by `@vscode/tree-sitter-wasm`, the
 * same way src/agents/jail/bash-parser.ts loads tree-sitter-bash: lazily, once per process and
 * language, a failed load retried by the next call.
 */
import { createRequire } from 'node:module';
import type { Language, Parser } from 'web-tree-sitter';
import type { Lang } from './types.js';

const grammarFile: Record<Lang, string> = {
  typescript: 'tree-sitter-typescript.wasm',
  tsx: 'tree-sitter-tsx.wasm',
  javascript: 'tree-sitter-javascript.wasm',
  go: 'tree-sitter-go.wasm',
  python: 'tree-sitter-python.wasm',
  rust: 'tree-sitter-rust.wasm',
};

let runtime: Promise<typeof import('web-tree-sitter')> | undefined;
const languages = new Map<Lang, Promise<Language>>();

function loadRuntime(): Promise<typeof import('web-tree-sitter')> {
  runtime ??= (async () => {
    const module = await import('web-tree-sitter');
    await module.Parser.init();
    return module;
  })().catch((error: unknown) => {
    runtime = undefined;
    throw error;
  });
  return runtime;
}

/** The tree-sitter Language for `lang` (loaded once per process). */
export function loadLanguage(lang: Lang): Promise<Language> {
  let loading = languages.get(lang);
  if (!loading) {
    loading = loadRuntime()
      .then((module) => module.Language.load(createRequire(import.meta.url).resolve(`@vscode/tree-sitter-wasm/wasm/${grammarFile[lang]}`)))
      .catch((error: unknown) => {
        languages.delete(lang);
        throw error;
      });
    languages.set(lang, loading);
  }
  return loading;
}

/** A parser set to `lang`; the caller reuses it for many files. */
export async function createParser(lang: Lang): Promise<Parser> {
  const module = await loadRuntime();
  const parser = new module.Parser();
  parser.setLanguage(await loadLanguage(lang));
  return parser;
}

/** The runtime's Query class (for compiling .scm query strings). */
export async function queryClass(): Promise<typeof import('web-tree-sitter').Query> {
  return (await loadRuntime()).Query;
}

const extensions: Array<[string, Lang]> = [
  ['.ts', 'typescript'],
  ['.mts', 'typescript'],
  ['.cts', 'typescript'],
  ['.tsx', 'tsx'],
  ['.js', 'javascript'],
  ['.mjs', 'javascript'],
  ['.cjs', 'javascript'],
  ['.jsx', 'javascript'],
  ['.go', 'go'],
  ['.py', 'python'],
  ['.rs', 'rust'],
];

/** The language of a path by its extension (`.d.ts` is TypeScript), or undefined. */
export function languageOf(file: string): Lang | undefined {
  for (const [extension, lang] of extensions) if (file.endsWith(extension)) return lang;
  return undefined;
}
