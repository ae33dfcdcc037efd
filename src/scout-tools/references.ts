import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { findReferences as engineFindReferences } from '../analysis/engine/index.js';
import { rustTestItems, type RustTestItems } from '../analysis/engine/extract.js';
import { cargoTargetRoot, rustModuleCandidates } from '../analysis/engine/resolve.js';
import { qualifiedUse } from '../analysis/qualified-uses.js';
import type { Reference, ReferenceKind } from '../analysis/engine/types.js';
import { codeFamilyOf, isBinaryText, lexSource, lineAt, lineTextOf } from '../analysis/source-lexer.js';
import { createGit } from '../git/git-cli.js';

/** Options of {@link ReferenceFinder.findReferences} (the engine's FindReferencesOptions). */
export interface FindOptions {
  /** Only references that can reach a definition in this file (same Go/Python/Rust package directory, or an import naming it). */
  definedIn?: string;
  /** Only look in these repo-relative files. */
  files?: readonly string[];
  /** Only member uses (`x.Name`): the symbol is a method or field (`Type.Method` in a task). */
  memberOnly?: boolean;
  /**
   * With memberOnly, the type the member belongs to (`Item` of `Item.new()`): the engine finder then keeps what
   * `check-callers Item.new` keeps — method calls, fields, `x.new` and `Item::new()` (Rust), uses inside macros —
   * instead of method calls only.
   */
  memberOf?: string;
}

/**
 * Where a name is used in a repository: the scout tools ask this, never a text search. The
 * lexer implementation below counts identifiers in code only (comments and string contents are
 * blanked by the shared source lexer), skips definition sites, and resolves scope from the
 * import statements; the tree-sitter engine (src/analysis/engine) implements the same shape.
 */
export interface ReferenceFinder {
  findReferences(repoRoot: string, symbol: string, options?: FindOptions): Promise<Reference[]>;
}

/** Directories never searched: other agents' worktrees, dependencies, build output. */
const skippedDirectory = /(^|\/)(\.claude\/worktrees|\.polywave-state|\.git|node_modules|vendor|dist|target|__pycache__)\//;

/** Repo-relative files (tracked and untracked-not-ignored) in a supported language, sorted. */
export async function listRepoFiles(repoRoot: string): Promise<string[]> {
  const git = createGit(repoRoot);
  const { stdout } = await git.run(['ls-files', '-z', '--cached', '--others', '--exclude-standard']);
  return [...new Set(stdout.split('\0'))].filter((file) => file !== '' && !skippedDirectory.test(file) && codeFamilyOf(file) !== undefined).sort();
}

/**
 * E46 test files of the four families: Go `_test.go`; TS/JS `*.test.*`/`*.spec.*`, `__tests__/`;
 * Python `test_*.py`/`*_test.py`/`conftest.py`, `tests/`; Rust integration tests under `tests/`.
 * A Rust source file with a `#[cfg(test)]` module is a test caller too: see {@link hasInlineTests}.
 */
export function isTestPath(file: string): boolean {
  const normalized = file.replace(/\\/g, '/');
  const base = normalized.slice(normalized.lastIndexOf('/') + 1);
  if (/_test\.go$/.test(base)) return true;
  if (/\.(test|spec|cy|e2e-spec)\.[cm]?[jt]sx?$/i.test(base) || /(^|\/)__tests__\//.test(normalized)) return true;
  if (/\.pyi?$/.test(base) && (/^test_/.test(base) || /_test\.pyi?$/.test(base) || base === 'conftest.py' || /^tests(_.*)?\.py$/.test(base) || /(^|\/)tests?\//.test(normalized))) return true;
  if (/\.rs$/.test(base) && /(^|\/)tests\//.test(normalized)) return true;
  return /\.[cm]?[jt]sx?$/.test(base) && /(^|\/)(test|tests)\//.test(normalized);
}

/**
 * A Rust file that may hold test-only items — a `cfg` attribute and the word `test` in its text, or a `#[test]`-style
 * attribute: a cheap look before {@link rustTestCode} asks the syntax tree (`#[cfg(test)]`, `#[cfg(all(test, feature =
 * "x"))]`, `#![cfg(test)]`, `#[test]`).
 */
export function hasInlineTests(file: string, text: string): boolean {
  // (or a `#[test]`/`#[bench]`/`#[tokio::test]` fn outside any `cfg(test)`: test code too — X65-10)
  return file.endsWith('.rs') && ((/#!?\s*\[\s*cfg(?:_attr)?\s*\(/.test(text) && /\btest\b/.test(text)) || /#\s*\[\s*(?:(?:r#)?[A-Za-z_][A-Za-z0-9_]*\s*::\s*)*(?:test|bench)\s*[\](]/.test(text));
}

/** Rust test code of one source file: its test-only lines, and the module files that are test code in full. */
export interface RustTestCode {
  /** The lines (first, last) of the test-only items, merged (nested items are not counted twice: X63-10). */
  ranges: Array<[number, number]>;
  /** The files of the file's test-only `mod x;` declarations (`#[cfg(test)] mod tests;` → `src/util/tests.rs`: X63-07). */
  moduleFiles: string[];
  /** The files of its other `mod x;` declarations: in the non-test build too, whatever another declaration says (X65-20). */
  buildFiles?: string[];
}

/**
 * Whether `file` is a crate root of its package (the nearest Cargo.toml above it) by Cargo's target auto-discovery
 * (tests/it.rs, src/bin/tool.rs): its `mod x;` files are beside it — resolve.ts's rule.
 */
async function rustCrateRootFile(file: string, exists: (file: string) => boolean | Promise<boolean>): Promise<boolean> {
  for (let dir = path.posix.dirname(file); ; dir = path.posix.dirname(dir)) {
    const prefix = dir === '.' ? '' : `${dir}/`;
    if (await exists(`${prefix}Cargo.toml`)) return cargoTargetRoot(file.slice(prefix.length));
    if (dir === '.' || dir === '' || dir === '/') return false;
  }
}

/**
 * Rust: the test code of a source file, from its syntax tree (extract.ts's rustTestItems): each item whose `cfg` can
 * only hold under `cfg(test)` — `#[cfg(test)]`, `#[cfg(all(test, …))]`, `#[cfg( test )]` (X63-06; `any(test, …)` is
 * library code behind a feature too, not test code) — from its attribute through the item's end (X63-05: a `;` in the
 * signature does not end it), merged; an inner `#![cfg(test)]` at the top of the file: every line. The files of its
 * test-only `mod x;` declarations (every one when `allTest`: the file is itself a test module) are test code in full
 * (X63-07). `exists` says whether a repo-relative file is there; `known`, the file's test items when the caller has
 * them from the facts cache (rule E46 reads them there: one parse per file content, not per call).
 */
export async function rustTestCode(file: string, text: string, exists: (file: string) => boolean | Promise<boolean>, allTest = false, known?: RustTestItems): Promise<RustTestCode> {
  // (`known`: the file's test items from the cached facts — engine rustTestFacts —, else parsed here)
  const items = known ?? (await rustTestItems(text));
  const inRange = (line: number) => allTest || items.ranges.some(([first, last]) => first <= line && line <= last);
  const moduleFiles: string[] = [];
  const buildFiles: string[] = [];
  // (where a `mod x;`'s file is: the resolver's rule — resolve.ts rustModuleCandidates)
  let crateRoot: boolean | undefined;
  const candidates = async (decl: RustTestItems['modDecls'][number], attributePath: string | undefined) => rustModuleCandidates(file, decl.name, decl.modulePath, attributePath, (crateRoot ??= await rustCrateRootFile(file, exists)));
  for (const decl of items.modDecls) {
    // (the file a `#[cfg_attr(test, path = "…")]` names is the module under test only: test code — X64-10)
    if (decl.testPath !== undefined) {
      const [candidate] = await candidates(decl, decl.testPath);
      if (candidate !== undefined && !candidate.startsWith('../') && (await exists(candidate))) moduleFiles.push(candidate);
    }
    const test = inRange(decl.line) || decl.testDefault === true;
    // (`#[path = "shared.rs"] pub mod shared;` beside `#[cfg(test)] #[path = "shared.rs"] mod shared_t;`: the file is
    // library code too — X65-20)
    for (const candidate of await candidates(decl, decl.path)) {
      if (candidate.startsWith('../') || !(await exists(candidate))) continue;
      (test ? moduleFiles : buildFiles).push(candidate);
      break;
    }
  }
  return { ranges: items.ranges, moduleFiles, ...(buildFiles.length > 0 ? { buildFiles } : {}) };
}

const definitionBefore = /(?:\bfunc\s+(?:\([^)]*\)\s*)?|\bfunction\s*\*?\s*|\bdef\s+|\bclass\s+|\btype\s+|\binterface\s+|\bstruct\s+|\benum\s+|\btrait\s+|\bfn\s+|\bconst\s+|\blet\s+|\bvar\s+)$/;

function withoutExtension(file: string): string {
  return file.replace(/\.(d\.ts|[cm]?[jt]sx?|pyi?|go|rs)$/, '');
}

/** True when `file` can see a definition in `definedIn`: same package directory (Go, Python, Rust crate) or an import resolving to it. */
export function inScopeOf(file: string, text: string, definedIn: string): boolean {
  const fileDir = path.posix.dirname(file);
  const definedDir = path.posix.dirname(definedIn);
  const family = codeFamilyOf(definedIn);
  if (family === 'go') {
    if (fileDir === definedDir && file.endsWith('.go')) return true;
    const suffix = definedDir === '.' ? undefined : `/${definedDir}"`;
    return suffix !== undefined && text.includes(suffix);
  }
  if (family === 'rust') {
    // Integration tests and inline test modules reach the crate's items through `crate::`/the crate name.
    return file.endsWith('.rs');
  }
  if (family === 'python') {
    if (fileDir === definedDir) return true;
    const dotted = withoutExtension(definedIn).replace(/\/__init__$/, '').split('/');
    for (let start = 0; start < dotted.length; start += 1) {
      const module = dotted.slice(start).join('.');
      if (module !== '' && new RegExp(`(?:from|import)\\s+${module.replace(/\./g, '\\.')}\\b`).test(text)) return true;
    }
    return false;
  }
  // TS/JS: a relative import (or re-export) whose target is the defining module.
  const target = withoutExtension(definedIn).replace(/\/index$/, '');
  const importPattern = /(?:from\s*|import\s*\(?\s*|require\s*\(\s*)['"](\.{1,2}\/[^'"]*)['"]/g;
  for (const match of text.matchAll(importPattern)) {
    const resolved = withoutExtension(path.posix.normalize(path.posix.join(fileDir, match[1]!))).replace(/\/index$/, '');
    if (resolved === target) return true;
  }
  return false;
}

/** The lexer-backed finder (see {@link ReferenceFinder}); file texts are read once per instance. */
export function createLexerReferenceFinder(): ReferenceFinder {
  const texts = new Map<string, Promise<string | undefined>>();
  const read = (repoRoot: string, file: string): Promise<string | undefined> => {
    const key = path.join(repoRoot, file);
    let text = texts.get(key);
    if (!text) {
      text = readFile(key, 'utf8').then(
        (value) => (isBinaryText(value) ? undefined : value),
        () => undefined,
      );
      texts.set(key, text);
    }
    return text;
  };
  return {
    async findReferences(repoRoot, symbol, options = {}) {
      const files = options.files ? [...options.files] : await listRepoFiles(repoRoot);
      const references: Reference[] = [];
      const pattern = new RegExp(`(?<![\\w$])${symbol.replace(/[$]/g, '\\$')}(?![\\w$])`, 'g');
      for (const file of files) {
        if (codeFamilyOf(file) === undefined) continue;
        const text = await read(repoRoot, file);
        if (text === undefined || !text.includes(symbol)) continue;
        if (options.definedIn !== undefined && file !== options.definedIn && !inScopeOf(file, text, options.definedIn)) continue;
        const source = lexSource(file, text);
        for (const match of source.code.matchAll(pattern)) {
          const offset = match.index;
          const before = source.code.slice(Math.max(0, offset - 80), offset);
          if (definitionBefore.test(before)) continue;
          const member = /\.\s*$/.test(before);
          if (options.memberOnly && !member) continue;
          const after = source.code.slice(offset + symbol.length, offset + symbol.length + 40);
          const call = /^\s*(?:<[^<>()]*>\s*)?(?:\[[^\]]*\]\s*)?\(/.test(after) || (file.endsWith('.rs') && /^\s*!?\s*\(/.test(after));
          const kind: ReferenceKind = call ? (member ? 'method-call' : 'call') : /^[A-Z]/.test(symbol) ? 'type' : 'other';
          const line = lineAt(source, offset);
          references.push({ file, line, column: offset - source.lineStarts[line - 1]! + 1, context: lineTextOf(text, source.lineStarts, line).trim(), kind, name: symbol });
        }
      }
      return references;
    },
  };
}

/**
 * The default finder: the tree-sitter engine (src/analysis/engine: real syntax trees, import
 * resolution, aliases, re-exports, per-blob cache). `memberOnly` keeps method calls. When the
 * engine cannot run (a grammar fails to load), the lexer finder answers instead.
 */
export function createEngineReferenceFinder(): ReferenceFinder {
  const fallback = createLexerReferenceFinder();
  return {
    async findReferences(repoRoot, symbol, options = {}) {
      let references: Reference[];
      try {
        // With definedIn, the engine is asked about the whole repository and the answer filtered
        // here: restricting its `files` also hides the re-exporting modules an import chain passes
        // through (reported to the engine).
        const restrictToFiles = options.files !== undefined && options.definedIn === undefined;
        references = await engineFindReferences(repoRoot, symbol, {
          includeUntracked: true,
          ...(options.definedIn !== undefined ? { definedIn: options.definedIn } : {}),
          ...(restrictToFiles ? { files: [...options.files!] } : {}),
        });
        if (options.files !== undefined && !restrictToFiles) {
          const wanted = new Set(options.files);
          references = references.filter((reference) => wanted.has(reference.file));
        }
      } catch {
        return fallback.findReferences(repoRoot, symbol, options);
      }
      if (options.memberOnly) {
        const memberOf = options.memberOf;
        const lines = new Map<string, string[]>();
        // (Rust, with the definition's file: the engine has checked the type a `T::build()` names — a type parameter
        // bounded by the trait, an implementing type, the trait itself — so any `X::` path is the member's: outside
        // round X58-16, where a task's `Make::build()` found no caller written `T::build()`)
        const rustChecked = options.definedIn?.endsWith('.rs') === true;
        references = references.filter((reference) => (memberOf !== undefined ? qualifiedUse(repoRoot, memberOf, reference, lines, rustChecked) : reference.kind === 'method-call'));
      }
      const definedIn = options.definedIn;
      if (definedIn === undefined || !definedIn.endsWith('.go')) return references;
      const kept: Reference[] = [];
      for (const reference of references) {
        if (!reference.file.endsWith('.go')) {
          kept.push(reference);
          continue;
        }
        // (E46, a package-level name: the engine keeps only uses that can name it — unqualified in its package or through a dot
        // import, `q.Name` with q an import of the package — outside attack X49-11: a second filter here knew neither
        // external test packages nor dot imports, and named an import by its directory instead of its package clause)
        if (!options.memberOnly) {
          kept.push(reference);
          continue;
        }
        // Methods resolve by name in the engine: keep calls in the defining package or in files importing it.
        const text = await readFile(path.join(repoRoot, reference.file), 'utf8').catch(() => '');
        if (inScopeOf(reference.file, text, definedIn)) kept.push(reference);
      }
      return kept;
    },
  };
}
