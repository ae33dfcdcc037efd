/**
 * The code-analysis engine: symbols, imports, references and file dependencies for TypeScript,
 * TSX, JavaScript, Go, Python and Rust from tree-sitter syntax trees (docs/analysis.md).
 *
 * Stable API (other modules code against it; keep it backward compatible):
 * - {@link analyzeRepo} — per-file facts for the repository (or a subset);
 * - {@link findReferences} — real references to a name (aliases, re-exports, method calls);
 * - {@link listSymbols} — definitions;
 * - {@link dependencyGraph} — resolved file dependencies.
 */
import { lstatSync, statSync } from 'node:fs';
import path from 'node:path';
import { cacheDir, cacheHoldsFacts, cacheReader, type CacheReader, flushPendingCache, readGraphPack, readTreePack, scheduleCacheFlush, treePackKey, writeCached, writeGraphPack, writeTreePack, type GraphPack, type HeadEntry } from './cache.js';
import { decodeRefs, extractFactsNow, goAssumedName, loadLanguageTools, rustModDeclsNow, rustTestItems, type ExtractPart, type FileFacts, type ImportSpan, type RawRef, type RefFlag, type RustLocal, type RustTestItems } from './extract.js';
import { languageOf } from './grammars.js';
import { extractMany, poolSize } from './parse-pool.js';
import { onlyInLiterals } from './lexical.js';
import { fixtureUsesIn } from '../pytest-fixtures.js';
import { ModuleTargets } from '../ts-module-targets.js';
import { blobId, directoriesOf, isAnalysable as analysable, listRepo, readRegularFile, listRepoFiles, readTexts, repoContext, type RepoContext, type RepoFile, type RepoListing } from './repo-files.js';
import { cargoCrateName, cargoDependencies, goModulePath, ModuleResolver } from './resolve.js';
import { afterCallHooks, beforeCallHooks, currentIdleRunner, currentScope, factsCost, fixedProbes, insideCall, type IdleRunner, memory, memoryKey } from './scope.js';
import type {
  AnalysisStats,
  AnalyzeOptions,
  DependencyGraph,
  FileAnalysis,
  FileSymbol,
  FindReferencesOptions,
  ImportRef,
  Lang,
  Reference,
  RepoAnalysis,
} from './types.js';

export type * from './types.js';
export { languageOf } from './grammars.js';
export { isAnalysable } from './repo-files.js';

let workerCount = poolSize();

// Parsed facts are written after the call that parsed them has answered (cache.ts).
afterCallHooks.add(scheduleCacheFlush);
beforeCallHooks.add(flushPendingCache);

/**
 * Worker threads for parsing a cold cache (default: one per core, at most 4). The CLI sets it from
 * POLYWAVE_ANALYSIS_WORKERS (0 or 1 = parse in process).
 */
export function setAnalysisWorkers(count: number): void {
  workerCount = Math.max(0, Math.floor(count));
}

/** Files larger than this (characters) are not parsed; {@link findReferences} scans their text instead. */
const maxSourceChars = 2_000_000;

/** Files parsed / served from cache since the process started (POLYWAVE_ANALYSIS_STATS=1 prints the current call's: {@link currentScope}). */
export const engineCounters: AnalysisStats = { parsed: 0, cached: 0 };

function count(parsed: number, cached: number): void {
  const counters = currentScope().counters;
  counters.parsed += parsed;
  counters.cached += cached;
  engineCounters.parsed += parsed;
  engineCounters.cached += cached;
}

/** Tree and graph packs of this process (content-addressed: keyed by the listing's hash), the newest few. */
const packMemory = new Map<string, unknown>();
function rememberPack(key: string, value: unknown): void {
  packMemory.delete(key);
  packMemory.set(key, value);
  while (packMemory.size > 8) packMemory.delete(packMemory.keys().next().value!);
}

/** One pack reader per cache dir and analysis call (packs are listed and read once per call, on its first miss). */
const callReaders = new WeakMap<object, Map<string, CacheReader>>();
function readerOf(dir: string): CacheReader {
  const scope = currentScope();
  let readers = callReaders.get(scope);
  if (!readers) {
    readers = new Map();
    callReaders.set(scope, readers);
  }
  let reader = readers.get(dir);
  if (!reader) {
    reader = cacheReader(dir);
    readers.set(dir, reader);
  }
  return reader;
}

interface Loaded {
  entry: RepoFile;
  facts: FileFacts;
}

/** Blobs (with the names looked for) known to name them only in comments and strings: `<blob>.<lang>\0<names>` (memory scope). */
const literalOnly = new Map<string, true>();

/**
 * The cache's name for a part of a blob's facts (extract.ts {@link ExtractPart}): its language with
 * the part appended, so a part is stored and found apart from the full facts (which answer for any part).
 */
function partLang(lang: string, part: ExtractPart): Lang {
  return `${lang}~${'imports' in part ? 'imports' : `refs:${part.refsFor.join('\0')}`}` as Lang;
}

/**
 * Facts for every entry: from the cache, or parsed (and stored) on a miss. With `onlyCode`, a miss
 * that names those words only inside comments and plain strings ({@link onlyInLiterals}) is neither
 * parsed nor returned: it cannot refer to them. With `part`, a miss extracts only that part of the
 * facts (cached under its own key; full facts at hand are returned instead: they hold the part).
 */
async function loadFacts(context: RepoContext, entries: readonly RepoFile[], stats: AnalysisStats, onlyCode?: readonly string[], part?: ExtractPart, prefetched?: ReadonlyMap<string, string>): Promise<Loaded[]> {
  const dir = cacheDir(context.commonDir);
  const useMemory = currentScope().memory;
  const verdictKey = (entry: RepoFile) => `${memoryKey(entry.blob, entry.lang)}\0${onlyCode!.join('\0')}`;
  const storedAs = (entry: RepoFile): Lang => (part ? partLang(entry.lang, part) : entry.lang);
  const skipped = new Set<string>();
  const reader = readerOf(dir);
  const cached = entries.map((entry) => {
    const key = memoryKey(entry.blob, entry.lang);
    const known = useMemory ? (memory.get(key)?.facts ?? (part ? memory.get(memoryKey(entry.blob, storedAs(entry)))?.facts : undefined)) : undefined;
    if (known) return known;
    // Known to name the words only in literals (never cached on disk): no failed cache read either.
    if (onlyCode && useMemory && literalOnly.has(verdictKey(entry))) {
      skipped.add(entry.file);
      return undefined;
    }
    const full = reader.read(entry.blob, entry.lang);
    const read = full ?? (part ? reader.read(entry.blob, storedAs(entry)) : undefined);
    if (read && useMemory) memory.update(full ? key : memoryKey(entry.blob, storedAs(entry)), { facts: read }, factsCost(read));
    return read;
  });
  const misses = entries.filter((entry, index) => cached[index] === undefined && !skipped.has(entry.file));
  const parsed = new Map<string, FileFacts>();
  if (misses.length > 0) {
    const exact = new Set<string>();
    // Texts read by the caller and hashed into the entries' blob ids (findReferences' first call on a tree) are exact.
    const texts = prefetched ? new Map(misses.flatMap((entry) => (prefetched.has(entry.file) ? [[entry.file, prefetched.get(entry.file)!] as const] : []))) : readTexts(context, misses, exact);
    if (prefetched) for (const file of texts.keys()) exact.add(file);
    let present = misses.filter((entry) => texts.has(entry.file));
    if (onlyCode) {
      present = present.filter((entry) => {
        const text = texts.get(entry.file)!;
        if (text.length > maxSourceChars || !onlyInLiterals(entry.lang, text, entry.file, onlyCode)) return true;
        skipped.add(entry.file);
        if (useMemory && exact.has(entry.file)) {
          literalOnly.set(verdictKey(entry), true);
          while (literalOnly.size > 200_000) literalOnly.delete(literalOnly.keys().next().value!);
        }
        return false;
      });
    }
    // Generated or minified giants are not source anyone edits by hand: no facts (and no parse cost).
    const parseable = present.filter((entry) => texts.get(entry.file)!.length <= maxSourceChars);
    const facts = await extractMany(
      parseable.map((entry) => ({ lang: entry.lang, text: texts.get(entry.file)!, ...(part ? { part } : {}) })),
      workerCount,
    );
    const byFile = new Map(parseable.map((entry, index) => [entry.file, facts[index]!]));
    for (const entry of present) {
      const entryFacts: FileFacts = byFile.get(entry.file) ?? { symbols: [], imports: [], refs: '', tooLarge: true };
      parsed.set(entry.file, entryFacts);
      // Edited between the listing and this read: analysed as read (as any reader would), stored under no id.
      if (!exact.has(entry.file)) continue;
      writeCached(dir, entry.blob, storedAs(entry), entryFacts);
      if (useMemory) memory.update(memoryKey(entry.blob, storedAs(entry)), { facts: entryFacts }, factsCost(entryFacts));
    }
    // An API call outside an analysis call: written soon (inside one: when it ends).
    if (!insideCall()) scheduleCacheFlush();
  }
  stats.parsed += parsed.size;
  const fromCache = cached.filter((facts) => facts !== undefined).length;
  stats.cached += fromCache;
  count(parsed.size, fromCache);
  const result: Loaded[] = [];
  entries.forEach((entry, index) => {
    const facts = cached[index] ?? parsed.get(entry.file);
    if (facts) result.push({ entry, facts });
  });
  return result;
}

/**
 * One entry's facts at once, without waiting ({@link loadFacts} for a file found in the middle of a synchronous walk —
 * a Rust facade a lookup reaches): from the cache, or parsed (and stored) on a miss when its language's tools are
 * loaded; undefined otherwise (or unreadable, or too large to parse).
 */
function factsNow(context: RepoContext, entry: RepoFile, part: ExtractPart): FileFacts | undefined {
  const dir = cacheDir(context.commonDir);
  const useMemory = currentScope().memory;
  const partKey = memoryKey(entry.blob, partLang(entry.lang, part));
  const known = useMemory ? (memory.get(memoryKey(entry.blob, entry.lang))?.facts ?? memory.get(partKey)?.facts) : undefined;
  if (known) return known;
  const reader = readerOf(dir);
  const full = reader.read(entry.blob, entry.lang);
  const read = full ?? reader.read(entry.blob, partLang(entry.lang, part));
  if (read) {
    if (useMemory) memory.update(full ? memoryKey(entry.blob, entry.lang) : partKey, { facts: read }, factsCost(read));
    return read;
  }
  const exact = new Set<string>();
  const text = readTexts(context, [entry], exact).get(entry.file);
  if (text === undefined || text.length > maxSourceChars) return undefined;
  const facts = extractFactsNow(entry.lang, text, part);
  if (!facts || !exact.has(entry.file)) return facts;
  writeCached(dir, entry.blob, partLang(entry.lang, part), facts);
  if (useMemory) memory.update(partKey, { facts }, factsCost(facts));
  if (!insideCall()) scheduleCacheFlush();
  return facts;
}

/** Definitions and imports of every entry (a whole listing): one tree pack read when the tree is unchanged. */
async function loadHeads(context: RepoContext, entries: readonly RepoFile[]): Promise<HeadEntry[]> {
  const dir = cacheDir(context.commonDir);
  const key = treePackKey(entries);
  const useMemory = currentScope().memory;
  const packed = (useMemory ? (packMemory.get(`tree:${dir}:${key}`) as HeadEntry[] | undefined) : undefined) ?? readTreePack(dir, key);
  if (packed) {
    if (useMemory) rememberPack(`tree:${dir}:${key}`, packed);
    count(0, packed.length);
    return packed;
  }
  const heads = (await loadFacts(context, entries, { parsed: 0, cached: 0 })).map(({ entry, facts }) => ({
    file: entry.file,
    blob: entry.blob,
    lang: entry.lang,
    symbols: facts.symbols,
    imports: facts.imports,
  }));
  writeTreePack(dir, key, heads);
  if (useMemory) rememberPack(`tree:${dir}:${key}`, heads);
  return heads;
}

/** Every tracked path plus go.mod module paths: what module resolution needs. */
async function resolverFor(context: RepoContext, allPaths?: readonly string[]): Promise<ModuleResolver> {
  const files = new Set<string>(allPaths ?? []);
  if (!allPaths) {
    const listed = await context.git.run(['ls-files', '-z']);
    for (const file of listed.stdout.split('\0')) if (file) files.add(file);
  }
  const goModules: Array<{ dir: string; module: string }> = [];
  for (const file of files) {
    if (file !== 'go.mod' && !file.endsWith('/go.mod')) continue;
    const text = readRegularFile(path.join(context.root, file))?.toString('utf8');
    const module = text === undefined ? undefined : goModulePath(text);
    if (module) goModules.push({ dir: path.posix.dirname(file) === '.' ? '' : path.posix.dirname(file), module });
  }
  const rustCrates: Array<{ dir: string; name: string; dependencies?: Array<{ name: string; dir: string }> }> = [];
  const manifests: Array<{ dir: string; dependencies: ReturnType<typeof cargoDependencies> }> = [];
  for (const file of files) {
    if (file !== 'Cargo.toml' && !file.endsWith('/Cargo.toml')) continue;
    const text = readRegularFile(path.join(context.root, file))?.toString('utf8');
    const name = text === undefined ? undefined : cargoCrateName(text);
    const dir = path.posix.dirname(file) === '.' ? '' : path.posix.dirname(file);
    if (text !== undefined && text.includes('dependencies')) manifests.push({ dir, dependencies: cargoDependencies(text) });
    if (name) rustCrates.push({ dir, name });
  }
  // (a package's path dependencies in the repository, by the name its code gives them — a renamed one's key, else the
  // crate's own name; `a.workspace = true` through the nearest [workspace.dependencies] above it: X64-11)
  const at = (dir: string, relative: string) => path.posix.normalize(path.posix.join(dir === '' ? '.' : dir, relative)).replace(/^\.$/, '').replace(/\/$/, '');
  for (const crate of rustCrates) {
    const declared = manifests.find((manifest) => manifest.dir === crate.dir)?.dependencies ?? [];
    const dependencies: Array<{ name: string; dir: string }> = [];
    for (const dependency of declared) {
      if (dependency.workspace) continue;
      let target: string | undefined;
      let renamed = dependency.package;
      if (dependency.path !== undefined) target = at(crate.dir, dependency.path);
      else if (dependency.inherited) {
        const root = manifests
          .filter((manifest) => (manifest.dir === '' || crate.dir === manifest.dir || crate.dir.startsWith(`${manifest.dir}/`)) && manifest.dependencies.some((entry) => entry.workspace && entry.name === dependency.name && entry.path !== undefined))
          .sort((a, b) => b.dir.length - a.dir.length)[0];
        const entry = root?.dependencies.find((candidate) => candidate.workspace && candidate.name === dependency.name && candidate.path !== undefined);
        if (root && entry) {
          target = at(root.dir, entry.path!);
          renamed ??= entry.package;
        }
      }
      const crateThere = target === undefined ? undefined : rustCrates.find((candidate) => candidate.dir === target);
      if (target === undefined || !crateThere) continue;
      dependencies.push({ name: renamed !== undefined ? dependency.name.replace(/-/g, '_') : crateThere.name, dir: target });
    }
    if (dependencies.length > 0) crate.dependencies = dependencies;
  }
  // (tsconfig/jsconfig `paths` and `baseUrl`, read when a bare specifier is first resolved: X58-10)
  let targets: ModuleTargets | undefined;
  const tsPaths = (from: string, specifier: string) => (targets ??= new ModuleTargets(context.root)).resolve(from, specifier);
  const readText = (file: string) => (file.endsWith('.rs') && files.has(file) ? readRegularFile(path.join(context.root, file))?.toString('utf8') : undefined);
  // (Rust: a file's `mod x;` declarations from its syntax tree — a `#[path]` inside an inline module: c01)
  const rustModDecls = (file: string) => {
    const text = readText(file);
    return text === undefined ? undefined : rustModDeclsNow(text);
  };
  return new ModuleResolver({ files, goModules, rustCrates, tsPaths, readText, rustModDecls, root: context.root.split(path.sep).join('/') });
}

/** The text of a reference's line before it (a byte order mark on line 1 is not counted: columns never count it). */
function textBefore(lines: string[] | undefined, reference: Reference): string {
  const text = lines?.[reference.line - 1] ?? '';
  // (the last 512 characters: a qualifier or path is short, and the patterns run on this text took seconds per reference
  // on a 200 KB line — outside round X55-03's case through --defined-in)
  const start = Math.max(0, reference.column - 1 - 512);
  const before = (reference.line === 1 && start === 0 ? text.replace(/^\uFEFF/, '') : text).slice(start, reference.column - 1);
  if (before.trim() !== '' || reference.line === 1) return before;
  // A selector or path continued from the line before (`sa.\n\tDo()`, `crate::defs::\n make()`): that line's end.
  for (let line = reference.line - 2; line >= 0 && line >= reference.line - 4; line -= 1) {
    const previous = (lines?.[line] ?? '').replace(/\/\/.*$/, '').trimEnd();
    if (previous === '') continue;
    return previous.endsWith('.') || previous.endsWith('::') ? `${previous}${before}` : before;
  }
  return before;
}

/** Rust: the names a file's `use` declarations bind to paths (`use crate::net::conn;` → conn: crate::net::conn). */
/**
 * Whether a span (line, column, end line, end column: the end excluded) holds a position (line, column); a position
 * without a column (0) is taken to be on the span's lines.
 */
function spanHolds(span: ImportSpan, [line, column]: [number, number]): boolean {
  if (column === 0) return span[0] <= line && line <= span[2];
  return (line > span[0] || (line === span[0] && column >= span[1])) && (line < span[2] || (line === span[2] && column < span[3]));
}

function rustUseBindings(imports: FileFacts['imports']): Map<string, string> {
  const bindings = new Map<string, string>();
  for (const raw of imports) {
    if (raw.modDecl) continue;
    for (const name of raw.names) {
      if (name.local === '*') continue;
      const full = [raw.module, name.imported].filter((part) => part !== '').join('::');
      // `use a::b::{self}`: binds b to a::b
      if (name.local === 'self' && full.endsWith('::self')) {
        const module = full.slice(0, -'::self'.length);
        bindings.set(module.slice(module.lastIndexOf(':') + 1), module);
      } else bindings.set(name.local, full.endsWith('::self') ? full.slice(0, -'::self'.length) : full); // (`b::{self as c}`: c is a::b)
    }
  }
  return bindings;
}

/**
 * Rust: the path before the name `before` (a line up to the name) ends in — `crate::defs` for `x = crate::defs::` —
 * undefined when the name has no path, null when the path is not one of plain segments (`<T as Tr>::`, `Vec::<u8>::`).
 */
/**
 * Rust: how deep a chain of re-exports, `use`s and globs is followed in one walk — not a hop count (cycles end at the
 * names under way: X64-12) but a bound that keeps the recursion within the stack on a generated chain of thousands: a
 * walk cut there is taken up again from the cut, on a fresh stack, until the chain's end (X65-48).
 */
const rustChainLimit = 200;

/** Rust's primitive types (`u32::build(7)` names a type, though lowercase). */
const rustPrimitive = /^(?:[iu](?:8|16|32|64|128|size)|f32|f64|bool|char|str)$/;

function rustPath(before: string): string | null | undefined {
  const rest = withoutTurbofish(before.trimEnd());
  if (!rest.endsWith('::')) return undefined;
  const match = /((?:[A-Za-z_][A-Za-z0-9_]*\s*::\s*)+)$/.exec(rest);
  if (!match) return null;
  const start = rest.length - match[1]!.length;
  // (`::cr::util::Item::new`: a leading `::` names a crate — kept, `::cr::util::Item`, so that a module of the file named
  // like it does not take the path: `::me::util::Item` for `extern crate self as me;` beside a `mod me` — X63-15, X65-28)
  if (start >= 2 && rest.slice(start - 2, start) === '::' && (start === 2 || !/[\w>:]/.test(rest.charAt(start - 3)))) return `::${match[1]!.replace(/\s+/g, '').replace(/::$/, '')}`;
  if (start > 0 && /[\w>:]/.test(rest.charAt(start - 1))) return null;
  return match[1]!.replace(/\s+/g, '').replace(/::$/, '');
}

/**
 * Rust: a path's text (a line up to a name, ending in `::`) without the generic arguments of its turbofish segments —
 * `Vec::<Item>::`, `HashMap::<u32, Item>::`, `RefCell::<Option<Item>>::` are `Vec::`, `HashMap::`, `RefCell::`: the
 * path names the type written before the `::<…>`, never its last argument (outside round X64-14). Other text as is.
 */
function withoutTurbofish(rest: string): string {
  if (!rest.endsWith('::') || !rest.includes('>')) return rest;
  let tail = '';
  let at = rest.length;
  for (;;) {
    const head = rest.slice(0, at).trimEnd();
    if (head.endsWith('::')) {
      tail = `::${tail}`;
      at = head.length - 2;
      continue;
    }
    const name = /[A-Za-z_][A-Za-z0-9_]*$/.exec(head);
    if (name) {
      tail = `${name[0]}${tail}`;
      at = head.length - name[0].length;
      continue;
    }
    if (!head.endsWith('>') || !tail.startsWith('::')) break;
    // (the `<` that opens the arguments: nested ones counted, `->` of a `Fn() -> T` argument is no bracket)
    let depth = 0;
    let open = -1;
    for (let index = head.length - 1; index >= 0 && open < 0; index -= 1) {
      const char = head.charAt(index);
      if (char === '>' && head.charAt(index - 1) !== '-') depth += 1;
      else if (char === '<' && --depth === 0) open = index;
      else if (char === ';' || char === '{' || char === '}') break;
    }
    if (open < 0) break;
    const turbofish = /::\s*$/.exec(head.slice(0, open));
    if (!turbofish) {
      // (`<Vec<Item>>::new()`, `<crate::item::Item>::new()`: a qualified path without `as` names its type — `Vec::new()`,
      // `crate::item::Item::new()`; `<T as Tr>::` stays)
      let type = head.slice(open + 1, -1);
      if (/\bas\b/.test(type) || /[\w>]\s*$/.test(head.slice(0, open))) break;
      for (let previous = ''; previous !== type; ) [previous, type] = [type, type.replace(/<[^<>]*>/g, '')];
      type = type.replace(/\s+/g, '');
      if (!/^(?:::)?(?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*$/.test(type)) break;
      tail = `${type}${tail}`;
      at = open;
      break;
    }
    at = turbofish.index;
  }
  return at === rest.length ? rest : `${rest.slice(0, at)}${tail}`;
}

/**
 * The qualifier of a selector the name `before` (a line up to the name) ends in — `sa` for `x := sa.` (a Go package,
 * a TS/Python namespace) — undefined when the name is unqualified, null when the selector is no single qualifier
 * (`a.b.`, `f().`, `x[0].`).
 */
function selectorQualifier(before: string): string | null | undefined {
  const rest = before.trimEnd();
  if (!rest.endsWith('.')) return undefined;
  const head = rest.slice(0, -1).trimEnd();
  const name = /[\p{L}_][\p{L}\p{N}_]*$/u.exec(head)?.[0];
  if (name === undefined) return null;
  const previous = head.slice(0, head.length - name.length).trimEnd();
  return previous.endsWith('.') ? null : name;
}

/** The import statement a name of kind import/re-export at `line`:`column` is part of: the last one starting before it that names it. */
function statementNaming(imports: FileFacts['imports'], name: string, line: number, column: number): FileFacts['imports'][number] | undefined {
  const before = (raw: FileFacts['imports'][number]) => raw.line < line || (raw.line === line && (raw.column ?? 0) <= column);
  const later = (a: FileFacts['imports'][number], b: FileFacts['imports'][number]) => a.line > b.line || (a.line === b.line && (a.column ?? 0) > (b.column ?? 0));
  let found: FileFacts['imports'][number] | undefined;
  for (const raw of imports) {
    if (raw.augments || !before(raw) || (found && later(found, raw))) continue;
    if (raw.names.some((entry) => entry.local === name || lastSegment(entry.imported) === name)) found = raw;
  }
  return found;
}

/** Whether `line`:`column` is inside `span` (its end excluded). */
function inSpan([line0, column0, line1, column1]: ImportSpan, line: number, column: number): boolean {
  return (line > line0 || (line === line0 && column >= column0)) && (line < line1 || (line === line1 && column < column1));
}

/** Whether `a` starts before `b`. */
function startsBefore(a: ImportSpan, b: ImportSpan): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/** Whether `inner` lies inside `outer`. */
function within(inner: ImportSpan, outer: ImportSpan): boolean {
  return !startsBefore(inner, outer) && (inner[2] < outer[2] || (inner[2] === outer[2] && inner[3] <= outer[3]));
}

/**
 * How a file's imports bind its names, region by region. A Python import inside a function binds its
 * names in that function's body only (and in the functions it encloses), an import in a class body in
 * that body from the import on (not in its methods or comprehensions), where it hides the module's
 * binding of the same name: such a file is one view per scope with imports of its own — the positions
 * of its spans outside the scopes nested in it with imports of their own, the file's imports with the
 * scope's (and its enclosing scopes') in place of those they hide — and one view of the rest with the
 * file-level imports only. Any other file is one view of everything.
 */
function importViews(item: Loaded): Array<{ item: Loaded; holds?: (line: number, column: number) => boolean }> {
  const scoped = item.facts.imports.filter((raw) => raw.scope !== undefined);
  if (scoped.length === 0) return [{ item }];
  const key = (scope: ImportSpan[]) => scope.join(';');
  const scopes = [...new Map(scoped.map((raw) => [key(raw.scope!), raw.scope!])).values()];
  // The innermost scope with imports holding a position (scopes nest or are apart: of those holding it, the one that starts
  // last — two imports of a class body hold its later text with the same spans, a comprehension's first iterable)
  const innermost = (line: number, column: number) => {
    let best: ImportSpan[] | undefined;
    for (const scope of scopes) if (scope.some((span) => inSpan(span, line, column)) && (!best || startsBefore(best[0]!, scope[0]!))) best = scope;
    return best === undefined ? undefined : key(best);
  };
  const fileLevel = item.facts.imports.filter((raw) => raw.scope === undefined);
  const views: Array<{ item: Loaded; holds?: (line: number, column: number) => boolean }> = [
    { item: { entry: item.entry, facts: { ...item.facts, imports: fileLevel } }, holds: (line, column) => innermost(line, column) === undefined },
  ];
  for (const scope of scopes) {
    let imports = fileLevel;
    // the enclosing scopes' imports (every span of this one inside one of theirs), outermost first, each hiding the names bound before it
    const enclosing = scopes
      .filter((outer) => scope.every((span) => outer.some((around) => within(span, around))))
      .sort((a, b) => (startsBefore(a[0]!, b[0]!) ? -1 : startsBefore(b[0]!, a[0]!) ? 1 : within(a[0]!, b[0]!) ? 1 : -1));
    for (const outer of enclosing) {
      const own = scoped.filter((raw) => key(raw.scope!) === key(outer));
      const bound = new Set(own.flatMap((raw) => raw.names.map((name) => name.local)));
      imports = [...imports.map((raw) => ({ ...raw, names: raw.names.filter((name) => !bound.has(name.local)) })).filter((raw) => raw.names.length > 0), ...own];
    }
    const id = key(scope);
    views.push({ item: { entry: item.entry, facts: { ...item.facts, imports } }, holds: (line, column) => innermost(line, column) === id });
  }
  return views;
}

/** `reference` with what its extraction flag says (a Go struct literal's key, a package's member). */
function withFlag(reference: Reference, flag: RefFlag | undefined): Reference {
  if (flag === 'f') reference.fieldKey = true;
  else if (flag === 'p') reference.packageMember = true;
  else if (flag === 'o') reference.localObject = true;
  return reference;
}

/**
 * The start of the attribute chain that `before` (a line up to a name) ends in: `car` for `assert car.`, `pkg` for
 * `pkg.defs.`; undefined when it is no attribute (no `.` before the name); null when the chain does not start with
 * a plain name (`f().`, `x[0].`, a non-ASCII name, a chain continued from the line before).
 */
function attributeRoot(before: string): string | null | undefined {
  let rest = before.trimEnd();
  if (!rest.endsWith('.')) return undefined;
  let root: string | null = null;
  while (rest.endsWith('.')) {
    rest = rest.slice(0, -1).trimEnd();
    const name = /[A-Za-z_][A-Za-z0-9_]*$/.exec(rest)?.[0];
    if (name === undefined) return null;
    root = name;
    rest = rest.slice(0, rest.length - name.length);
    if (/[\w.\u0080-\uffff]$/.test(rest) && !rest.endsWith('.')) return null;
    rest = rest.trimEnd();
  }
  return root;
}

/** Longest `context` a reference carries: past it, a window of the line around the reference (`…` where cut). */
export const maxContextChars = 400;

/**
 * A reference's context: its line, trimmed; a line longer than {@link maxContextChars} (generated or minified code)
 * is cut to a window around `column` — every reference carried its whole line, and 4,000 references on one 51 KB line
 * printed 204 MB (outside attack X50-07).
 */
function lineAt(lines: string[] | undefined, line: number, column = 1): string {
  return referenceContext(lines?.[line - 1] ?? '', column);
}

/** {@link lineAt} of one line's text. */
export function referenceContext(raw: string, column: number): string {
  const text = raw.trim();
  if (text.length <= maxContextChars) return text;
  const at = Math.max(0, column - 1);
  const start = Math.max(0, Math.min(at - 150, raw.length - maxContextChars));
  const end = Math.min(raw.length, start + maxContextChars);
  return `${start > 0 ? '…' : ''}${raw.slice(start, end).trim()}${end < raw.length ? '…' : ''}`;
}

function toAnalysis(loaded: Loaded, resolver: ModuleResolver, lines: string[] | undefined): FileAnalysis {
  const { entry, facts } = loaded;
  const imports: ImportRef[] = facts.imports.map((raw) => ({
    module: raw.module,
    line: raw.line,
    names: raw.names,
    reexport: raw.reexport,
    resolved: resolver.resolve(entry.file, entry.lang, raw),
  }));
  const references: Reference[] = decodeRefs(facts.refs).map(([name, line, column, kind, flag]) => withFlag({ file: entry.file, line, column, context: lineAt(lines, line, column), kind, name }, flag));
  return { file: entry.file, lang: entry.lang, blob: entry.blob, symbols: facts.symbols, imports, references };
}

/** The lines of each entry's content: from memory by blob id, else read (and remembered). */
function linesOf(context: RepoContext, entries: readonly RepoFile[], prefetched?: ReadonlyMap<string, string>): Map<string, string[]> {
  const result = new Map<string, string[]>();
  const useMemory = currentScope().memory;
  const missing: RepoFile[] = [];
  for (const entry of entries) {
    const known = useMemory ? memory.get(memoryKey(entry.blob, entry.lang))?.lines : undefined;
    if (known) result.set(entry.file, known);
    else missing.push(entry);
  }
  const exact = new Set<string>();
  const unread = prefetched ? missing.filter((entry) => !prefetched.has(entry.file)) : missing;
  const texts = readTexts(context, unread, exact);
  if (prefetched) {
    for (const entry of missing) {
      const text = prefetched.get(entry.file);
      if (text === undefined) continue;
      texts.set(entry.file, text);
      exact.add(entry.file);
    }
  }
  const byFile = new Map(missing.map((entry) => [entry.file, entry]));
  for (const [file, text] of texts) {
    const lines = text.split(/\r?\n/);
    result.set(file, lines);
    const entry = byFile.get(file)!;
    // Only content whose id is known to be this text: a tracked unmodified file may have changed since listed.
    if (useMemory && exact.has(file)) memory.update(memoryKey(entry.blob, entry.lang), { lines }, text.length + 16 * lines.length);
  }
  return result;
}

/**
 * Per-file facts for the repository containing `repoRoot`: every tracked file in a supported
 * language (or `opts.files`), working-tree content where it differs from the index.
 */
export async function analyzeRepo(repoRoot: string, opts: AnalyzeOptions = {}): Promise<RepoAnalysis> {
  const context = await repoContext(repoRoot);
  const stats: AnalysisStats = { parsed: 0, cached: 0 };
  const entries = await listRepoFiles(context, { only: opts.files, includeUntracked: opts.includeUntracked });
  // Resolution needs every path, not only the requested ones.
  const allPaths = opts.files ? undefined : (await listRepo(context, { includeUntracked: opts.includeUntracked })).allPaths;
  const [loaded, resolver] = await Promise.all([loadFacts(context, entries, stats), resolverFor(context, allPaths)]);
  const lines = linesOf(context, entries);
  // Callers own what they get: copies, not the remembered facts.
  return { repoRoot: context.root, files: loaded.map((item) => structuredClone(toAnalysis(item, resolver, lines.get(item.entry.file)))), stats };
}

/** Definitions in the repository (or in `files`), sorted by file then line. */
export async function listSymbols(repoRoot: string, files?: string[]): Promise<FileSymbol[]> {
  const context = await repoContext(repoRoot);
  const entries = await listRepoFiles(context, { only: files });
  const heads = files ? (await loadFacts(context, entries, { parsed: 0, cached: 0 })).map(({ entry, facts }) => ({ file: entry.file, symbols: facts.symbols })) : await loadHeads(context, entries);
  return heads.flatMap((head) => head.symbols.map((symbol) => ({ file: head.file, ...symbol })));
}

/**
 * Rust: the test code of `files` (repo-relative `.rs` files) — rule E46's test-only lines and `mod x;` declarations —
 * from the per-blob facts cache: a file is parsed once per content, not on every check-test-cascade call. A file
 * without them there (too large for facts, no `cfg` in it, facts of an older format) is parsed here; a file not
 * found is absent from the answer.
 */
export async function rustTestFacts(repoRoot: string, files: readonly string[]): Promise<Map<string, RustTestItems>> {
  const result = new Map<string, RustTestItems>();
  if (files.length === 0) return result;
  const context = await repoContext(repoRoot);
  const entries = (await listRepoFiles(context, { only: [...files] })).filter((entry) => entry.lang === 'rust');
  for (const { entry, facts } of await loadFacts(context, entries, { parsed: 0, cached: 0 })) {
    if (facts.rustTests) {
      result.set(entry.file, facts.rustTests);
      continue;
    }
    const text = readTexts(context, [entry]).get(entry.file);
    if (text !== undefined) result.set(entry.file, await rustTestItems(text));
  }
  return result;
}

/** Cold-path dependency answers of this process (memory scope), keyed by cache dir, listing fingerprint and files. */
const graphAnswers = new Map<string, DependencyGraph>();

/**
 * Resolved dependencies of `files` (repo-relative) and the repository files that depend on them.
 * Reverse dependencies need every file's imports: the whole repository is analysed (cached).
 */
export async function dependencyGraph(repoRoot: string, files: string[]): Promise<DependencyGraph> {
  const context = await repoContext(repoRoot);
  const { files: entries, allPaths, fingerprint } = await listRepo(context, {});
  const dir = cacheDir(context.commonDir);
  // The resolved edges of an unchanged tree are one small file; otherwise resolve every file's imports.
  const useMemory = currentScope().memory;
  let pack = (useMemory ? (packMemory.get(`graph:${dir}:${fingerprint}`) as GraphPack | undefined) : undefined) ?? readGraphPack(dir, fingerprint);
  if (pack && useMemory) rememberPack(`graph:${dir}:${fingerprint}`, pack);
  // No whole-tree graph and no whole-tree heads at hand: only the listed files and the files that can import them are read.
  const treeKey = pack ? undefined : treePackKey(entries);
  const heads = treeKey === undefined ? undefined : ((useMemory ? (packMemory.get(`tree:${dir}:${treeKey}`) as HeadEntry[] | undefined) : undefined) ?? readTreePack(dir, treeKey));
  if (!pack && !heads && files.length * 4 < entries.length) {
    // The answer depends on the listing only (paths and contents, go.mod/Cargo.toml included): remembered by its fingerprint.
    const answerKey = `${dir}\0${fingerprint}\0${files.join('\0')}`;
    const known = useMemory ? graphAnswers.get(answerKey) : undefined;
    if (known) return structuredClone(known);
    const answer = await importersOf(context, { files: entries, allPaths, fingerprint }, files);
    if (useMemory) {
      graphAnswers.set(answerKey, structuredClone(answer));
      while (graphAnswers.size > 16) graphAnswers.delete(graphAnswers.keys().next().value!);
    }
    return answer;
  }
  if (!pack) {
    if (heads && useMemory) rememberPack(`tree:${dir}:${treeKey}`, heads);
    if (heads) count(0, heads.length);
    const [heads2, resolver] = await Promise.all([heads ?? loadHeads(context, entries), resolverFor(context, allPaths)]);
    const index = new Map(heads2.map((head, position) => [head.file, position]));
    const deps = heads2.map((head) => {
      const targets = new Set<number>();
      for (const raw of head.imports) for (const target of resolver.resolve(head.file, head.lang, raw)) if (index.has(target)) targets.add(index.get(target)!);
      return [...targets].sort((a, b) => a - b);
    });
    pack = { files: heads2.map((head) => head.file), deps };
    writeGraphPack(dir, fingerprint, pack);
    if (useMemory) rememberPack(`graph:${dir}:${fingerprint}`, pack);
  } else count(0, pack.files.length);
  const wanted = new Set(files);
  const dependsOn: Record<string, string[]> = {};
  const dependedBy: Record<string, string[]> = {};
  for (const file of files) {
    dependsOn[file] = [];
    dependedBy[file] = [];
  }
  pack.files.forEach((file, position) => {
    const targets = pack.deps[position]!.map((target) => pack.files[target]!);
    if (wanted.has(file)) dependsOn[file] = [...targets].sort();
    for (const target of targets) if (wanted.has(target)) dependedBy[target]!.push(file);
  });
  for (const file of files) dependedBy[file] = [...new Set(dependedBy[file])].sort();
  return { dependsOn, dependedBy };
}

/**
 * Words one of whose whole-word occurrences any file importing `target` must contain, and whether
 * that is not enough (`probes`): an import names the file it resolves to by its stem (`./store.js`,
 * `app.store`, `crate::store`, `mod store;`), its directory for an index/`__init__.py`/`mod.rs`
 * module, a Go package by its directory's (or module path's) last element. What can reach a file
 * without its name is covered by probes: a TS/JS specifier ending in `.`/`..` (when the file's
 * extension-less path is a directory), Python `from . import x` (an `__init__.py`), Rust `super`
 * (a module file with child modules), `crate` and the crate's name (the crate root). Mirrors
 * {@link ModuleResolver}; a test compares the result with the whole-tree graph.
 */
function importerWords(target: string, dirs: ReadonlySet<string>, goModules: ReadonlyArray<{ dir: string; module: string }>, crateNames: readonly string[]): { words: Set<string>; jsDots: boolean; pythonRelative: boolean } {
  const words = new Set<string>();
  const dir = path.posix.dirname(target) === '.' ? '' : path.posix.dirname(target);
  const base = path.posix.basename(target);
  const stems = new Set([base.replace(/\.[^.]*$/, ''), ...(base.endsWith('.d.ts') ? [base.slice(0, -'.d.ts'.length)] : [])]);
  for (const stem of stems) if (stem !== '') words.add(stem);
  let jsDots = false;
  let pythonRelative = false;
  const withoutExtension = [target.replace(/\.[^./]*$/, ''), ...(target.endsWith('.d.ts') ? [target.slice(0, -'.d.ts'.length)] : [])];
  // TS's .js -> .ts mapping: `./x.js` (a directory named x.js) names x.ts.
  for (const [from, to] of [['.js', ['.ts', '.tsx']], ['.jsx', ['.tsx']], ['.mjs', ['.mts']], ['.cjs', ['.cts']]] as const) {
    for (const extension of to) if (target.endsWith(extension)) withoutExtension.push(target.slice(0, -extension.length) + from);
  }
  if (/^index\.[^/]*$/.test(base)) withoutExtension.push(dir);
  if (withoutExtension.some((candidate) => dirs.has(candidate))) jsDots = true;
  if (base === '__init__.py' || base === 'mod.rs' || /^index\./.test(base) || base === 'lib.rs' || base === 'main.rs') {
    if (dir !== '') words.add(path.posix.basename(dir));
    if (dir === '' && /^index\./.test(base)) jsDots = true;
  }
  if (base === '__init__.py') pythonRelative = true;
  if (target.endsWith('.go')) {
    if (dir !== '') words.add(path.posix.basename(dir));
    for (const module of goModules) if (module.dir === dir) words.add(module.module.slice(module.module.lastIndexOf('/') + 1));
  }
  if (target.endsWith('.rs')) {
    if (base === 'mod.rs' || base === 'lib.rs' || base === 'main.rs' || dirs.has(target.slice(0, -3))) words.add('super');
    if (base === 'lib.rs' || base === 'main.rs') {
      words.add('crate');
      for (const name of crateNames) words.add(name);
    }
  }
  return { words, jsDots, pythonRelative };
}

/**
 * Files with any of `words` ([A-Za-z0-9_]+) as a whole word, as `git grep -w -F -e a -e b …` answers. Many words
 * are one Perl pattern with explicit ASCII word boundaries (about twice as fast as many -F patterns with -w; an
 * alternation under -w could miss `ab` where `a` matches first); a git without PCRE gets the -F form.
 */
async function grepWords(words: readonly string[], grep: (args: string[]) => Promise<string[]>): Promise<string[]> {
  if (words.length > 1) {
    try {
      return await grep(['-P', '-e', `(?<![A-Za-z0-9_])(?:${[...words].sort((a, b) => b.length - a.length).join('|')})(?![A-Za-z0-9_])`]);
    } catch {
      // no PCRE in this git: the fixed-string form below
    }
  }
  return grep(['-w', '-F', ...words.flatMap((word) => ['-e', word])]);
}

/**
 * {@link dependencyGraph} without the whole tree (a cold cache): the listed files are read for their
 * own imports, and the only other files read are those a lexical search says could import one of
 * them ({@link importerWords}: git grep, or the word index of a process that searched the repository
 * before). Exactly the whole-tree answer for the listed files; no graph pack is written (it would
 * cover only part of the tree).
 */
async function importersOf(context: RepoContext, listing: RepoListing, files: readonly string[]): Promise<DependencyGraph> {
  const byPath = new Map(listing.files.map((entry) => [entry.file, entry]));
  const resolverPromise = resolverFor(context, listing.allPaths);
  const dirs = directoriesOf(listing.allPaths);
  const resolver = await resolverPromise;
  const targets = [...new Set(files)].filter((file) => byPath.has(file));
  const plain = new Set<string>();
  const texts = new Set<string>();
  const patterns = new Set<string>();
  // (TS/JS: a tsconfig/jsconfig `paths` alias naming a target without its file name — `@auth`, `@acme/core`: X59-18)
  const configs = listing.allPaths.filter((file) => /(?:^|\/)(?:tsconfig[^/]*|jsconfig)\.json$/.test(file));
  const aliases = configs.length > 0 ? new ModuleTargets(context.root) : undefined;
  for (const target of targets) {
    const { words, jsDots, pythonRelative } = importerWords(target, dirs, resolver.goModuleList(), resolver.crateNames());
    if (aliases && /\.(?:[cm]?[jt]sx?)$/.test(target)) for (const word of aliases.aliasWords(target.replace(/\.(?:d\.ts|[cm]?[jt]sx?)$/, ''), configs)) words.add(word);
    // A name with other characters (`my-lib`, `types.generated`) is searched as plain text: more files, never fewer.
    for (const word of words) (/^\w+$/.test(word) ? plain : texts).add(word);
    // A quoted specifier whose last segment is `.` or `..` (`'..'`, `'./x/..'`, `"../"`).
    if (jsDots) patterns.add('["\'`]([^"\'`]*/)?\\.\\.?/?["\'`]');
    // `from . import x`, `from .. import (`, `from .import x`, a `from` continued on the next line.
    if (pythonRelative) patterns.add('from[[:space:]]+\\.+[[:space:]]*(import|\\(|\\\\|$)').add('from[[:space:]]*\\\\');
  }
  const useMemory = currentScope().memory;
  const index = useMemory && memory.searched.has(context.commonDir) ? await wordIndex(context, listing, {}) : undefined;
  if (useMemory) memory.searched.add(context.commonDir);
  const grep = async (args: string[]): Promise<string[]> => {
    const answer = await context.git.run(['grep', '-l', '-z', '--no-color', ...args, '--', '*.ts', '*.mts', '*.cts', '*.tsx', '*.js', '*.mjs', '*.cjs', '*.jsx', '*.go', '*.py', '*.rs'], { allowExitCodes: [1] });
    return answer.stdout.split('\0').filter((file) => file !== '');
  };
  const words = [...plain];
  // Not -I: a file git calls binary is still parsed by the whole-tree graph, so it must be found here too.
  const [byWord, byText, byPattern] = await Promise.all([
    words.length === 0 ? [] : index ? [...index.withWords(words), ...index.binary()] : grepWords(words, grep),
    texts.size === 0 ? [] : grep(['-F', ...[...texts].flatMap((text) => ['-e', text])]),
    patterns.size === 0 ? [] : grep(['-E', ...[...patterns].flatMap((pattern) => ['-e', pattern])]),
  ]);
  // Symbolic links: git grep does not search them, the whole-tree graph reads them.
  const candidates = new Set([...targets, ...byWord, ...byText, ...byPattern, ...listing.files.filter((entry) => entry.symlink).map((entry) => entry.file)]);
  const entries = [...candidates].sort().flatMap((file) => byPath.get(file) ?? []);
  const loaded = await loadFacts(context, entries, { parsed: 0, cached: 0 }, undefined, { imports: true });
  const wanted = new Set(targets);
  const dependsOn: Record<string, string[]> = {};
  const dependedBy: Record<string, string[]> = {};
  for (const file of files) {
    dependsOn[file] = [];
    dependedBy[file] = [];
  }
  for (const { entry, facts } of loaded) {
    const resolved = new Set<string>();
    for (const raw of facts.imports) for (const target of resolver.resolve(entry.file, entry.lang, raw)) if (byPath.has(target)) resolved.add(target);
    if (wanted.has(entry.file)) dependsOn[entry.file] = [...resolved].sort();
    for (const target of resolved) if (wanted.has(target)) dependedBy[target]!.push(entry.file);
  }
  for (const file of files) dependedBy[file] = [...new Set(dependedBy[file])].sort();
  return { dependsOn, dependedBy };
}

/**
 * The word index: whole words and star-re-export probes of every listed file's content, kept per
 * blob id in the process's memory — standing in for `git grep -w -F` / `git grep -F` over the
 * working tree in a process that searches this repository again (resident server, scout tools).
 * Exactly git grep's answer: git's word characters ([A-Za-z0-9_]), no words in content git grep
 * -I calls binary (a NUL in the first 8,000 bytes) or in anything but a regular file (on disk and
 * in the index). Not used (git grep answers) with untracked files, a `files` subset, a `diff` attribute
 * on a listed file (the `binary` macro included: git grep -I passes it over; attributes.ts
 * `fileAttributes`), an assume-unchanged or skip-worktree entry (git grep searches the index blob, or
 * nothing, not the disk) — both make the listing `grepOnly` —, or a listed file over 1 MiB (a generated bundle: its words would cost more
 * than searching it, and one slice of an idle fill would hold requests up for seconds).
 */
interface WordIndex {
  /** Files (sorted) whose content has any of `words` as a whole word. */
  withWords(words: readonly string[]): string[];
  /** Files (sorted, not Go) whose content contains any of the fixed star-re-export probes. */
  withStars(): string[];
  /** Files whose content git grep -I calls binary (no words indexed). */
  binary(): string[];
}

const grepExtensions = /\.(?:ts|mts|cts|tsx|js|mjs|cjs|jsx|go|py|rs)$/;
const starExtensions = /\.(?:ts|mts|cts|tsx|js|mjs|cjs|jsx|py|rs)$/;

/** The word index of `listing`, or undefined where git grep must answer (see {@link WordIndex}). */
async function wordIndex(context: RepoContext, listing: RepoListing, options: { includeUntracked?: boolean }): Promise<WordIndex | undefined> {
  // (grepOnly: index flags or attributes that make git grep search otherwise than the bytes on disk: repo-files.ts)
  if (!currentScope().memory || options.includeUntracked || listing.grepOnly || !memory.searched.has(context.commonDir)) return undefined;
  // The same listing (paths, modes, blob ids, working-tree hashes, link types) as a recent call: the same files hold the words.
  const listingKey = `${context.root}\0${listing.fingerprint}\0${listing.files.filter((entry) => entry.symlink).map((entry) => entry.file).join('\0')}`;
  let known = recentIndexes.get(listingKey);
  if (!known) {
    // Many files never read by this process (the second command on a new tree): git grep answers this call, and a
    // process with idle time (the resident server) reads them after it, between requests — building the index here
    // costs several times the search (reading every file, 5,000 on the bench's tree: 300–600 ms).
    const runner = currentIdleRunner();
    const pending = runner === undefined ? [] : unindexed(listing);
    if (runner !== undefined && pending.length > deferIndexAbove) {
      scheduleIndexFill(runner, context.root, listing, pending);
      return undefined;
    }
    const built = indexListing(context, listing);
    // A listed file over 1 MiB (maxIndexedBytes) is in no word index: git grep answers.
    if (built.known === undefined) return undefined;
    known = built.known;
    // Only a listing whose every file was read as listed (nothing edited meanwhile) is kept for the next call.
    if (built.exact) {
      recentIndexes.set(listingKey, known);
      while (recentIndexes.size > 4) recentIndexes.delete(recentIndexes.keys().next().value!);
    }
  }
  const files = known;
  const hits = wordHits.get(files) ?? new Map<string, string[]>();
  wordHits.set(files, hits);
  return {
    withWords(words) {
      // The files of one word are remembered with the listing's index (same listing, same answer).
      const key = words.join('\0');
      const remembered = hits.get(key);
      if (remembered) return [...remembered];
      const result: string[] = [];
      for (const [file, { words: present }] of files) if (present && words.some((word) => present.has(word))) result.push(file);
      hits.set(key, result);
      while (hits.size > 64) hits.delete(hits.keys().next().value!);
      return [...result];
    },
    binary() {
      const result: string[] = [];
      for (const [file, { words: present }] of files) if (present === null) result.push(file);
      return result;
    },
    withStars() {
      const result: string[] = [];
      for (const [file, { fixed }] of files) if (fixed !== 0 && starExtensions.test(file)) result.push(file);
      return result;
    },
  };
}

type ListingWords = Map<string, { words: ReadonlySet<string> | null; fixed: number }>;
/** Word indexes of the last few listings (keyed by the listing's fingerprint: content-addressed). */
const recentIndexes = new Map<string, ListingWords>();
/** Files holding a word (or any of several), per word index. */
const wordHits = new WeakMap<ListingWords, Map<string, string[]>>();

/** Files a word index of `listing` holds whose words this process does not remember. */
function unindexed(listing: RepoListing): RepoFile[] {
  return listing.files.filter((entry) => grepExtensions.test(entry.file) && !entry.symlink && memory.get(memoryKey(entry.blob, entry.lang))?.words === undefined);
}

/** Above this many files to read, the word index is built in idle time (where there is any), not within the call. */
const deferIndexAbove = 256;
/** A slice of an idle fill ends after this many files or bytes (a request waits at most one slice: ~10–30 ms). */
const fillSliceFiles = 128;
const fillSliceBytes = 2 * 1024 * 1024;
/** Listings whose fill is scheduled or running (root + fingerprint). */
const filling = new Set<string>();
/**
 * Fills run per listing (the newest few): at most two — what the memory could not keep (a tree past its budget) or
 * would not (bytes that do not hash to the listed id: CRLF checkouts) would be read again after every call for
 * nothing (X44-05/07), while a tree edited during its fill and back again is filled once more (X45-02); git grep
 * answers where the index cannot be had.
 */
const fills = new Map<string, number>();
/** Files larger than this are not in a word index (a listing with one is searched by git grep: X45-08/09). */
const maxIndexedBytes = 1024 * 1024;

/**
 * Reads the words of `pending` (`listing`'s unremembered files) into the memory in idle time, a slice at a time; the
 * next call on the same tree then builds the index from the memory. Only bytes that still have their listed
 * blob id are remembered (a file edited since is read again when asked).
 */
function scheduleIndexFill(runner: IdleRunner, root: string, listing: RepoListing, pending: readonly RepoFile[]): void {
  const key = `${root}\0${listing.fingerprint}`;
  if (filling.has(key) || (fills.get(key) ?? 0) >= 2) return;
  filling.add(key);
  runner(async (between) => {
    try {
      for (let at = 0; at < pending.length; ) {
        if (!(await between())) return;
        // One slice: up to fillSliceFiles files or fillSliceBytes bytes (800 KB files made a slice of 128 last 0.8 s: X44-03).
        let bytes = 0;
        for (const end = Math.min(pending.length, at + fillSliceFiles); at < end && bytes < fillSliceBytes; at += 1) {
          const entry = pending[at]!;
          if (memory.get(memoryKey(entry.blob, entry.lang))?.words !== undefined) continue;
          const read = wordsOfFile(path.join(root, entry.file));
          if (read === undefined || read === 'unreadable') continue;
          bytes += read.bytes;
          if (read.blob === entry.blob) memory.update(memoryKey(entry.blob, entry.lang), { words: read.words, fixed: read.fixed }, read.cost);
        }
      }
      fills.set(key, (fills.get(key) ?? 0) + 1);
      while (fills.size > 16) fills.delete(fills.keys().next().value!);
    } finally {
      filling.delete(key);
    }
  });
}

/**
 * The whole words and fixed probes of a file's bytes as git grep sees them, with its blob id: undefined when it is not
 * a regular file or is gone, 'unreadable' when it is past {@link maxIndexedBytes} (a word index does not hold it).
 */
function wordsOfFile(full: string): { words: ReadonlySet<string> | null; fixed: number; blob: string; cost: number; bytes: number } | 'unreadable' | undefined {
  // (git grep searches no symbolic link: none is followed)
  const bytes = readRegularFile(full, true, maxIndexedBytes);
  if (bytes === 'too large') return 'unreadable';
  if (bytes === undefined) return undefined;
  const binary = bytes.subarray(0, 8000).includes(0);
  let text: string;
  try {
    text = binary ? '' : bytes.toString('latin1');
  } catch {
    return 'unreadable';
  }
  const words = binary ? null : new Set(text.split(/[^A-Za-z0-9_]+/).filter((word) => word !== ''));
  let fixed = 0;
  fixedProbes.forEach((probe, bit) => {
    if (!binary && text.includes(probe)) fixed |= 1 << bit;
  });
  return { words, fixed, blob: blobId(bytes), cost: bytes.length + 32 * (words?.size ?? 0) + 16, bytes: bytes.length };
}

/** The words of every listed file, from remembered blobs or by reading the files; `exact` when every read file had its listed blob id. */
function indexListing(context: RepoContext, listing: RepoListing): { known: ListingWords | undefined; exact: boolean } {
  const known: ListingWords = new Map();
  let exact = true;
  for (const entry of listing.files) {
    if (!grepExtensions.test(entry.file) || entry.symlink) continue;
    const remembered = memory.get(memoryKey(entry.blob, entry.lang));
    if (remembered?.words !== undefined) {
      known.set(entry.file, { words: remembered.words, fixed: remembered.fixed ?? 0 });
      continue;
    }
    const read = wordsOfFile(path.join(context.root, entry.file));
    if (read === 'unreadable') return { known: undefined, exact: false };
    if (read === undefined) {
      // deleted since listed (git grep finds nothing there either), or not a regular file
      exact = false;
      continue;
    }
    known.set(entry.file, { words: read.words, fixed: read.fixed });
    if (read.blob === entry.blob) memory.update(memoryKey(entry.blob, entry.lang), { words: read.words, fixed: read.fixed }, read.cost);
    else exact = false;
  }
  return { known, exact };
}

/** Files containing `word` as a whole word (git grep over the working tree), limited to analysable files. */
async function filesWithWords(context: RepoContext, words: readonly string[], options: { files?: string[]; includeUntracked?: boolean }, index?: WordIndex, onStdout?: (chunk: string) => void): Promise<string[]> {
  if (words.length === 0) return [];
  const plainWord = words.every((word) => /^\w+$/.test(word));
  if (index && plainWord && !options.files) return index.withWords(words);
  // Streamed (the caller parses what it reads meanwhile): one search thread, which leaves the other core to the
  // caller and writes its answer in steady 4 KB pieces (measured on the bench's 5,000 files: the call 1.9× git
  // grep -w instead of 2.2–2.8× with git's threads, which compete with the parse for 2 cores).
  const args = ['grep', ...(onStdout ? ['--threads', '1'] : []), '-l', '-z', '-I', '--no-color', ...(plainWord ? ['-w', '-F'] : ['-F'])];
  if (options.includeUntracked) args.push('--untracked');
  for (const word of words) args.push('-e', word);
  args.push('--');
  if (options.files) args.push(...options.files);
  else args.push('*.ts', '*.mts', '*.cts', '*.tsx', '*.js', '*.mjs', '*.cjs', '*.jsx', '*.go', '*.py', '*.rs');
  const answer = await context.git.run(args, { allowExitCodes: [1], ...(onStdout ? { onStdout } : {}) });
  return answer.stdout.split('\0').filter((file) => file !== '');
}

/** Files containing any of `texts` (fixed strings), limited to analysable files' extensions. */
async function filesWithFixed(context: RepoContext, texts: readonly string[], options: { files?: string[]; includeUntracked?: boolean }, index?: WordIndex): Promise<string[]> {
  if (index && !options.files && texts.length === fixedProbes.length && texts.every((text, position) => text === fixedProbes[position])) return index.withStars();
  const args = ['grep', '-l', '-z', '-I', '--no-color', '-F'];
  if (options.includeUntracked) args.push('--untracked');
  for (const text of texts) args.push('-e', text);
  args.push('--', ...(options.files ?? ['*.ts', '*.mts', '*.cts', '*.tsx', '*.js', '*.mjs', '*.cjs', '*.jsx', '*.py', '*.rs']));
  const answer = await context.git.run(args, { allowExitCodes: [1] });
  return answer.stdout.split('\0').filter((file) => file !== '');
}

/** `c` of `a::b.c` (the name after the last `::`, then after the last `.`). */
function lastSegment(name: string): string {
  const colons = name.lastIndexOf('::');
  const tail = colons < 0 ? name : name.slice(colons + 2);
  const dot = tail.lastIndexOf('.');
  return dot < 0 ? tail : tail.slice(dot + 1);
}

/**
 * Whole-word occurrences of `names` in a file too large to parse (kind 'other'; strings and
 * comments included — there is no syntax tree to tell them apart).
 */
function textScan(text: string, names: ReadonlySet<string>): RawRef[] {
  const result: RawRef[] = [];
  const escaped = [...names].map((name) => name.replace(/[$]/g, '\\$'));
  if (escaped.length === 0) return result;
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}_$])(?:${escaped.join('|')})(?![\\p{L}\\p{N}_$])`, 'gu');
  const lines = text.split(/\r?\n/);
  lines.forEach((lineText, index) => {
    for (const match of lineText.matchAll(pattern)) result.push([match[0], index + 1, match.index + 1, 'other']);
  });
  return result;
}

/**
 * Real references to `symbol`: identifier uses named `symbol` (never strings, comments, or longer
 * names), uses of local aliases bound by an import of it (`via` names the alias), re-exports under
 * another name followed to their importers, method calls `x.symbol()`. Definition sites are not
 * references. With `definedIn`, only files that can reach that definition: the file itself, its Go
 * package, files importing it (directly or through re-exports), and member calls anywhere when the
 * definition is a method. `files` limits where references are reported (the search for re-exports
 * still covers the repository). Sorted by file, line, column.
 */
/** Python: one module-level binding of a name (an import, a star import, a definition of the file's own). */
interface PythonBinding {
  line: number;
  indent: number;
  raw?: FileFacts['imports'][number];
  star?: true;
  /** In another branch of the same `if`/`try` statement as the binding before it. */
  alternativeToPrevious?: boolean;
}

/**
 * A module resolver for a few import statements without a listing of the tree (a first call on a tree makes none:
 * test/analysis-first-call.test.ts): each candidate file of a specifier is probed on the disk (`known` files first:
 * those read by this call), tsconfig `paths` read as the listing's resolver reads them. TS/JS and Python only; a
 * monorepo's other Python sub-projects are not searched (no file known: the statement is left as it is).
 */
function probingResolver(context: RepoContext, known: (file: string) => boolean): ModuleResolver {
  const answers = new Map<string, boolean>();
  class ProbedFiles extends Set<string> {
    override has(file: string): boolean {
      let answer = answers.get(file);
      if (answer === undefined) {
        answer = known(file) || (statSync(path.join(context.root, file), { throwIfNoEntry: false })?.isFile() ?? false);
        answers.set(file, answer);
      }
      return answer;
    }
  }
  let targets: ModuleTargets | undefined;
  const tsPaths = (from: string, specifier: string) => (targets ??= new ModuleTargets(context.root)).resolve(from, specifier);
  return new ModuleResolver({ files: new ProbedFiles(), goModules: [], tsPaths, root: context.root.split(path.sep).join('/') });
}

export async function findReferences(repoRoot: string, symbol: string, opts: FindReferencesOptions = {}): Promise<Reference[]> {
  const context = await repoContext(repoRoot);
  const stats: AnalysisStats = { parsed: 0, cached: 0 };
  // `files` limits where references are reported, not what is read: re-exports and barrels that
  // lead to a reported file may live anywhere.
  const searchOptions = { includeUntracked: opts.includeUntracked };
  const reportIn = opts.files ? new Set(opts.files.map((file) => file.replace(/^\.\//, ''))) : undefined;
  // Names under which the symbol is exported: itself plus re-export aliases, found iteratively.
  const exportedNames = new Set([symbol]);
  const loadedFiles = new Map<string, Loaded>();
  // (Rust with --defined-in: the grammar, so that a file a lookup reaches — a facade that does not name the symbol — is
  // parsed then; loaded while git searches)
  const rustGrammar = opts.definedIn?.endsWith('.rs') ? loadLanguageTools('rust').catch(() => undefined) : undefined;
  // The first call on a tree with nothing cached (no facts on disk, a repository this process has not searched):
  // every file the word search finds is read anyway (to parse it), so its blob id is hashed from those bytes
  // and the listing (`ls-files -s` + `diff-files` over the whole tree, ~half of such a call's git time on
  // 5,000 files, and competing with the search for the cores) is not made. The hits are tracked regular files
  // (git grep searches no untracked file, symbolic link or submodule); the analysable ones are kept, as the
  // listing would. With `definedIn` (module resolution needs every path) or untracked files: the listing.
  const firstOnTree = !opts.definedIn && !opts.includeUntracked && !memory.searched.has(context.commonDir) && !cacheHoldsFacts(cacheDir(context.commonDir));
  const prefetched = firstOnTree ? new Map<string, string>() : undefined;
  // The listing (blob ids) and the first word search run at once: both are git processes.
  const listed = firstOnTree ? undefined : listRepo(context, { includeUntracked: opts.includeUntracked });
  // A repository searched before in this process: the word index of its blobs answers for git grep.
  const index = listed && memory.searched.has(context.commonDir) ? await wordIndex(context, await listed, searchOptions) : undefined;
  // The first call on a tree starts on the files git grep names while it still searches (on the other core):
  // each piece of its output is read, hashed and parsed as it arrives, one piece after another.
  const aliases: string[] = [];
  let streaming: Promise<void> = Promise.resolve();
  const streamed = new Set<string>();
  const onHits = (files: string[]) => {
    for (const file of files) streamed.add(file);
    streaming = streaming.then(async () => {
      aliases.push(...(await load(files, [symbol])));
    });
    // (awaited below; a failure meanwhile is not an unhandled rejection)
    streaming.catch(() => undefined);
  };
  let unfinished = '';
  const streamHits = firstOnTree
    ? (chunk: string) => {
        unfinished += chunk;
        const cut = unfinished.lastIndexOf('\0');
        if (cut < 0) return;
        const files = unfinished.slice(0, cut).split('\0').filter((file) => file !== '');
        unfinished = unfinished.slice(cut + 1);
        onHits(files);
      }
    : undefined;
  const searching = Promise.all([listed, filesWithWords(context, [symbol], searchOptions, index, streamHits)]);
  const byPath = new Map<string, RepoFile>();
  /** Directories (of this call's hits) that are or lie beyond a symbolic link: git calls the files there deleted. */
  const linkedDirs = new Map<string, boolean>();
  const beyondLink = (file: string): boolean => {
    const dir = path.posix.dirname(file);
    if (dir === '.') return false;
    let answer = linkedDirs.get(dir);
    if (answer === undefined) {
      answer = beyondLink(dir) || (lstatSync(path.join(context.root, dir), { throwIfNoEntry: false })?.isSymbolicLink() ?? false);
      linkedDirs.set(dir, answer);
    }
    return answer;
  };
  /** The entries of found files: the listing's, or (first call on the tree) made from the files' bytes. */
  const entriesOf = (files: readonly string[]): RepoFile[] => {
    if (!prefetched) return files.flatMap((file) => byPath.get(file) ?? []);
    const entries: RepoFile[] = [];
    for (const file of files) {
      const known = byPath.get(file);
      if (known) {
        entries.push(known);
        continue;
      }
      // (git grep reads through a linked directory; the listing, as git status, calls those files deleted)
      if (!analysable(file) || beyondLink(file)) continue;
      const bytes = readRegularFile(path.join(context.root, file));
      if (bytes === undefined) continue; // deleted since the search, or no longer a file
      let text: string;
      try {
        // Past V8's longest string (~512 MiB) this throws: the file is passed over, as the listing path's read does (X42-13).
        text = bytes.toString('utf8');
      } catch {
        continue;
      }
      const entry: RepoFile = { file, lang: languageOf(file)!, blob: blobId(bytes), fromWorktree: true };
      prefetched.set(file, text);
      byPath.set(file, entry);
      entries.push(entry);
    }
    return entries;
  };
  /**
   * Loads the facts of the `found` files not loaded yet; returns the aliases they re-export the symbol under
   * (new ones). `searched`: the names their search was for — a file naming them only in comments and strings
   * is not parsed (identifiers only: a module's base name is searched for its import strings).
   */
  /** The names `item` re-exports one of the exported names under that were not known yet (now known). */
  const reexportedAliases = (item: Loaded): string[] => {
    const aliases: string[] = [];
    for (const raw of item.facts.imports) {
      // Python: every imported name can be imported again from the importing module (`from .core import f as g`
      // in a package's __init__.py makes `from pkg import g` a use of f).
      if (!raw.reexport && item.entry.lang !== 'python') continue;
      for (const name of raw.names) {
        // (`default`: a default export is bound by its importers under their own names, followed below through module
        // resolution — by name, every `import x from …` of any module's default was taken for it: outside attack X50-02)
        if (exportedNames.has(name.imported) && !exportedNames.has(name.local) && name.local !== '*' && name.local !== 'default') {
          exportedNames.add(name.local);
          aliases.push(name.local);
        }
      }
    }
    // Aliases by assignment of the module's own definition (`export const bar = foo`, Python `bar = foo`): X66-37
    for (const alias of item.facts.aliases ?? []) {
      if (!alias.exported || !exportedNames.has(alias.of) || exportedNames.has(alias.local) || !ownsTopLevel(item, alias.of)) continue;
      exportedNames.add(alias.local);
      aliases.push(alias.local);
    }
    return aliases;
  };
  /** Whether the file declares `name` at its top level itself (not by an import). */
  const ownsTopLevel = (item: Loaded, name: string) => item.facts.symbols.some((def) => def.name === name && def.container === undefined && !item.facts.imports.some((raw) => raw.line === def.line && !raw.reexport));
  /** Per loaded file, the words its references were extracted for (besides its import aliases). */
  const covered = new Map<string, ReadonlySet<string>>();
  const load = async (found: readonly string[], searched: readonly string[] | undefined, words: readonly string[] = [symbol]): Promise<string[]> => {
    const aliases: string[] = [];
    // Files loaded before for other names may re-export a name found since (`export { zA as zB }` read before the
    // file that makes zA an alias: outside round X44-01): their facts are looked at again, not read again.
    for (const file of found) {
      const item = loadedFiles.get(file);
      if (item) aliases.push(...reexportedAliases(item));
    }
    // A file loaded before for other words is loaded again when it holds one of these (an exported alias used as
    // `ns.Alias` through a namespace import names no import alias: its references were not extracted).
    const stale = (file: string) => loadedFiles.has(file) && words.some((word) => !covered.get(file)!.has(word));
    const entries = entriesOf(found.filter((file) => !loadedFiles.has(file) || stale(file)));
    if (entries.length === 0) return aliases;
    // Only the references findReferences reads below: the symbol's (and exported aliases'), the file's import aliases', those in import statements.
    const refsFor = new Set([symbol, ...words]);
    for (const entry of entries) for (const word of covered.get(entry.file) ?? []) refsFor.add(word);
    const loaded = await loadFacts(context, entries, stats, searched, { refsFor: [...refsFor] }, prefetched);
    for (const item of loaded) {
      loadedFiles.set(item.entry.file, item);
      covered.set(item.entry.file, refsFor);
    }
    // Two passes: an alias made by a later file of this batch reaches the re-exports of an earlier one.
    for (let grew = true; grew; ) {
      const before = aliases.length;
      for (const item of loaded) aliases.push(...reexportedAliases(item));
      grew = aliases.length > before;
    }
    return aliases;
  };
  /** Loads the files with these words, following aliased re-exports to their words in turn. */
  const follow = async (words: string[], identifiers = true): Promise<void> => {
    for (let pending = words; pending.length > 0; ) {
      const found = await filesWithWords(context, pending, searchOptions, index);
      pending = await load(found, identifiers ? pending : undefined, identifiers ? pending : undefined);
    }
  };
  // The first search: streamed (first call on the tree: pieces loaded one after another as git grep writes them,
  // `onHits` above), or its whole answer, with the listing.
  let listing: RepoListing | undefined;
  try {
    const [listedFiles, firstHits] = await searching;
    listing = listedFiles;
    for (const entry of listing?.files ?? []) byPath.set(entry.file, entry);
    // (whatever the stream did not bring: all of it where nothing was streamed)
    await streaming;
    aliases.push(...(await load(firstHits.filter((file) => !streamed.has(file)), [symbol])));
  } finally {
    // Every piece loaded (or failed) before this call answers or fails: nothing runs after it.
    await streaming.catch(() => undefined);
  }
  if (currentScope().memory) memory.searched.add(context.commonDir);
  await follow(aliases);
  await rustGrammar;
  const byFile = (a: Loaded, b: Loaded) => (a.entry.file < b.entry.file ? -1 : 1);
  let loaded = [...loadedFiles.values()].sort(byFile);

  let reachable: ((item: Loaded) => boolean) | undefined;
  // Per file: local names bound to the definition's default export by that file's imports.
  const defaultAliases = new Map<string, string[]>();
  // Files whose imports or re-exports name `default` of a module whose default is the definition (`default` there is it).
  const defaultImporters = new Set<string>();
  // Per file: its namespace imports of a module whose default is the definition (`import * as ns`: `ns.default` is it — X53-10).
  const defaultNamespaces = new Map<string, Set<string>>();
  let memberAnywhere = false;
  // With definedIn: the definitions of its file.
  let definerSymbols: FileFacts['symbols'] = [];
  const definedInFile = opts.definedIn?.replace(/^\.\//, '');
  // (Rust: the directory whose files have the definition's `#[macro_use]` macros in textual scope)
  const macroUseScope: string[] = [];
  const macroExcluded: string[] = [];
  // (Rust: modules of the scope redefining the macro — their children declared after the redefinition are theirs)
  const macroShadows: Array<{ file: string; children: string; line: number }> = [];
  // (Rust: the crate of a `#[macro_export]` definition, by its Cargo.toml name)
  let exportedMacroCrate: string | undefined;
  // Go: the definition is (or includes) a struct field — a struct literal's key `S{Name: …}` uses it, nothing else's.
  let fieldDefinition = false;
  // Go: the definition is a type — an embedded field is named by it.
  let typeDefinition = false;
  // Every definition of the name is a member (a method, a field): an unqualified Go use is never it.
  let memberOnly = false;
  // Go, per file: how a use can name the definition — unqualified (the defining package itself, or a dot import of it)
  // and/or `q.Name` with q one of the names its imports of the defining package bind (outside attack X47).
  let goNaming: Map<string, { qualifiers: Set<string>; unqualified: boolean }> | undefined;
  // Go: the definition is a package-level function, type, variable or constant (`q.Name` then needs q bound to its package).
  let goTopLevel = false;
  // Rust: whether a path (`crate::defs`, `super::defs`) names a module that is, or re-exports from, the definition's.
  let rustPathReaches: ((file: string, path: string) => boolean) | undefined;
  let rustPathEnd: ((file: string, raw: FileFacts['imports'][number]) => { file: string; rest: string[] } | undefined) | undefined;
  let rustResolve: ((file: string, raw: FileFacts['imports'][number]) => string[]) | undefined;
  // (Rust: the root file of a file's crate, and whether that crate is an integration test's)
  let rustCrateOf: ((file: string) => string | undefined) | undefined;
  let rustTestTarget: ((file: string) => boolean) | undefined;
  let rustModuleBuild: ((file: string) => boolean | undefined) | undefined;
  // (Rust: whether a module file is in no crate's module tree — cargo never compiles it: X65-58)
  let rustOrphan: ((file: string) => boolean) | undefined;
  // (Rust: the other crates a file is a module of, and an answer asked in one of them — X65-23)
  let rustOtherCrates: ((file: string) => string[]) | undefined;
  let rustInCrate: (<T>(root: string, run: () => T) => T) | undefined;
  // (Rust: an answer asked in one build — the module file of a cfg'd `mod` pair —, and how many such files were met
  // outside one: X65-61)
  let rustInBuild: (<T>(build: boolean | undefined, run: () => T) => T) | undefined;
  let rustBuildChoices: (() => number) | undefined;
  // Python, a module-level definition: an attribute `x.name` names it only when `x` is bound by an import.
  let pythonModuleLevel = false;
  // Python, with definedIn: whether the name an import binds (`import pkg.defs as d`, `from pkg import defs`) is a module that
  // is a source of the definition — `from pkg import other as m` binds pkg.other when that is a module, whatever pkg re-exports.
  let pythonRootReaches: (item: Loaded, raw: FileFacts['imports'][number], local: string) => boolean = () => true;
  // Python, with definedIn: `a.b.foo` where `a` is bound by an unaliased `import a.b` (it binds the package `a`, every
  // `import a.x` the same name): the chain names the module — whether it is a source (undefined: no such import, or a
  // chain naming no file of the repository). Outside round X66-51.
  let pythonChainReaches: (item: Loaded, before: string) => boolean | undefined = () => undefined;
  // Whether an import of a file can bind the definition's exports (with definedIn: it resolves to a source of them).
  let importsSource: (item: Loaded, raw: FileFacts['imports'][number]) => boolean = () => true;
  // TS/JS/Python, with definedIn: a module that is no source of the definition and declares the name itself (`const greet = …`
  // beside `import g from './greet'`; Python `def db():` beside `from app.db import connect`): its unqualified uses are
  // of its own (X53-10, outside round X57-05).
  let declaresOwn: (item: Loaded) => boolean = () => false;
  // Python, with definedIn: whether the bindings of the symbol a use at a line of a file sees include the definition
  // (undefined: the file binds no such name at module level).
  let pythonSeesDefinition: (item: Loaded, line: number) => boolean | undefined = () => undefined;
  // (with definedIn: whether a file is a source — the definition's, or one re-exporting it)
  let isSource: (file: string) => boolean = () => false;
  // Whether an import of a file resolves to a file of the repository that is no source of the definition.
  let importsElsewhere: (item: Loaded, raw: FileFacts['imports'][number]) => boolean = () => false;
  // TS/JS default export: importers bind it under any name (`import x from './m'`, `export { default as x } from './m'`).
  // The files that name the module are read, and an import of `default` that resolves to the definition binds its local name.
  // The definition's own default export, and every module that re-exports the symbol as its default (`export { Foo as
  // default } from './m'`, `import { Foo } from './m'; export default Foo;` — outside attack X47), found as they load.
  const defaultModules = new Set<string>();
  const followDefaults = async (resolver: ModuleResolver): Promise<void> => {
    const reexportsAsDefault = (item: Loaded) => item.facts.imports.some((raw) => raw.reexport && raw.names.some((name) => name.local === 'default' && exportedNames.has(lastSegment(name.imported))));
    const followed = new Set<string>();
    for (;;) {
      for (const item of loadedFiles.values()) if (reexportsAsDefault(item)) defaultModules.add(item.entry.file);
      const next = [...defaultModules].filter((file) => !followed.has(file));
      if (next.length === 0) break;
      for (const file of next) {
        followed.add(file);
        const base = path.posix.basename(file).replace(/\.[^.]*$/, '');
        await follow([base === 'index' ? path.posix.basename(path.posix.dirname(file)) : base], false);
      }
      const carried: string[] = [];
      const namespaced: string[] = [];
      for (const item of loadedFiles.values()) {
        for (const raw of item.facts.imports) {
          const namespace = raw.reexport ? undefined : raw.names.find((name) => name.imported === '*' && name.local !== '*');
          if (namespace && resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => defaultModules.has(file))) {
            const locals = defaultNamespaces.get(item.entry.file) ?? new Set<string>();
            if (locals.size === 0) namespaced.push(item.entry.file);
            defaultNamespaces.set(item.entry.file, locals.add(namespace.local));
          }
          const importsDefault = raw.names.some((name) => name.imported === 'default');
          if (!importsDefault || !resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => defaultModules.has(file))) continue;
          defaultImporters.add(item.entry.file);
          for (const name of raw.names) {
            // `import x from './m'; export default x;`: this module's default is the definition too
            if (name.imported === 'default' && name.local === 'default' && raw.reexport) defaultModules.add(item.entry.file);
            if (name.imported !== 'default' || name.local === '*' || name.local === 'default') continue;
            if (raw.reexport) {
              if (!exportedNames.has(name.local)) carried.push(name.local);
              exportedNames.add(name.local);
            } else {
              const locals = defaultAliases.get(item.entry.file) ?? [];
              if (!locals.includes(name.local)) defaultAliases.set(item.entry.file, [...locals, name.local]);
            }
          }
        }
      }
      // (their `default` members were not extracted: read again for that word)
      if (namespaced.length > 0) await load(namespaced, undefined, [symbol, 'default']);
      if (carried.length > 0) await follow(carried);
    }
  };
  // Without definedIn: whether an import or re-export statement's `default` is a default module's (the symbol's), not
  // any module's default (the plain answer found every `import x from` of a file that also named the symbol, and
  // none of a default-exported definition's importers — outside attack X50-02).
  let defaultOf: ((item: Loaded, raw: FileFacts['imports'][number]) => boolean) | undefined;
  if (opts.definedIn !== undefined) {
    const resolver = await resolverFor(context, listing!.allPaths);
    const definedIn = opts.definedIn.replace(/^\.\//, '');
    const definerEntry = byPath.get(definedIn);
    const definer = loadedFiles.get(definedIn) ?? (definerEntry ? (await loadFacts(context, [definerEntry], stats))[0] : undefined);
    definerSymbols = definer?.facts.symbols ?? [];
    memberAnywhere = definer?.facts.symbols.some((def) => def.name === symbol && (def.kind === 'method' || def.kind === 'field')) ?? false;
    fieldDefinition = definer?.facts.symbols.some((def) => def.name === symbol && def.kind === 'field') ?? false;
    typeDefinition = definer?.facts.symbols.some((def) => def.name === symbol && (def.kind === 'struct' || def.kind === 'interface' || def.kind === 'type')) ?? false;
    memberOnly = memberAnywhere && !(definer?.facts.symbols.some((def) => def.name === symbol && def.container === undefined) ?? true);
    pythonModuleLevel = definer?.entry.lang === 'python' && !memberAnywhere && definer.facts.symbols.some((def) => def.name === symbol && def.container === undefined);
    if (definer?.facts.symbols.some((def) => def.name === symbol && def.defaultExport)) defaultModules.add(definedIn);
    await followDefaults(resolver);
    // (`import { default as h } from './barrel'`: barrel's own default, not the definition because barrel re-exports it under a name — X52-05)
    defaultOf = (item, raw) => resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => defaultModules.has(file));
    loaded = [...loadedFiles.values()].sort(byFile);
    const sources = new Set([definedIn]);
    isSource = (file) => sources.has(file);
    // Rust: a `#[macro_export]` macro is an item of its crate's root (`use shop::items;`), wherever it is written (X54-11)
    if (definer?.entry.lang === 'rust' && definerSymbols.some((def) => def.name === symbol && def.kind === 'macro')) {
      const text = readTexts(context, [definer.entry]).get(definedIn) ?? '';
      if (new RegExp(`#\\[\\s*macro_export\\s*\\][\\s\\S]{0,400}?macro_rules!\\s*${symbol}\\b`).test(text)) {
        const paths = new Set(listing!.allPaths);
        for (let dir = path.posix.dirname(definedIn); ; dir = path.posix.dirname(dir)) {
          const at = (file: string) => (dir === '.' ? file : `${dir}/${file}`);
          if (paths.has(at('Cargo.toml'))) {
            for (const root of [at('src/lib.rs'), at('src/main.rs')]) if (paths.has(root)) sources.add(root);
            // (its crate's name, for `#[macro_use] extern crate shelfcore;` in other crates: X58-07)
            const manifest = byPath.get(at('Cargo.toml')) ?? { file: at('Cargo.toml'), lang: 'rust' as Lang, blob: '', fromWorktree: true };
            const cargo = readTexts(context, [manifest]).get(at('Cargo.toml')) ?? '';
            const crate = /^\s*\[package\][^[]*?^\s*name\s*=\s*"([^"]+)"/m.exec(cargo)?.[1];
            if (crate !== undefined) exportedMacroCrate = crate.replace(/-/g, '_');
            break;
          }
          if (dir === '.') break;
        }
      }
    }
    // Rust, a `macro_rules!` macro: its textual scope (the Reference, "Macros by example → textual scope"), where a bare
    // `items!` needs no import — the rest of its module and the child modules declared after it (outside round X58-05:
    // a macro at the top of lib.rs, used in its modules), and with `#[macro_use] mod macros;` the declaring module's rest
    // and children too, up a chain of such declarations (X57-12, X58-06). By file and directory, not by declaration
    // order (a module declared before the macro or the `mod` line counts too).
    if (definer?.entry.lang === 'rust' && definerSymbols.some((def) => def.name === symbol && def.kind === 'macro')) {
      const crateSrc = (() => {
        for (let up = path.posix.dirname(definedIn); ; up = path.posix.dirname(up)) {
          const at = (file: string) => (up === '.' ? file : `${up}/${file}`);
          if (byPath.has(at('src/lib.rs')) || byPath.has(at('src/main.rs'))) return at('src');
          if (up === '.' || up === '/') return undefined;
        }
      })();
      // (a module's own file, and the directory of its child modules)
      const moduleScope = (file: string): string[] => (/(?:^|\/)(?:lib|main|mod)\.rs$/.test(file) ? [`${path.posix.dirname(file)}/`] : [file, `${file.slice(0, -'.rs'.length)}/`]);
      macroUseScope.push(...moduleScope(definedIn));
      // (`src/lib.rs` and `src/main.rs` are two crates in one directory: the other root and the modules it declares are
      // out of the macro's textual scope — outside round X59-05)
      const roots = crateSrc === undefined ? [] : [`${crateSrc}/lib.rs`, `${crateSrc}/main.rs`].filter((file) => byPath.has(file));
      if (roots.length === 2) {
        const rootTexts = readTexts(context, roots.map((file) => byPath.get(file)!));
        const declared = (root: string) => [...(rootTexts.get(root) ?? '').matchAll(/^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;/gm)].map((match) => match[1]!);
        const first = path.posix.relative(crateSrc!, definedIn).split('/')[0]!.replace(/\.rs$/, '');
        const own = roots.includes(definedIn) ? definedIn : declared(`${crateSrc!}/main.rs`).includes(first) ? `${crateSrc!}/main.rs` : `${crateSrc!}/lib.rs`;
        const other = roots.find((root) => root !== own)!;
        macroExcluded.push(other, ...declared(other).flatMap((name) => [`${crateSrc!}/${name}.rs`, `${crateSrc!}/${name}/`]));
      }
      // (so is each `src/bin/*.rs`, a crate of its own: a macro reaches it only by an import — `#[macro_use(name)] extern
      // crate`, `#[macro_use] extern crate`, `use` of a `#[macro_export]` macro — X59-07)
      if (crateSrc !== undefined && !definedIn.startsWith(`${crateSrc}/bin/`)) macroExcluded.push(`${crateSrc}/bin/`);
      for (let current = definedIn; crateSrc !== undefined && !/^(?:lib|main)\.rs$/.test(path.posix.relative(crateSrc, current)); ) {
        let dir = path.posix.dirname(current);
        let name = path.posix.basename(current, '.rs');
        if (name === 'mod') [name, dir] = [path.posix.basename(dir), path.posix.dirname(dir)];
        const parents = dir === crateSrc ? [`${dir}/lib.rs`, `${dir}/main.rs`] : [`${dir}.rs`, `${dir}/mod.rs`];
        const declares = new RegExp(`#\\[\\s*macro_use\\s*\\]\\s*(?:#\\[[^\\]]*\\]\\s*)*(?:pub(?:\\s*\\([^)]*\\))?\\s+)?mod\\s+${name}\\s*;`);
        const declaring = [...readTexts(context, parents.flatMap((file) => byPath.get(file) ?? [])).entries()].find(([, text]) => declares.test(text))?.[0];
        if (declaring === undefined) break;
        macroUseScope.push(...moduleScope(declaring));
        current = declaring;
      }
      // (a module of the scope with a `macro_rules!` of that name of its own shadows the definition in its child modules
      // declared after it — `macro_rules! trace` in net/mod.rs before `mod conn;`: conn.rs's `trace!` is net's; outside
      // round X59-06. Not a module whose subtree holds the definition.)
      for (const item of loadedFiles.values()) {
        const file = item.entry.file;
        if (item.entry.lang !== 'rust' || file === definedIn) continue;
        const lines = item.facts.symbols.filter((def) => def.name === symbol && def.kind === 'macro').map((def) => def.line);
        const children = moduleScope(file).find((scope) => scope.endsWith('/'))!;
        if (lines.length === 0 || definedIn.startsWith(children)) continue;
        macroShadows.push({ file, children, line: Math.min(...lines) });
      }
    }
    // Barrels re-export without naming the symbol (`export * from`, `pub use x::*`, Python
    // `from x import *`, CommonJS `module.exports = require('./m')`): the word search misses them, so files with a star re-export are read too.
    const barrels = (await filesWithFixed(context, [...fixedProbes], searchOptions, index)).filter((file) => !loadedFiles.has(file)).flatMap((file) => byPath.get(file) ?? []);
    const candidates = [...loaded, ...(await loadFacts(context, barrels, stats, undefined, { imports: true }))];
    // Files re-exporting from a source become sources too (in Python every imported name can be imported again from there).
    // (not a function's own import: it binds no name of the module)
    // (Python: an import of the symbol's name or a star import — `from .defs import other` in an __init__.py does not make
    // `from pkg import Foo` reach defs' Foo: outside round X51-04)
    // An import of a source module itself (`from . import defs`, then `Engine = defs.Engine`) in a file that names the
    // symbol re-exports it too (X52-13).
    // (only a module-level `Engine = defs.Engine`, `defs` that import's name: not `Engine = other.Engine`, a class
    // Engine of its own, an assignment inside a function — outside round X53-05)
    // (asked again on every pass of the fixed point below: each file's answer once)
    const assignments = new Map<string, boolean>();
    const assignsFrom = (item: Loaded, local: string): boolean => {
      const key = `${item.entry.file}\0${local}`;
      let answer = assignments.get(key);
      if (answer === undefined) assignments.set(key, (answer = assignsFromOnce(item, local)));
      return answer;
    };
    const assignsFromOnce = (item: Loaded, local: string): boolean => {
      const assigned = item.facts.symbols.filter((def) => def.name === symbol && def.container === undefined && (def.kind === 'variable' || def.kind === 'constant'));
      if (assigned.length === 0 || item.facts.symbols.some((def) => def.name === symbol && (def.kind === 'class' || def.kind === 'function'))) return false;
      const lines = (readTexts(context, [item.entry]).get(item.entry.file) ?? '').split(/\r?\n/);
      const pattern = new RegExp(`^${symbol}\\s*(?::[^=]*)?=\\s*${local}\\s*\\.\\s*${symbol}\\b`);
      return assigned.some((def) => pattern.test(lines[def.line - 1] ?? ''));
    };
    const bindsSourceModule = (item: Loaded, raw: FileFacts['imports'][number]) =>
      raw.names.some((name) => {
        if (name.local === '*' || !assignsFrom(item, name.local)) return false;
        if (name.imported === '*') return resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => sources.has(file));
        const submodule = { ...raw, module: raw.module === '' ? name.imported : `${raw.module}.${name.imported}`, names: [{ imported: '*', local: name.local }] };
        return resolver.resolve(item.entry.file, item.entry.lang, submodule).some((file) => sources.has(file));
      });
    // TS/JS: a module's own exports of a name shadow what its `export * from` brings under that name (ECMAScript's
    // ResolveExport: local and explicitly re-exported names first) — `export * from './a'; export { foo } from './b'` exports
    // b's foo (outside round X66-13)
    // (the names it can bring: those of the exported names its sources export by name — the symbol where they export it
    // by a star of their own)
    const exportsName = (item: Loaded, name: string) =>
      item.facts.imports.some((other) => other.reexport && other.names.some((entry) => entry.local === name)) ||
      item.facts.symbols.some((def) => def.name === name && def.exported && def.container === undefined);
    const starShadowed = (item: Loaded, raw: FileFacts['imports'][number]) => {
      if (item.entry.lang !== 'typescript' && item.entry.lang !== 'tsx' && item.entry.lang !== 'javascript') return false;
      if (!raw.names.every((name) => name.imported === '*' && name.local === '*')) return false;
      const targets = resolver.resolve(item.entry.file, item.entry.lang, raw).flatMap((file) => (sources.has(file) ? (loadedFiles.get(file) ?? []) : []));
      const brought = [...exportedNames].filter((name) => targets.some((target) => exportsName(target, name)));
      return (brought.length > 0 ? brought : [symbol]).every((name) => exportsName(item, name));
    };
    // Python: the module-level bindings of a name in a file — its imports (a star import of a source binds the symbol) and
    // its own definitions —, and which of them a use at a line sees: the last one before it, with the ones it is an
    // alternative to (`if …: from fast import load` / `else: from slow import load`, `try:` / `except ImportError:`).
    // A later import or definition shadows an earlier one: `from .a import foo` then `from .b import foo` binds b's foo
    // (outside round X66-14, X66-08).
    const pythonBindingMemo = new Map<string, PythonBinding[]>();
    const pythonBindings = (item: Loaded, name: string): PythonBinding[] => {
      const key = `${item.entry.file}\0${name}`;
      let bindings = pythonBindingMemo.get(key);
      if (bindings !== undefined) return bindings;
      bindings = [];
      for (const raw of item.facts.imports) {
        if (raw.reexport || raw.scope !== undefined) continue;
        if (raw.names.some((entry) => entry.local === name)) bindings.push({ line: raw.line, indent: 0, raw });
        else if (name === symbol && raw.names.some((entry) => entry.local === '*')) bindings.push({ line: raw.line, indent: 0, raw, star: true });
      }
      const importLines = new Set(item.facts.imports.map((raw) => raw.line));
      const defs = item.facts.symbols.filter((def) => def.name === name && def.container === undefined && !importLines.has(def.line));
      const lines = bindings.length + defs.length > 1 ? (readTexts(context, [item.entry]).get(item.entry.file) ?? '').split(/\r?\n/) : [];
      // (not `foo = wrap(foo)`: a binding made from the one before)
      const rebinding = new RegExp(`=[^=].*(?<![\\p{L}\\p{N}_.])${name}(?![\\p{L}\\p{N}_])`, 'u');
      for (const def of defs) if (!((def.kind === 'variable' || def.kind === 'constant') && rebinding.test(lines[def.line - 1] ?? ''))) bindings.push({ line: def.line, indent: 0 });
      if (bindings.length > 1) {
        const indentOf = (line: number) => /^[ \t]*/.exec(lines[line - 1] ?? '')![0].length;
        for (const binding of bindings) binding.indent = indentOf(binding.line);
        bindings.sort((a, b) => a.line - b.line);
        // (whether two bindings are in different branches of one `if`/`try` statement: a branch keyword less indented than both
        // between them, and no other statement as little indented before it)
        const alternatives = (earlier: PythonBinding, later: PythonBinding): boolean => {
          if (earlier.indent === 0 || later.indent === 0) return false;
          const limit = Math.min(earlier.indent, later.indent);
          for (let line = earlier.line + 1; line < later.line; line += 1) {
            const text = lines[line - 1] ?? '';
            if (/^\s*(?:#.*)?$/.test(text)) continue;
            const indent = indentOf(line);
            if (indent >= limit) continue;
            if (/^\s*(?:else|elif\b[^:]*|except\b[^:]*)\s*:/.test(text)) return true;
            return false;
          }
          return false;
        };
        for (let index = 1; index < bindings.length; index += 1) bindings[index]!.alternativeToPrevious = alternatives(bindings[index - 1]!, bindings[index]!);
      }
      pythonBindingMemo.set(key, bindings);
      return bindings;
    };
    /** The bindings of `name` a use at `line` sees (Infinity: the module's, at its end); none when the file binds no such name. */
    const pythonSeen = (item: Loaded, name: string, line: number): PythonBinding[] => {
      // (a star import of no source may not bind the name at all)
      const bindings = pythonBindings(item, name).filter((binding) => !binding.star || pythonBindsDefinition(item, binding));
      let last = bindings.findLastIndex((binding) => binding.line < line);
      // (a use before every binding — a function body run later —: the module's final ones)
      if (last < 0) last = bindings.length - 1;
      const seen: PythonBinding[] = [];
      for (let index = last; index >= 0; index -= 1) {
        seen.push(bindings[index]!);
        if (!bindings[index]!.alternativeToPrevious) break;
      }
      return seen;
    };
    // (whether the line of a use is indented: inside a function or class body, or a block)
    const pythonLineIndented = new Map<string, boolean[]>();
    const pythonIndented = (item: Loaded, line: number): boolean => {
      let indented = pythonLineIndented.get(item.entry.file);
      if (indented === undefined) {
        indented = (readTexts(context, [item.entry]).get(item.entry.file) ?? '').split(/\r?\n/).map((text) => /^[ \t]+\S/.test(text));
        pythonLineIndented.set(item.entry.file, indented);
      }
      return indented[line - 1] ?? false;
    };
    // (whether a binding is of the definition: an import resolving to a source, the definition's own file's definition)
    const pythonBindsDefinition = (item: Loaded, binding: PythonBinding): boolean =>
      // (the definition's own file assigning the name, `bar = foo`: the definition itself — X66-37)
      binding.raw === undefined || (binding.raw.assigned && item.entry.file === definedIn)
        ? item.entry.file === definedIn
        : resolver.resolve(item.entry.file, item.entry.lang, binding.raw).some((file) => sources.has(file) && (!binding.star || starBrings(file)));
    // Python: whether `from m import *` of a source brings the symbol — m's `__all__` lists it, or m has none and the name
    // is not `_`-private (X67-11: `from core import *` with `__all__ = ["Engine"]` binds no `compute`). An `__all__` read
    // from the text: a list or tuple of string literals; anything else (`__all__ += …`, built by code) brings it.
    const starMemo = new Map<string, boolean>();
    const starBrings = (file: string): boolean => {
      let answer = starMemo.get(file);
      if (answer !== undefined) return answer;
      const entry = loadedFiles.get(file)?.entry ?? byPath.get(file);
      const text = entry ? (readTexts(context, [entry]).get(file) ?? '') : '';
      const declarations = [...text.matchAll(/^__all__\s*(?::[^=\n]*)?(\+?=)\s*([[(])([^\])]*)[\])]/gm)];
      const dynamic = /^__all__\s*(?:\+=|\.(?:append|extend)\b)/m.test(text) || (/^__all__\b/m.test(text) && declarations.length === 0);
      if (dynamic || declarations.length !== 1) answer = dynamic || declarations.length > 1 ? true : !symbol.startsWith('_');
      else answer = [...declarations[0]![3]!.matchAll(/(['"])([^'"]*)\1/g)].some((match) => match[2] === symbol);
      starMemo.set(file, answer);
      return answer;
    };
    // Whether the module's own binding of `name` at its end can be the one `raw` makes (then its importers get it).
    const pythonFinal = (item: Loaded, raw: FileFacts['imports'][number], name: string): boolean => {
      const seen = pythonSeen(item, name, Infinity);
      return seen.length === 0 || seen.some((binding) => binding.raw === raw || (binding.raw !== undefined && binding.star === true && pythonBindsDefinition(item, binding)));
    };
    const reexporting = (item: Loaded, raw: FileFacts['imports'][number]) =>
      (raw.reexport && !starShadowed(item, raw)) ||
      (item.entry.lang === 'python' &&
        raw.scope === undefined &&
        (raw.names.some(
          (name) =>
            (name.imported === '*' || exportedNames.has(lastSegment(name.imported))) &&
            pythonFinal(item, raw, name.local === '*' ? symbol : name.local) &&
            // (`x = defs.Engine` in a module with a class Engine of its own: its importers' Engine is that class — X53-05;
            // its x is defs' Engine, followed by name — X67-03)
            !(raw.assigned && ownsTopLevel(item, lastSegment(name.imported))),
        ) ||
          bindsSourceModule(item, raw)));
    for (let changed = true; changed; ) {
      changed = false;
      for (const item of candidates) {
        if (sources.has(item.entry.file)) continue;
        const reexports = item.facts.imports.some((raw) => reexporting(item, raw) && resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => sources.has(file)));
        if (reexports) {
          sources.add(item.entry.file);
          changed = true;
        }
      }
    }
    const goDir = definedIn.endsWith('.go') ? path.posix.dirname(definedIn) : undefined;
    // A Go file of the definer's directory is in its package unless its `package` clause says otherwise
    // (an external test package `x_test`, a `//go:build ignore` tool in `package main`).
    const goPackage = definer?.facts.package;
    const samePackage = (item: Loaded): boolean =>
      goDir !== undefined && item.entry.lang === 'go' && path.posix.dirname(item.entry.file) === goDir && (goPackage === undefined || item.facts.package === undefined || item.facts.package === goPackage);
    if (goDir !== undefined) {
      // (not a type: `w.Foo` may be the field a struct embedding `p.Foo` promotes — outside attack X49-03)
      goTopLevel = !memberAnywhere && (definer?.facts.symbols.some((def) => def.name === symbol && def.container === undefined && (def.kind === 'function' || def.kind === 'variable' || def.kind === 'constant')) ?? false);
      goNaming = new Map();
      for (const item of loaded) {
        if (item.entry.lang !== 'go') continue;
        const naming = { qualifiers: new Set<string>(), unqualified: samePackage(item) };
        for (const raw of item.facts.imports) {
          if (!resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => path.posix.dirname(file) === goDir)) continue;
          for (const name of raw.names) {
            if (name.local === '.') naming.unqualified = true;
            // An import without an alias binds the package's own name (its `package` clause), which the path's need
            // not be (`…/internal/util` holding `package utility`, `…/m/v2` holding `package m` — X49-01/05), and
            // only that (`strutil` beside `…/go-strutil` holding `package stringutil` is another name — X52-08); an
            // aliased import binds its alias only (`u "…/go-utils"` — X52-06)
            else if (name.local !== '_') naming.qualifiers.add(goPackage !== undefined && name.local === goAssumedName(raw.module) ? goPackage : name.local);
          }
        }
        goNaming.set(item.entry.file, naming);
      }
    }
    // (asked per reference once the sources are known: each file's bindings answered once)
    const seesMemo = new Map<PythonBinding, boolean>();
    pythonSeesDefinition = (item, line) => {
      // (a file that also binds the name in a function or class body — a local import, `global` — is left to the
      // scope-aware checks: these bindings are the module's only)
      if (item.facts.imports.some((raw) => raw.scope !== undefined && raw.names.some((entry) => entry.local === symbol))) return undefined;
      // (an indented use — a function body, run once the module is loaded; `global x` — sees the module's final bindings:
      // only a use at the top level sees the last binding before it)
      const seen = pythonSeen(item, symbol, pythonIndented(item, line) ? Infinity : line);
      // (bound by nothing but star imports of sources whose `__all__` or `_` leaves the name out: not the definition — X67-11)
      if (seen.length === 0) {
        const stars = pythonBindings(item, symbol).filter((binding) => binding.star);
        const ofSources = stars.filter((binding) => resolver.resolve(item.entry.file, item.entry.lang, binding.raw!).some((file) => sources.has(file)));
        return ofSources.length > 0 && ofSources.length === stars.length ? false : undefined;
      }
      let answer = seesMemo.get(seen[0]!);
      if (answer === undefined) seesMemo.set(seen[0]!, (answer = seen.some((binding) => pythonBindsDefinition(item, binding))));
      return answer;
    };
    // (TS: a bare specifier names an ambient module the definition's file declares, `declare module 'shop' { … }`: X66-41)
    const ambientModules = new Set((definer?.entry.lang === 'typescript' || definer?.entry.lang === 'tsx' ? definer.facts.imports : []).filter((raw) => raw.augments && !raw.module.startsWith('.') && !raw.module.startsWith('/')).map((raw) => raw.module));
    importsSource = (item, raw) => (ambientModules.size > 0 && ambientModules.has(raw.module) && item.entry.lang !== 'python' && item.entry.lang !== 'go' && item.entry.lang !== 'rust') || resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => sources.has(file));
    declaresOwn = (item) =>
      (item.entry.lang === 'typescript' || item.entry.lang === 'tsx' || item.entry.lang === 'javascript' || item.entry.lang === 'python') &&
      !sources.has(item.entry.file) &&
      // (`const start = require('./server')` binds what the module exports — CommonJS's `module.exports = function start`
      // included —, no declaration of the file's own: outside round X55-06)
      item.facts.symbols.some((def) => def.name === symbol && def.container === undefined && !item.facts.imports.some((raw) => raw.line === def.line && !raw.reexport));
    importsElsewhere = (item, raw) => {
      const targets = resolver.resolve(item.entry.file, item.entry.lang, raw);
      return targets.length > 0 && !targets.some((file) => sources.has(file));
    };
    if (definedIn.endsWith('.rs')) {
      rustResolve = (file, raw) => resolver.resolve(file, 'rust', raw, true);
      rustPathEnd = (file, raw) => resolver.rustPathEnd(file, raw);
      rustCrateOf = (file) => resolver.rustCrateOf(file);
      rustTestTarget = (file) => resolver.rustTestTarget(file);
      rustModuleBuild = (file) => resolver.rustModuleBuild(file);
      // (not when the definition's own file is in none: then the question is about such files — a lone src/shadow.rs)
      rustOrphan = resolver.rustOrphan(definedIn) ? undefined : (file) => resolver.rustOrphan(file);
      rustOtherCrates = (file) => resolver.rustOtherCrates(file);
      rustInCrate = (root, run) => resolver.rustInCrate(root, run);
      rustInBuild = (build, run) => resolver.rustInBuild(build, run);
      rustBuildChoices = () => resolver.rustBuildChoices();
      rustPathReaches = (file, modulePath) => {
        // A path may start with a module a `use` binds (`use crate::net::conn;` / `{self}` / `as c`, then `conn::dial()`):
        // that segment stands for the `use`'s path (outside attack X50-04).
        const [first, ...rest] = modulePath.split('::');
        const bound = rustUseBindings(loadedFiles.get(file)?.facts.imports ?? []).get(first!);
        const full = bound === undefined ? modulePath : [bound, ...rest].join('::');
        return resolver.resolve(file, 'rust', { module: full, line: 0, names: [{ imported: symbol, local: symbol }], reexport: false }, true).some((target) => sources.has(target));
      };
    }
    reachable = (item) => sources.has(item.entry.file) || samePackage(item) || item.facts.imports.some((raw) => importsSource(item, raw));
    pythonChainReaches = (item, before) => {
      if (item.entry.lang !== 'python') return undefined;
      const chain = /(?<![\p{L}\p{N}_.]\s*)((?:[\p{L}_][\p{L}\p{N}_]*\s*\.\s*){2,})$/u.exec(before.trimEnd())?.[1];
      if (chain === undefined) return undefined;
      const segments = chain.split('.').map((segment) => segment.trim()).filter((segment) => segment !== '');
      const module = segments.join('.');
      const dotted = item.facts.imports.find((raw) => !raw.reexport && raw.level === 0 && (raw.module === module || raw.module.startsWith(`${module}.`)) && raw.names.some((name) => name.imported === '*' && name.local === segments[0]));
      if (dotted === undefined) return undefined;
      const files = resolver.resolve(item.entry.file, item.entry.lang, { ...dotted, module, names: [{ imported: '*', local: segments[0]! }] });
      return files.length === 0 ? undefined : files.some((file) => sources.has(file));
    };
    pythonRootReaches = (item, raw, local) => {
      const name = raw.names.find((entry) => entry.local === local);
      if (!name) return false;
      // (`import pkg.defs` binds pkg, whose attribute chain `pkg.defs.Foo` may reach any of its modules; `import pkg.defs as d` binds d to defs)
      if (name.imported === '*') return local === raw.module.split('.')[0] || importsSource(item, raw);
      const submodule = { ...raw, module: raw.module === '' ? name.imported : `${raw.module}.${name.imported}`, names: [{ imported: '*', local }] };
      const files = resolver.resolve(item.entry.file, item.entry.lang, submodule);
      return files.length > 0 ? files.some((file) => sources.has(file)) : importsSource(item, raw);
    };
  } else {
    const jsLike = (item: Loaded) => item.entry.lang === 'typescript' || item.entry.lang === 'tsx' || item.entry.lang === 'javascript';
    const reexportsDefault = (item: Loaded) => item.facts.imports.some((raw) => raw.reexport && raw.names.some((name) => name.local === 'default' || name.imported === 'default'));
    const hasDefault = (item: Loaded) => item.facts.symbols.some((def) => def.name === symbol && def.defaultExport);
    // (only where a module's default can be the symbol: a module resolver costs a listing of the tree)
    if ([...loadedFiles.values()].some((item) => jsLike(item) && (hasDefault(item) || reexportsDefault(item)))) {
      // (the first call on a tree has no listing: the statements are resolved by probing their candidate files on the
      // disk, as X66-67's are — no `ls-files` of the whole tree; the files that name the module were found by the search)
      const resolver = listing ? await resolverFor(context, listing.allPaths) : probingResolver(context, (file) => loadedFiles.has(file));
      for (const item of loadedFiles.values()) if (jsLike(item) && hasDefault(item)) defaultModules.add(item.entry.file);
      await followDefaults(resolver);
      loaded = [...loadedFiles.values()].sort(byFile);
      defaultOf = (item, raw) => resolver.resolve(item.entry.file, item.entry.lang, raw).some((file) => defaultModules.has(file));
    }
  }

  // Without definedIn, the names the symbol is re-exported under are taken by name: an import of such a name from a
  // module that defines one of that name itself (`import { greet } from './greet'` beside a barrel's `export { default as
  // greet } from './other'`) is that module's, not the symbol's (outside round X66-67). Only the statements importing
  // such a name are resolved, their candidate files probed on the disk: no listing (a first call on a tree makes none).
  let aliasOwnedElsewhere: (item: Loaded, raw: FileFacts['imports'][number], name: string) => boolean = () => false;
  if (opts.definedIn === undefined && exportedNames.size > 1) {
    const probe = probingResolver(context, (file) => loadedFiles.has(file));
    const owners = new Map<string, boolean>();
    // (a top-level exported definition of its own, not bound by an import or re-export of the file; not `export const
    // greet = hello` — an alias by assignment of a name the file imports, or of the symbol's names)
    const ownsName = (file: string, name: string): boolean => {
      const key = `${file}\0${name}`;
      let answer = owners.get(key);
      if (answer !== undefined) return answer;
      answer = false;
      const target = loadedFiles.get(file);
      const facts = target?.facts;
      if (target && facts && !facts.imports.some((raw) => raw.names.some((entry) => entry.local === name))) {
        const importLines = new Set(facts.imports.map((raw) => raw.line));
        const defs = facts.symbols.filter((def) => def.name === name && def.exported && def.container === undefined && !importLines.has(def.line));
        answer = defs.length > 0;
        const assigned = defs.filter((def) => def.kind === 'variable' || def.kind === 'constant');
        if (answer && assigned.length > 0) {
          const imported = new Set([...exportedNames, ...facts.imports.flatMap((raw) => raw.names.map((entry) => entry.local))]);
          imported.delete(name);
          const lines = linesOf(context, [target.entry], prefetched).get(file) ?? [];
          const words = (text: string) => text.match(/[\p{L}_$][\p{L}\p{N}_$]*/gu) ?? [];
          answer = !assigned.some((def) => words((lines[def.line - 1] ?? '').split('=').slice(1).join('=')).some((word) => imported.has(word)));
        }
      }
      owners.set(key, answer);
      return answer;
    };
    aliasOwnedElsewhere = (item, raw, name) => {
      const lang = item.entry.lang;
      if (name === symbol || raw.augments || (lang !== 'typescript' && lang !== 'tsx' && lang !== 'javascript' && lang !== 'python')) return false;
      const targets = probe.resolve(item.entry.file, lang, { ...raw, names: raw.names.filter((entry) => lastSegment(entry.imported) === name) });
      return targets.length > 0 && targets.every((file) => ownsName(file, name));
    };
  }

  const references: Reference[] = [];
  // References written `o.Foo` with o a namespace import of another module (by file:line:column).
  const foreignNamespaceUses = new Map<Reference, Set<string>>();
  // References named like the symbol in files that import that name from elsewhere: dropped unless written qualified.
  const importShadowed = new Set<Reference>();
  // Rust references (with definedIn) whose path decides: value = whether their file reaches the definition by its imports.
  const rustChecked = new Map<Reference, boolean>();
  // Uses of an exported alias that count only when written `ns.Alias` with ns a namespace import of a source: checked on the lines below.
  const throughNamespace = new Map<Reference, Set<string>>();
  // Context lines are read afterwards, only for files that have a reference (not for every grep hit).
  const withReferences = new Map<string, RepoFile>();
  for (const view of loaded.flatMap(importViews)) {
    const { item, holds: inView } = view;
    if (reportIn && !reportIn.has(item.entry.file)) continue;
    // (a Rust file of no crate's module tree: not compiled, its uses are no callers — X65-58)
    if (item.entry.lang === 'rust' && rustOrphan?.(item.entry.file)) continue;
    const inScope = reachable ? reachable(item) : true;
    // (Rust: a file that imports nothing of the definition's module may still name it by its path: `crate::defs::make()`)
    const byPath = rustPathReaches !== undefined && item.entry.lang === 'rust';
    if (!inScope && !memberAnywhere && !byPath) continue;
    // Local names bound to the symbol (or one of its exported aliases) by this file's imports.
    const aliases = new Map<string, string>();
    for (const raw of item.facts.imports) {
      if (raw.reexport) continue;
      for (const name of raw.names) {
        const imported = lastSegment(name.imported);
        // (with definedIn, only an import that reaches the definition: `import { Foo as F } from './other'` is other's)
        if (exportedNames.has(imported) && name.local !== symbol && name.local !== '*' && importsSource(item, raw) && !aliasOwnedElsewhere(item, raw, imported)) aliases.set(name.local, imported);
      }
    }
    for (const local of defaultAliases.get(item.entry.file) ?? []) if (local !== symbol) aliases.set(local, 'default');
    // (aliases by assignment of the file's own definition, `const bar = foo; bar()`: X66-37 — the alias's own site,
    // `export { foo as bar }`, is none)
    const aliasSites = new Set<string>();
    for (const alias of item.facts.aliases ?? []) {
      if (alias.local === symbol || !exportedNames.has(alias.of) || (reachable && !isSource(item.entry.file)) || !ownsTopLevel(item, alias.of)) continue;
      aliases.set(alias.local, alias.of);
      aliasSites.add(`${alias.line}\0${alias.local}`);
    }
    // Namespace imports (`import * as ns`, `import ns = require()`) of a module exporting the symbol under an alias: `ns.Alias`.
    const namespaces = new Set<string>();
    for (const raw of item.facts.imports) if (!raw.reexport) for (const name of raw.names) if (name.imported === '*' && name.local !== '*' && importsSource(item, raw)) namespaces.add(name.local);
    const wanted = new Set([symbol, ...aliases.keys(), ...exportedNames]);
    const importsDefault = defaultImporters.has(item.entry.file);
    const defaultNamespace = defaultNamespaces.get(item.entry.file);
    // A star import of a module exporting the symbol under an alias binds that alias (`from pkg import *` of a package
    // whose __init__ has `from .core import f as g`: g() is f; `use m::*` in Rust) — outside attack X47.
    const starBound = item.facts.imports.some((raw) => !raw.reexport && raw.names.some((name) => name.local === '*') && importsSource(item, raw));
    if (importsDefault || defaultNamespace) wanted.add('default');
    const everywhere = item.facts.tooLarge ? textScan(readTexts(context, [item.entry]).get(item.entry.file) ?? '', wanted) : decodeRefs(item.facts.refs, wanted);
    const found = inView ? everywhere.filter(([, line, column]) => inView(line, column)) : everywhere;
    // TS: a `declare module './x' { … }` block augments ./x — what it declares refers to ./x's names only (X49-07)
    const foreignAugmentations = opts.definedIn === undefined ? [] : item.facts.imports.filter((raw) => raw.augments && !importsSource(item, raw)).map((raw) => raw.augments!);
    // A file that imports the symbol's name from another module of the repository (`import { Foo } from './other'`):
    // its `Foo` is that one, outside an augmentation of the definition's module (X49-07). (Go imports name packages.)
    const importedElsewhere =
      opts.definedIn !== undefined &&
      item.entry.lang !== 'go' &&
      item.facts.imports.some(
        (raw) =>
          !raw.reexport &&
          !raw.augments &&
          !(raw.assigned && item.entry.file === definedInFile) &&
          raw.names.some((name) => name.local === symbol) &&
          (importsElsewhere(item, raw) ||
            // (`import main from './barrel'`: the barrel's default — `export * from './util'` passes none — is not the
            // definition even where the barrel re-exports it by name: X67-12. An ES import only: `const main = require()`
            // binds the whole module too.)
            (defaultOf !== undefined && !raw.names.some((name) => name.local === '*') && raw.names.some((name) => name.imported === 'default' && name.local === symbol) && !defaultOf(item, raw))),
      );
    // Python: an import binding the symbol's name to a module (`import pkg.defs as LIMIT` — in a class body too, X53-03):
    // there the name is that module, the definition only written qualified (`LIMIT.LIMIT`). (Not TS: `import greet =
    // require('./greet')` binds what the module's `export =` is.)
    const namesModule = opts.definedIn !== undefined && item.entry.lang === 'python' && item.facts.imports.some((raw) => !raw.reexport && raw.names.some((name) => name.imported === '*' && name.local === symbol));
    const ownDeclaration = declaresOwn(item);
    // (an import statement naming the symbol is the definition's when the file also imports it from a source: `import { Foo as F } from './defs'`)
    const importsFromSource = importedElsewhere && item.facts.imports.some((raw) => !raw.augments && raw.names.some((name) => lastSegment(name.imported) === symbol) && importsSource(item, raw));
    // Namespace imports of other modules of the repository (`import * as o from './other'`): `o.Foo` is other's.
    const foreignNamespaces = new Set<string>();
    if (opts.definedIn !== undefined && item.entry.lang !== 'go') {
      for (const raw of item.facts.imports) if (!raw.reexport) for (const name of raw.names) if (name.imported === '*' && name.local !== '*' && importsElsewhere(item, raw)) foreignNamespaces.add(name.local);
    }
    const ownAugmentations = importedElsewhere ? item.facts.imports.filter((raw) => raw.augments && importsSource(item, raw)).map((raw) => raw.augments!) : [];
    for (const [name, line, column, kind, flag] of found) {
      if (foreignAugmentations.some(([first, last]) => line >= first && line <= last)) continue;
      if (aliasSites.size > 0 && aliasSites.has(`${line}\0${name}`)) continue;
      // An import statement's own names are that statement's module's: `from other import Foo as A` names other's Foo
      // (with definedIn; the statement is the last one before the name that names it)
      const statement = (opts.definedIn !== undefined || name === 'default') && (kind === 'import' || kind === 'reexport') ? statementNaming(item.facts.imports, name, line, column) : undefined;
      if (statement && importsElsewhere(item, statement)) continue;
      // (`export { default as x } from './m'`, `import { default as x } from './m'` name the symbol only when m's default is it)
      if (statement && name === 'default' && defaultOf && !defaultOf(item, statement)) continue;
      // (`import main from './barrel'` names the symbol only when the barrel's default is it: X67-12)
      if (statement && name === symbol && defaultOf && !statement.names.some((entry) => entry.local === '*') && statement.names.some((entry) => entry.imported === 'default' && entry.local === symbol) && !statement.names.some((entry) => entry.imported === symbol) && !defaultOf(item, statement)) continue;
      // (Python: the binding the use sees decides — a later import shadows an earlier one, an `if`/`else` pair is either:
      // X66-08/14)
      const pythonSees = item.entry.lang === 'python' && name === symbol && kind !== 'import' && !namesModule ? pythonSeesDefinition(item, line) : undefined;
      const shadowed = (pythonSees === undefined ? importedElsewhere || namesModule || ownDeclaration : !pythonSees) && name === symbol && !ownAugmentations.some(([first, last]) => line >= first && line <= last) && !((kind === 'import' || kind === 'reexport') && (statement ? importsSource(item, statement) : importsFromSource));
      let via: string | undefined;
      let viaNamespace = false;
      if (name === symbol) via = undefined;
      else if (aliases.has(name)) via = name;
      else if ((exportedNames.has(name) || (importsDefault && name === 'default')) && (kind === 'reexport' || kind === 'import')) {
        const naming = opts.definedIn === undefined && name !== 'default' ? statementNaming(item.facts.imports, name, line, column) : undefined;
        if (naming && aliasOwnedElsewhere(item, naming, name)) continue;
        via = name;
      }
      else if (exportedNames.has(name) && starBound && name !== 'default') via = name;
      else if (name === 'default' && defaultNamespace && kind !== 'import' && kind !== 'reexport' && kind !== 'type') {
        via = name;
        viaNamespace = true;
      }
      else if (exportedNames.has(name) && namespaces.size > 0 && kind !== 'type') {
        via = name;
        viaNamespace = true;
      } else continue;
      const pathDecides = byPath && kind !== 'import' && kind !== 'reexport';
      if (!inScope && kind !== 'method-call' && !pathDecides) continue;
      const reference: Reference = { file: item.entry.file, line, column, context: '', kind, name };
      if (via !== undefined) reference.via = via;
      withFlag(reference, flag);
      references.push(reference);
      // (unless written qualified — `d.Foo`, `crate::defs::Foo`: decided below, on the line's text)
      if (shadowed) importShadowed.add(reference);
      if (viaNamespace) throughNamespace.set(reference, name === 'default' && defaultNamespace ? defaultNamespace : namespaces);
      if (name === symbol && foreignNamespaces.size > 0 && kind !== 'import') foreignNamespaceUses.set(reference, foreignNamespaces);
      if (pathDecides) rustChecked.set(reference, inScope);
      withReferences.set(item.entry.file, item.entry);
    }
  }
  const lines = linesOf(context, [...withReferences.values()], prefetched);
  const unqualified = new Set<Reference>();
  // `ns.Alias`, or `ns.inner.Alias` through a barrel's `export * as inner` (X49-09): the chain starts at the namespace
  const namespaceRoot = (reference: Reference) => {
    const before = textBefore(lines.get(reference.file), reference);
    const qualifier = selectorQualifier(before);
    return qualifier === null ? attributeRoot(before) : qualifier;
  };
  for (const [reference, namespaces] of throughNamespace) {
    const root = namespaceRoot(reference);
    if (root === undefined || root === null || !namespaces.has(root)) unqualified.add(reference);
  }
  for (const [reference, foreign] of foreignNamespaceUses) {
    // (a method definition: `shop.Product.from_dict()` calls a class's method whatever module the chain starts at —
    // method calls are kept by name anywhere; only `other.from_dict()`, a foreign module's own, is not it: X54-05)
    if (memberAnywhere && reference.kind === 'method-call' && /[\p{L}\p{N}_]\s*\.\s*[\p{L}_][\p{L}\p{N}_]*\s*\.\s*$/u.test(textBefore(lines.get(reference.file), reference))) continue;
    const root = namespaceRoot(reference);
    if (root !== undefined && root !== null && foreign.has(root) && !pythonChainReaches(loadedFiles.get(reference.file)!, textBefore(lines.get(reference.file), reference))) unqualified.add(reference);
  }
  for (const reference of importShadowed) {
    const before = textBefore(lines.get(reference.file), reference).trimEnd();
    if (reference.kind === 'import' || !(before.endsWith('.') || before.endsWith('::'))) unqualified.add(reference);
  }
  // Rust, a method definition: whether `T::name` names it — T its type (`impl T`), a trait it is declared in, `Self`, or a
  // type the definition's file does not tell (no method container known: as before, any type's)
  const rustContainers = new Set(definerSymbols.filter((def) => def.name === symbol && def.kind === 'method' && def.container !== undefined).map((def) => lastSegment(def.container!.replace(/<.*$/, '').replace(/::/g, '.'))));
  // (the traits among them, and the types with an `impl Trait for Type` of one in the files read: X57-13)
  const rustTraits = new Set(definerSymbols.filter((def) => def.kind === 'trait' && rustContainers.has(def.name)).map((def) => def.name));
  // (the trait family: the traits, their subtraits — `trait MakeNamed: Make`, whose bound implies the trait's: X58-01 —
  // and the names they are re-exported under in a crate root, `pub use make::Make as Buildable;`: X58-02; read from the
  // Rust files loaded and the crates' roots, to a fixed point)
  let traitFamily: Set<string> | undefined;
  // (the files defining each member of the family — the definition's file for its traits, a subtrait's file; none
  // recorded for a name a `use … as` gives: any file's then — so that a trait of the same name defined elsewhere,
  // `other::Make`, is not taken for it: outside round X59-01)
  const traitHomes = new Map<string, Set<string>>();
  const rustTraitFamily = (): Set<string> => {
    if (traitFamily) return traitFamily;
    traitFamily = new Set(rustTraits);
    for (const name of rustTraits) traitHomes.set(name, new Set([definedInFile!]));
    if (rustTraits.size === 0) return traitFamily;
    const roots = [...byPath.values()].filter((entry) => /(?:^|\/)src\/(?:lib|main)\.rs$/.test(entry.file) && !loadedFiles.has(entry.file));
    const texts = [...readTexts(context, [...[...loadedFiles.values()].filter((item) => item.entry.file.endsWith('.rs')).map((item) => item.entry), ...roots]).entries()];
    for (let grew = true; grew; ) {
      grew = false;
      const names = [...traitFamily].join('|');
      const subtrait = new RegExp(`\\btrait\\s+([A-Za-z_][A-Za-z0-9_]*)\\s*(?:<[^{};]*?>\\s*)?:[^{;]*?(?<![A-Za-z0-9_])(${names})\\b`, 'g');
      const alias = new RegExp(`\\buse\\s+[A-Za-z0-9_:]*?(?<![A-Za-z0-9_])(?:${names})\\s+as\\s+([A-Za-z_][A-Za-z0-9_]*)\\s*;`, 'g');
      for (const [file, text] of texts) {
        for (const match of text.matchAll(subtrait)) {
          // (a subtrait of the other trait of that name, `trait Mid: Make` where the file's Make is other's, is not one)
          if (match[1] === '_' || traitFamily.has(match[1]!) || !rustTraitHomeOk(file, match[2]!, match[2]!)) continue;
          traitFamily.add(match[1]!);
          traitHomes.set(match[1]!, new Set([file]));
          grew = true;
        }
        for (const match of text.matchAll(alias)) {
          if (match[1] === '_' || traitFamily.has(match[1]!) || !rustImportHomeOk(file, match[1]!)) continue;
          traitFamily.add(match[1]!);
          grew = true;
        }
      }
    }
    return traitFamily;
  };
  /**
   * Rust: whether the trait `name` (a member of the trait family), as `file` names it by `modulePath` (`Make`,
   * `crate::other::Make`), may be the family's — the file defining the trait it names by its own items and `use`
   * declarations is the family member's, or is not known (a glob import, a re-export, another crate): X59-01.
   */
  /**
   * Rust: whether the `use` of `file` binding `local` to a member of the trait family (`use crate::make::Make as M;`)
   * may name the family's — not when the module it names defines a trait of that name of its own (`use
   * crate::other::Make as M;`: X59-01). No such `use` read: true.
   */
  const rustImportHomeOk = (file: string, local: string): boolean => {
    if (!rustResolve) return true;
    rustTraitFamily();
    for (const raw of loadedFiles.get(file)?.facts.imports ?? []) {
      for (const name of raw.names) {
        if (name.local !== local || name.imported === '*') continue;
        const imported = lastSegment(name.imported);
        const homes = traitHomes.get(imported);
        if (homes === undefined) return true;
        const targets = rustResolve(file, { ...raw, names: [name] });
        return targets.length === 0 || targets.some((target) => homes.has(target)) || !targets.some((target) => loadedFiles.get(target)?.facts.symbols.some((def) => def.kind === 'trait' && def.name === imported && def.container === undefined));
      }
    }
    return true;
  };
  const traitHomeMemo = new Map<string, boolean>();
  const rustTraitHomeOk = (file: string, name: string, modulePath: string, line = 0): boolean => {
    const key = `${file}\0${modulePath}\0${line}`;
    let answer = traitHomeMemo.get(key);
    if (answer !== undefined) return answer;
    rustTraitFamily();
    const homes = traitHomes.get(name);
    const home = homes === undefined ? undefined : rustTypeHome(file, name, modulePath, line);
    answer = home === undefined || homes === undefined || homes.has(home);
    traitHomeMemo.set(key, answer);
    return answer;
  };
  // (the definition's types under other names — `pub use item::Item as Thing;`, `pub type ItemAlias = item::Item;` — read
  // from the Rust files loaded and the crates' roots: outside round X59-02; each alias with the file declaring it, the
  // line and the path it names, so that the path is resolved from there to the module it leads to — `Thing` is item.rs's
  // `Item`, not util.rs's: X59-02 as X59-04 for `use … as`)
  type RustTypeAlias = { file: string; line: number; path: string; type: string };
  const typeAliasMemo = new Map<string, Map<string, RustTypeAlias[]>>();
  const rustTypeAliases = (types: readonly string[] = [...rustContainers].filter((name) => !rustTraits.has(name))): Map<string, RustTypeAlias[]> => {
    const containers = types.filter((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name));
    const key = containers.join('|');
    let typeAliases = typeAliasMemo.get(key);
    if (typeAliases) return typeAliases;
    typeAliases = new Map();
    typeAliasMemo.set(key, typeAliases);
    if (containers.length === 0) return typeAliases;
    const roots = [...byPath.values()].filter((entry) => /(?:^|\/)src\/(?:lib|main)\.rs$/.test(entry.file) && !loadedFiles.has(entry.file));
    // (and the unread files a loaded file's `use` of another type name leads to — a facade, `pub use crate::util::Item
    // as Inner;` in kind.rs, need not name the method: X63-14)
    const facades = new Map<string, RepoFile>();
    for (const item of rustResolve ? loadedFiles.values() : []) {
      if (!item.entry.file.endsWith('.rs')) continue;
      for (const raw of item.facts.imports) {
        if (raw.modDecl) continue;
        for (const name of raw.names) {
          const imported = name.imported.split('::').at(-1)!;
          if (!/^[A-Z]/.test(imported) || containers.includes(imported)) continue;
          for (const target of rustResolve!(item.entry.file, { ...raw, names: [name] })) if (!loadedFiles.has(target) && byPath.has(target)) facades.set(target, byPath.get(target)!);
        }
      }
    }
    const texts = readTexts(context, [...[...loadedFiles.values()].filter((item) => item.entry.file.endsWith('.rs')).map((item) => item.entry), ...roots, ...[...facades.values()].filter((entry) => !roots.includes(entry))]);
    // (and the files those facades' own `use`s of a type name lead to, to the end of the chain — l4.rs's `pub use
    // crate::l3::C as D;`, l3.rs's `pub use crate::l2::B as C;`, …; and the facades a path names, `crate::l3::C::new(3)`
    // in a loaded file or `pub use l4::D as Top;` in lib.rs: X64-12)
    const pathTypes = /(?<![\w:])((?:[A-Za-z_][A-Za-z0-9_]*::)+)([A-Z][A-Za-z0-9_]*)\s*::/g;
    const useTypes = /\buse\s+((?:[A-Za-z_][A-Za-z0-9_]*::)+)([A-Z][A-Za-z0-9_]*)(?:\s+as\s+[A-Za-z_][A-Za-z0-9_]*)?\s*;/g;
    for (let added = [...texts.keys()], first = true; added.length > 0 && rustResolve; first = false) {
      const next: RepoFile[] = [];
      for (const file of added) {
        const text = texts.get(file) ?? '';
        const seen = new Set<string>();
        for (const match of first ? [...text.matchAll(pathTypes), ...(facades.has(file) || roots.some((entry) => entry.file === file) ? text.matchAll(useTypes) : [])] : text.matchAll(useTypes)) {
          if (seen.has(`${match[1]!}${match[2]!}`)) continue;
          seen.add(`${match[1]!}${match[2]!}`);
          for (const target of rustResolve(file, { module: match[1]!.replace(/::$/, ''), line: 0, names: [{ imported: match[2]!, local: match[2]! }], reexport: false })) {
            if (loadedFiles.has(target) || texts.has(target) || !byPath.has(target) || next.includes(byPath.get(target)!)) continue;
            next.push(byPath.get(target)!);
          }
        }
      }
      for (const [file, text] of readTexts(context, next)) texts.set(file, text);
      added = next.map((entry) => entry.file);
    }
    // (an alias of an alias — `use crate::UtilItem as X;`, `use super::super::Thing as T2;` — is one too: every
    // renaming `use` and `type` of the texts read once, then followed from the types to a fixed point — no hop limit,
    // the names already known end it: X63-09/14, X64-12)
    const renamings = new Map<string, Array<[string, RustTypeAlias]>>();
    // (a renaming `use` from the file's syntax tree — inside braces too, `pub use crate::{item::Item as Other, util::Item};`
    // in a facade that does not name the method: X65-29/45, c10)
    const renamingUses = (file: string, text: string): Array<[string, string, RustTypeAlias]> =>
      !/\bas\b/.test(text)
        ? []
        : (rustFactsOf(file)?.imports ?? []).flatMap((raw) =>
            raw.modDecl
              ? []
              : raw.names.flatMap((name): Array<[string, string, RustTypeAlias]> => {
                  const path = [...(raw.module === '' ? [] : [raw.module]), name.imported].join('::');
                  const imported = lastSegment(path);
                  return name.imported === '*' || name.local === imported || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(imported) ? [] : [[imported, name.local, { file, line: raw.line, path, type: imported }]];
                }),
          );
    // (and a `type Name = path::Type;` alias — generic arguments aside — from the syntax tree too: not one in a comment
    // or a string)
    const aliasItems = (file: string, text: string): Array<[string, string, RustTypeAlias]> =>
      !/\btype\b/.test(text)
        ? []
        : (rustFactsOf(file)?.rustLocals ?? []).flatMap((entry): Array<[string, string, RustTypeAlias]> => {
            if (entry.kind !== 'alias' || entry.target === undefined) return [];
            const type = lastSegment(entry.target);
            return [[type, entry.name, { file, line: entry.line, path: entry.target, type }]];
          });
    for (const [file, text] of texts) {
      const found: Array<[string, string, RustTypeAlias]> = [...renamingUses(file, text), ...aliasItems(file, text)];
      for (const [source, name, declared] of found) (renamings.get(source) ?? renamings.set(source, []).get(source)!).push([name, declared]);
    }
    const known = new Set(containers);
    for (let names = containers; names.length > 0; ) {
      const added: string[] = [];
      for (const source of names) {
        for (const [name, declared] of renamings.get(source) ?? []) {
          if (name === '_') continue;
          (typeAliases.get(name) ?? typeAliases.set(name, []).get(name)!).push(declared);
          if (!known.has(name)) {
            known.add(name);
            added.push(name);
          }
        }
      }
      names = added;
    }
    return typeAliases;
  };
  // (the declarations the file's name `alias` may mean: one of the file's own, else those in the file its `use` or the
  // path written before it leads to, else all of them — X59-02)
  const rustAliasDeclarations = (file: string, alias: string, modulePath: string, all: readonly RustTypeAlias[], line = 0, column = 0): readonly RustTypeAlias[] => {
    // (not the file's declarations in a block that is not around the reference — a path names none: X65-62)
    const facts = loadedFiles.get(file)?.facts;
    const elsewhere = (declaration: RustTypeAlias) =>
      declaration.file === file &&
      ((facts?.imports.some((raw) => raw.line === declaration.line && !raw.inlineModule && rustBlockElsewhere(raw.block, modulePath, line, column) && raw.names.some((name) => name.local === alias)) ?? false) ||
        (facts?.rustLocals?.some((entry) => entry.kind === 'alias' && !entry.assoc && entry.line === declaration.line && entry.name === alias && rustBlockElsewhere(entry.span, modulePath, line, column)) ?? false));
    const declared = all.filter((declaration) => !elsewhere(declaration));
    const own = declared.filter((declaration) => declaration.file === file);
    if (own.length > 0 || !rustResolve) return own.length > 0 ? own : declared;
    const qualifier = modulePath.replace(/(?:^|::)[A-Za-z_][A-Za-z0-9_]*$/, '');
    const raw = qualifier !== '' && !qualifier.startsWith('<')
      ? { module: qualifier, line: 0, names: [{ imported: alias, local: alias }], reexport: false }
      : (loadedFiles.get(file)?.facts.imports ?? []).find((candidate) => candidate.names.some((name) => name.local === alias && name.imported !== '*'));
    if (!raw) return declared;
    const targets = new Set(rustResolve(file, qualifier !== '' ? raw : { ...raw, names: raw.names.filter((name) => name.local === alias) }));
    const reached = declared.filter((declaration) => targets.has(declaration.file));
    return reached.length > 0 ? reached : declared;
  };
  // (Rust: whether a declaration in the block `block` is out of scope at a reference by `modulePath` at line:column — a
  // path leads through modules, which see no block's names: X65-62)
  const rustBlockElsewhere = (block: ImportSpan | undefined, modulePath: string, line: number, column: number): boolean => block !== undefined && line > 0 && (modulePath.includes('::') || !spanHolds(block, [line, column]));
  // (the file defining the type an alias declaration names, from the declaring file; undefined when not known)
  const rustAliasHome = (declaration: RustTypeAlias): string | undefined => rustTypeHome(declaration.file, declaration.type, declaration.path, declaration.line);
  // (the family's names the file means by them: not a name its own items or its `use` give another trait — X59-01)
  const traitNamesMemo = new Map<string, string>();
  const rustTraitNamesIn = (file: string): string => {
    let answer = traitNamesMemo.get(file);
    if (answer !== undefined) return answer;
    const family = rustTraitFamily();
    const names = new Set([...family].filter((name) => rustTraitHomeOk(file, name, name)));
    for (const raw of loadedFiles.get(file)?.facts.imports ?? []) for (const name of raw.names) if (family.has(lastSegment(name.imported)) && name.local !== lastSegment(name.imported) && rustImportHomeOk(file, name.local)) names.add(name.local);
    answer = [...names].filter((name) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)).join('|') || '(?!)';
    traitNamesMemo.set(file, answer);
    return answer;
  };
  // (each implementing type's name → the files defining it as its impl's file names it, undefined when not known: X58-03)
  let implementers: Map<string, (string | undefined)[]> | undefined;
  const rustImplementers = (): Map<string, (string | undefined)[]> => {
    if (implementers) return implementers;
    implementers = new Map();
    const rustFiles = [...loadedFiles.values()].filter((item) => item.entry.file.endsWith('.rs')).map((item) => item.entry);
    for (const [file, text] of readTexts(context, rustFiles)) {
      const pattern = new RegExp(`\\bimpl\\s*(<[^{};]*?>\\s*)?((?:[A-Za-z_][A-Za-z0-9_]*::)*(?:${rustTraitNamesIn(file)}))\\s*(?:<[^{};]*?>\\s*)?for\\s+((?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*))`, 'g');
      for (const rawMatch of text.matchAll(pattern)) {
        // (`impl other::Make for u32`: a path to another trait of that name — X59-01)
        const traitPath = rawMatch[2]!;
        if (traitPath.includes('::') && !rustTraitHomeOk(file, lastSegment(traitPath.replace(/::/g, '.')), traitPath)) continue;
        const match = [rawMatch[0], rawMatch[1], rawMatch[3], rawMatch[4]] as const;
        // (a blanket impl, `impl<T: Default> Seed for T`: any type may implement it — outside round X58-27)
        const blanket = match[1] !== undefined && new RegExp(`[<,]\\s*${match[3]!}\\b`).test(match[1]);
        const type = blanket ? '*' : match[3]!;
        const homes = implementers.get(type) ?? implementers.set(type, []).get(type)!;
        homes.push(blanket ? undefined : rustTypeHome(file, type, match[2]!));
      }
    }
    return implementers;
  };
  // (Rust: the file defining the type an alias `type Item = crate::util::Item;` of `where` stands for, its target's path
  // read from the alias's place — X64-02/03/05; another type's name: another type, unless a known alias of the
  // definition's type: not known then; an alias being followed (`type A = B; type B = A;`): not known)
  const aliasesFollowed = new Set<string>();
  // (Rust, per file: the blocks holding a `use` — a function's body, a closure's —, by start, each with the block around
  // it: the blocks around a reference are one walk up from the last block starting before it, not a scan of every `use`
  // of the file per reference — 1 500 of them in a 20 000-line file, for each of its 4 000 references)
  type RustUseBlock = { span: ImportSpan; uses: Array<FileFacts['imports'][number]>; parent: number };
  const useBlocksMemo = new Map<string, RustUseBlock[]>();
  const rustUseBlocksAround = (file: string, at: [number, number]): RustUseBlock[] => {
    let blocks = useBlocksMemo.get(file);
    if (!blocks) {
      const byKey = new Map<string, RustUseBlock>();
      for (const raw of loadedFiles.get(file)?.facts.imports ?? []) {
        if (raw.modDecl || raw.block === undefined || raw.inlineModule) continue;
        const key = raw.block.join(':');
        (byKey.get(key) ?? byKey.set(key, { span: raw.block, uses: [], parent: -1 }).get(key)!).uses.push(raw);
      }
      const sorted = [...byKey.values()].sort((a, b) => a.span[0] - b.span[0] || a.span[1] - b.span[1] || b.span[2] - a.span[2] || b.span[3] - a.span[3]);
      const open: number[] = [];
      sorted.forEach((block, index) => {
        while (open.length > 0 && !spanHolds(sorted[open.at(-1)!]!.span, [block.span[0], block.span[1]])) open.pop();
        block.parent = open.at(-1) ?? -1;
        open.push(index);
      });
      useBlocksMemo.set(file, (blocks = sorted));
    }
    // (a position without a column is on the spans' lines: every block that holds it)
    if (at[1] === 0) return blocks.filter((block) => spanHolds(block.span, at));
    let low = 0;
    for (let high = blocks.length; low < high; ) {
      const middle = (low + high) >> 1;
      const start = blocks[middle]!.span;
      if (start[0] < at[0] || (start[0] === at[0] && start[1] <= at[1])) low = middle + 1;
      else high = middle;
    }
    // (the innermost block holding the position is the last one starting before it or one around that one)
    let index = low - 1;
    while (index >= 0 && !spanHolds(blocks[index]!.span, at)) index = blocks[index]!.parent;
    const around: RustUseBlock[] = [];
    for (; index >= 0; index = blocks[index]!.parent) around.push(blocks[index]!);
    return around;
  };
  // (Rust: whether a position of a file is in code only under test (true), only without it (false), or in both)
  const rustCfgAt = (file: string, at: [number, number]): boolean | undefined => {
    let answer = rustFileCfg(file);
    for (const item of loadedFiles.get(file)?.facts.rustCfg ?? []) if (spanHolds(item.span, at)) answer = item.test || answer === true;
    return answer;
  };
  // (a module file declared by a `#[cfg(test)] mod tests;` of a file read — or a `#[cfg(not(test))]` one: every line's)
  // (every cfg'd `mod` declaration of the files read resolved once, to an index by the file it declares — not every
  // declaration resolved again for each file asked about: 2,000 `#[cfg(test)] mod tests;` files, X65-64)
  let fileCfgIndex: Map<string, boolean> | undefined;
  const fileCfgMemo = new Map<string, boolean | undefined>();
  const rustFileCfg = (file: string): boolean | undefined => {
    if (fileCfgMemo.has(file)) return fileCfgMemo.get(file);
    fileCfgMemo.set(file, undefined);
    if (!fileCfgIndex) {
      fileCfgIndex = new Map();
      for (const item of rustResolve ? loadedFiles.values() : []) {
        for (const raw of item.facts.imports) {
          if (!raw.modDecl || raw.cfgTest === undefined) continue;
          for (const target of new Set(rustResolve!(item.entry.file, raw))) fileCfgIndex.set(target, raw.cfgTest || fileCfgIndex.get(target) === true);
        }
      }
    }
    // (an integration test's files: cargo builds them under test only — X65-38; a module file's build passes down
    // through the plain `mod x;` below a cfg'd one — X65-22)
    const base: boolean | undefined = rustTestTarget?.(file) ? true : rustModuleBuild?.(file);
    const indexed = fileCfgIndex.get(file);
    const answer = indexed === undefined ? base : indexed || base === true;
    fileCfgMemo.set(file, answer);
    return answer;
  };
  // (Rust, per file and name: its rustLocals with a span — the generic parameters, block items and aliases of the name)
  const localsMemo = new Map<string, Map<string, RustLocal[]>>();
  const rustLocalsNamed = (file: string, name: string): RustLocal[] => {
    let byName = localsMemo.get(file);
    if (!byName) {
      byName = new Map();
      for (const entry of loadedFiles.get(file)?.facts.rustLocals ?? []) if (entry.span !== undefined) (byName.get(entry.name) ?? byName.set(entry.name, []).get(entry.name)!).push(entry);
      localsMemo.set(file, byName);
    }
    return byName.get(name) ?? [];
  };
  const rustAliasTarget = (where: string, alias: RustLocal): string | undefined => {
    const target = alias.target;
    // (`type Item = Item;` in an impl: the associated type is the module's `Item` — X65-13; elsewhere a cycle)
    if (target === undefined || (target === alias.name && !alias.assoc)) return undefined;
    const name = target.slice(target.lastIndexOf(':') + 1);
    // (an alias of an alias or of a renamed import — `type A = crate::item::Item; type Item = A;`: followed — X65-03)
    const renaming = !rustContainers.has(name) && rustTypeAliases().has(name);
    if (!rustContainers.has(name) && !renaming) return `${where}#${alias.name}@${alias.line}:${alias.column}`;
    const key = `${where}\0${alias.line}\0${alias.column}`;
    if (aliasesFollowed.has(key)) return undefined;
    aliasesFollowed.add(key);
    try {
      return rustTypeHome(where, name, target, alias.line, name, alias.column);
    } finally {
      aliasesFollowed.delete(key);
    }
  };
  /**
   * Rust: the file defining the type `type` as `file` names it — `crate::util::Item` / `super::Item` (the path's module),
   * a top-level `struct Item` of the file's own (rustfmt's layout: not indented — one in an inline `mod legacy { … }` is
   * `legacy::Item`, X58-19), or its `use …::Item` (the module the `use` names). undefined when not known (a glob import,
   * a re-export, an unread file): then the name decides, as before.
   */
  // (what a module's scope binds a name to, across the lookups of every reference — a generated chain of 3000
  // `pub use self::A2 as A3;` is walked once, not once per reference: X64-12; keyed by all the lookup depends on)
  const rustLookups = new Map<string, string | undefined | null>();
  // (code in both builds: one lookup for both, unless a choice on the way depends on the build — a cfg(test)/cfg(not(test))
  // pair of globs or of type aliases, a `#[cfg(test)] use` beside a glob: then each build's, the definition's when either
  // names it — X65-41/42/60; `cfgChoices` counts such choices, the memo keeps which lookups made one)
  let cfgChoices = 0;
  const cfgChoiceLookups = new Set<string>();
  // (a module file of several crates — `mod user;` in both src/lib.rs and src/main.rs —: each crate's answer, the
  // definition's when one of them names it — X65-23; `crateContext`: the crate asked in, beside the library's)
  let crateContext = '';
  // (Rust: a file's facts for the lookups — a loaded file's, else parsed when a lookup first reaches it: a facade that
  // does not name the method — `pub use crate::item::*;`, `#[doc(inline)] pub use …`, braces over lines, inline modules
  // — is read from its syntax tree as the loaded files are, not from line patterns: X65-06/18/19/29/47/48)
  const reachedFacts = new Map<string, FileFacts | undefined>();
  const rustFactsOf = (file: string): FileFacts | undefined => {
    const item = loadedFiles.get(file);
    if (item) return item.facts;
    if (reachedFacts.has(file)) return reachedFacts.get(file);
    const entry = file.endsWith('.rs') ? byPath.get(file) : undefined;
    const facts = entry ? factsNow(context, entry, { refsFor: [] }) : undefined;
    reachedFacts.set(file, facts);
    return facts;
  };
  const rustTypeHome = (file: string, type: string, modulePath: string, line = 0, local = type, column = 0): string | undefined => {
    const others = crateContext === '' ? (rustOtherCrates?.(file) ?? []) : [];
    if (others.length === 0) return rustTypeHomeBuilds(file, type, modulePath, line, local, column);
    const answers = [rustTypeHomeBuilds(file, type, modulePath, line, local, column)];
    for (const root of others) {
      crateContext = root;
      try {
        answers.push(rustInCrate!(root, () => rustTypeHomeBuilds(file, type, modulePath, line, local, column)));
      } finally {
        crateContext = '';
      }
    }
    return answers.includes(definedInFile) ? definedInFile : answers.includes(undefined) ? undefined : answers[0];
  };
  const choices = () => cfgChoices + (rustBuildChoices?.() ?? 0);
  const rustTypeHomeBuilds = (file: string, type: string, modulePath: string, line = 0, local = type, column = 0): string | undefined => {
    // (the reference's build decides the module files of cfg'd `mod` pairs too — X65-61)
    const underTest = line > 0 && column > 0 ? rustCfgAt(file, [line, column]) : undefined;
    const inBuild = (build: boolean | undefined) => (rustInBuild ? rustInBuild(build, () => rustTypeHomeIn(file, type, modulePath, line, local, column, build)) : rustTypeHomeIn(file, type, modulePath, line, local, column, build));
    const before = choices();
    const answer = inBuild(underTest);
    if (choices() === before || underTest !== undefined || line === 0 || column === 0) return answer;
    const answers = [inBuild(false), inBuild(true)];
    return answers.includes(definedInFile) ? definedInFile : answers.includes(undefined) ? undefined : answers[0];
  };
  // (the item `cfg` at a position of a file — its `#[cfg(…)]`/`#[test]` items', not its file's: true, false or neither)
  const rustItemCfg = (where: string, position: [number, number]): boolean | undefined => {
    let answer: boolean | undefined;
    for (const item of rustFactsOf(where)?.rustCfg ?? []) if (spanHolds(item.span, position)) answer = item.test || answer === true;
    return answer;
  };
  const rustTypeHomeIn = (file: string, type: string, modulePath: string, line = 0, local = type, column = 0, build?: boolean): string | undefined => {
    const isType = (def: FileFacts['symbols'][number], name = type) => def.name === name && def.container === undefined && (def.kind === 'struct' || def.kind === 'enum' || def.kind === 'type' || def.kind === 'trait');
    // (the top level of a module file: its `type Item = …` alias's target, or the file for a type of its own)
    const home = (target: string, name = type): string | undefined => {
      // (`pub type Item = crate::util::Item;` at the module's level: the alias's target — X64-03)
      const alias = rustFactsOf(target)?.rustLocals?.find((entry) => entry.kind === 'alias' && entry.span === undefined && entry.name === name && moduleAt(target, [entry.line, entry.column]).length === 0);
      if (alias) return rustAliasTarget(target, alias);
      if (rustFactsOf(target)?.symbols.some((def) => isType(def, name) && moduleAt(target, [def.line, def.column]).length === 0)) return target;
      return undefined;
    };
    // The names in scope at a position are the syntax tree's: the inline module around it (`mod tests { … }` inherits
    // none of the file's names — only what it declares, `use`s, or globs in: X63-01/08), the blocks around it
    // (innermost first: a block's `use` or glob shadows the outer one's, X63-08), then the module's own; positions are
    // (line, column), not whole lines (X63-13). A lookup answers a file, '' or `file#module` (another type than the
    // definition's), undefined (not known: the name decides), or null (the scope does not bind the name).
    const at: [number, number] = [line, column];
    const modules = (where: string) => rustFactsOf(where)?.rustModules ?? [];
    const same = (a: readonly string[] | undefined, b: readonly string[]) => (a ?? []).length === b.length && b.every((part, index) => a![index] === part);
    const moduleAt = (where: string, position: [number, number]): string[] => {
      let best: string[] = [];
      for (const module of modules(where)) if (module.path.length > best.length && spanHolds(module.span, position)) best = module.path;
      return best;
    };
    const definition = definerSymbols.find((def) => def.name === symbol && def.kind === 'method' && def.container !== undefined && lastSegment(def.container.replace(/<.*$/, '').replace(/::/g, '.')) === type);
    const itemHome = (where: string, path: readonly string[]): string =>
      path.length === 0 || (where === definedInFile && definition !== undefined && same(moduleAt(where, [definition.line, definition.column]), path)) ? where : `${where}#${path.join('::')}`;
    const definesIn = (where: string, path: readonly string[], publicOnly: boolean, name: string): boolean =>
      rustFactsOf(where)?.symbols.some((def) => isType(def, name) && (!publicOnly || def.exported) && same(moduleAt(where, [def.line, def.column]), path)) ?? false;
    // (a path that stays in the file — `super::Item` in `mod tests`, `a::Item` for an inline `mod a`: the inline module's
    // names; undefined when it leaves the file's inline modules)
    // (`position`: where the path is written — a module declared in a block is a name there only, X65-57)
    const navigate = (where: string, start: readonly string[], segments: readonly string[], position?: [number, number]): { path: string[]; rest: string[] } | undefined => {
      const path = [...start];
      let index = 0;
      const isModule = (candidate: string[]) => modules(where).some((module) => same(module.path, candidate) && (module.block === undefined || (position !== undefined && spanHolds(module.block, position))));
      if (segments[index] !== 'self' && segments[index] !== 'super' && !(index < segments.length - 1 && isModule([...path, segments[index]!]))) return undefined;
      for (; segments[index] === 'self' || segments[index] === 'super'; index += 1) {
        if (segments[index] === 'super' && path.length === 0) return undefined;
        if (segments[index] === 'super') path.pop();
      }
      for (; index < segments.length - 1 && isModule([...path, segments[index]!]); index += 1) path.push(segments[index]!);
      return { path, rest: segments.slice(index) };
    };
    // (what a module file or one of its inline modules binds `name` to — a file not loaded parsed now: null when it
    // binds no such name, undefined when it cannot be read)
    const lookupIn = (target: string, path: readonly string[], name: string, depth: number, publicOnly: boolean): string | undefined | null => {
      const found = rustFactsOf(target) ? lookup(target, path, name, depth, publicOnly) : undefined;
      if (found !== null && found !== undefined) return found;
      if (target === definedInFile && rustContainers.has(name) && path.length === 0) return definedInFile;
      return found;
    };
    // (through a module a file re-exports under a name — `pub use crate::item as util;` in fac.rs, `pub use self::u2 as
    // u3;` in lib.rs: `crate::fac::util::Item` is item.rs's — X65-34; `use crate::u3::Item as I3;` too — X65-45, c12)
    const throughModuleReexports = (end: { file: string; rest: string[] } | undefined): { file: string; rest: string[] } | undefined => {
      for (let hops = 0; end && end.rest.length > 1 && hops < 16; hops += 1) {
        const [segment] = end.rest;
        if (modules(end.file).some((module) => same(module.path, [segment!]))) break;
        const named = rustUseBindings((rustFactsOf(end.file)?.imports ?? []).filter((raw) => raw.block === undefined && !raw.modDecl)).get(segment!);
        if (named === undefined) break;
        const last = end.rest.at(-1)!;
        end = rustPathEnd!(end.file, { module: [named, ...end.rest.slice(1, -1)].join('::'), line: 0, names: [{ imported: last, local: last }], reexport: false });
      }
      return end;
    };
    const followUse = (where: string, raw: FileFacts['imports'][number], name: string, depth: number): string | undefined | null => {
      const entry = raw.names.find((candidate) => candidate.local === name)!;
      const segments = [...(raw.module === '' ? [] : raw.module.split('::')), ...entry.imported.split('::')];
      const inFile = navigate(where, raw.modulePath ?? [], segments, [raw.line, raw.column ?? 1]);
      if (inFile && inFile.rest.length === 1) return lookup(where, inFile.path, inFile.rest[0]!, depth + 1, false);
      if (!rustPathEnd) return undefined;
      const end = throughModuleReexports(rustPathEnd(where, { ...raw, names: [entry] }));
      if (!end || end.rest.length === 0) return undefined;
      return lookupIn(end.file, end.rest.slice(0, -1), end.rest.at(-1)!, depth + 1, end.file !== where);
    };
    const followGlob = (where: string, raw: FileFacts['imports'][number], name: string, depth: number): string | undefined | null => {
      const segments = raw.module === '' ? [] : raw.module.split('::');
      const inFile = navigate(where, raw.modulePath ?? [], [...segments, '*'], [raw.line, raw.column ?? 1]);
      if (inFile && inFile.rest.length === 1) return lookup(where, inFile.path, name, depth + 1, false);
      if (!rustPathEnd) return undefined;
      const end = rustPathEnd(where, raw);
      // (another crate's glob, `use std::collections::*;`: it brings no type of this repository)
      if (!end) return null;
      if (end.file === where && end.rest.length === 0) return undefined;
      // (`use super::*;` in a module file — `#[cfg(test)] mod tests;`'s —: a glob of a module around it brings its private
      // names too, its `use`s included; another module's glob its public ones)
      return lookupIn(end.file, end.rest, name, depth + 1, !segments.every((segment) => segment === 'super' || segment === 'self' || segment === 'crate'));
    };
    // (a chain of `use`s and globs is followed to its end — `pub use self::A3 as A4;` five deep, a facade per file: the
    // lookups under way end a cycle (`pub use super::*;` both ways), not a hop count — X64-12)
    const visiting = new Set<string>();
    let cuts = 0;
    // (the first lookup a walk cut at the hop limit: settled from a fresh stack — memoized —, then the walk again)
    let deepest: [string, readonly string[], string, boolean] | undefined;
    const settled = (walk: () => string | undefined | null): string | undefined | null => {
      for (;;) {
        deepest = undefined;
        const found = walk();
        // (set by the walk: not the `undefined` assigned above)
        const cut = deepest as [string, readonly string[], string, boolean] | undefined;
        if (cut === undefined) return found;
        const memoKey = `${crateContext}\0${typeKey}\0${String(buildIn(cut[0]))}\0${cut[0]}\0${cut[1].join('::')}\0${cut[2]}\0${cut[3]}`;
        settled(() => lookup(cut[0], cut[1], cut[2], 0, cut[3]));
        if (!rustLookups.has(memoKey)) return found;
      }
    };
    // (the lookup depends on the type only through the definition's module (itemHome) and the definition's own file)
    const typeKey = `${definition !== undefined ? type : ''}\0${file === definedInFile && local === type && rustContainers.has(type) ? type : ''}`;
    const lookup = (where: string, path: readonly string[], name: string, depth: number, publicOnly: boolean): string | undefined | null => {
      const key = `${where}\0${path.join('::')}\0${name}\0${publicOnly}`;
      // (and on the reference's build: a `#[cfg(test)] use` counts only in test code — X64-13)
      const memoKey = `${crateContext}\0${typeKey}\0${String(buildIn(where))}\0${key}`;
      if (rustLookups.has(memoKey)) {
        if (cfgChoiceLookups.has(memoKey)) cfgChoices += 1;
        return rustLookups.get(memoKey);
      }
      // (a cycle — `pub use crate::b::*;` in a, `pub use crate::a::*;` in b — binds nothing along it: null, so that the
      // glob after it is looked at — X65-06/49; past the hop limit: not known)
      if (visiting.has(key) || depth > rustChainLimit) {
        cuts += 1;
        if (visiting.has(key)) return null;
        deepest ??= [where, path, name, publicOnly];
        return undefined;
      }
      visiting.add(key);
      const before = cuts;
      const choicesBefore = choices();
      const found = lookupOnce(where, path, name, depth, publicOnly);
      visiting.delete(key);
      // (an answer cut short by a cycle is this walk's only)
      if (cuts === before) rustLookups.set(memoKey, found);
      if (cuts === before && choices() !== choicesBefore) cfgChoiceLookups.add(memoKey);
      return found;
    };
    const lookupOnce = (where: string, path: readonly string[], name: string, depth: number, publicOnly: boolean): string | undefined | null => {
      const build = buildIn(where);
      const uses = (rustFactsOf(where)?.imports ?? []).filter((raw) => !raw.modDecl && (path.length === 0 ? raw.block === undefined : raw.inlineModule === true && same(raw.modulePath, path)) && (!publicOnly || raw.reexport) && inBuild(raw, build));
      const explicit = uses.filter((raw) => raw.names.some((entry) => entry.local === name && entry.imported !== '*'));
      // (code in both builds: explicit `use`s that do not bind the name in each build — `#[cfg(test)] use …` alone —, or
      // a cfg'd glob, make the answer the builds')
      if (build === undefined && (explicit.length > 0 ? !(explicit.some((raw) => raw.cfgTest !== true) && explicit.some((raw) => raw.cfgTest !== false)) : uses.some((raw) => raw.cfgTest !== undefined && raw.names.some((entry) => entry.imported === '*')))) cfgChoices += 1;
      // (the definition's file names its type by it — unless a `use` of the file binds the name: `use crate::model::Item;
      // impl Item { … }` in imp.rs is model.rs's Item)
      if (path.length === 0 && name === type && local === type && where === definedInFile && where === file && rustContainers.has(type) && explicit.length === 0) return where;
      if (explicit.length > 0) return eitherBuild(explicit.map((raw) => followUse(where, raw, name, depth)));
      if (definesIn(where, path, publicOnly, name)) {
        // (`type Item = util::Item;`: the alias's target, not a type of the module's own — X64-03)
        // (a cfg(test)/cfg(not(test)) pair of aliases: the build's — X65-60)
        const aliases = rustFactsOf(where)?.rustLocals?.filter((entry) => entry.kind === 'alias' && entry.span === undefined && entry.name === name && same(moduleAt(where, [entry.line, entry.column]), path)) ?? [];
        const cfgs = aliases.map((entry) => rustItemCfg(where, [entry.line, entry.column]));
        if (build === undefined && cfgs.some((cfg) => cfg !== undefined)) cfgChoices += 1;
        const alias = aliases.find((_, index) => cfgs[index] === undefined || build === undefined || cfgs[index] === build);
        if (alias) return rustAliasTarget(where, alias);
        if (aliases.length === 0 || rustFactsOf(where)?.symbols.some((def) => isType(def, name) && !aliases.some((entry) => entry.line === def.line) && same(moduleAt(where, [def.line, def.column]), path))) return itemHome(where, path);
      }
      for (const raw of uses) {
        if (!raw.names.some((entry) => entry.imported === '*')) continue;
        const found = followGlob(where, raw, name, depth);
        if (found !== null) return found;
      }
      return null;
    };
    const here = line > 0 ? moduleAt(file, at) : [];
    // (the builds the reference is in — only under test, only without it, or both: `#[cfg(test)] fn f()` sees the
    // `#[cfg(test)] use …`, not the `#[cfg(not(test))] use …` of the name; code in both builds sees either, and names the
    // definition when one of them does — check-callers counts both builds: X64-13)
    const underTest = build !== undefined ? build : line > 0 && column > 0 ? rustCfgAt(file, at) : undefined;
    const inBuild = (raw: FileFacts['imports'][number], build = underTest) => raw.cfgTest === undefined || build === undefined || raw.cfgTest === build;
    // (another crate's module — the library seen from an integration test, a binary or a dependent crate — is in its
    // non-test build: `cfg(test)` is set for the crate under test only — X65-01)
    const crateOfFile = rustCrateOf?.(file);
    const buildIn = (where: string): boolean | undefined => (where === file || !rustCrateOf || rustCrateOf(where) === crateOfFile ? underTest : false);
    const eitherBuild = (answers: Array<string | undefined | null>) => (answers.includes(definedInFile) ? definedInFile : answers.includes(undefined) ? undefined : answers[0]);
    // (a name bound around the reference, not by its module: a generic parameter or an item declared in a block is
    // another type than the definition's — X64-01/04 —, an alias stands for its target — X64-02/05)
    const localHome = (entry: RustLocal): string | undefined => {
      if (entry.kind === 'alias') return rustAliasTarget(file, entry);
      if (entry.kind === 'item' && file === definedInFile && definition !== undefined && spanHolds(entry.span!, [definition.line, definition.column])) return definedInFile;
      return `${file}#${entry.kind === 'param' ? '<' : ''}${entry.name}@${entry.line}:${entry.column}`;
    };
    const byStart = (a: { span: ImportSpan }, b: { span: ImportSpan }) => b.span[0] - a.span[0] || b.span[1] - a.span[1];
    const qualifier = modulePath.replace(/(?:^|::)[A-Za-z_][A-Za-z0-9_]*$/, '');
    if (qualifier !== '' && qualifier !== '<' && !qualifier.startsWith('<')) {
      // (`Self::Item::new()`: the associated type of the impl around it, `type Item = crate::item::Item;` — or a trait's
      // `type Item;`, which each impl chooses —, not the module's `Item`: X64-05)
      if (qualifier === 'Self' && line > 0) {
        const associated = rustLocalsNamed(file, type).filter((entry) => entry.assoc && spanHolds(entry.span!, at)).map((entry) => ({ span: entry.span!, entry }));
        const innermost = associated.sort(byStart)[0];
        if (innermost) return localHome(innermost.entry);
      }
      // (`T::Item::new()` with a generic parameter bounded `T: Tr<Item = crate::util::Item>`: the binding's type — X65-51)
      const binding = line > 0 ? rustParamBinding(file, qualifier, type, at) : undefined;
      if (binding !== undefined) return binding;
      if (qualifier === 'Self' || !rustResolve || !rustPathEnd) return undefined;
      const segments = qualifier.split('::');
      // (`super::Item::new()` in `mod tests`: from that module — X63-02; `a::Item` through an inline `mod a`: X63-03)
      // (`local`: the name the path ends in — `self::super::X` for `use crate::m::Item as X;`: X65-45)
      const inFile = navigate(file, here, [...segments, local], at);
      if (inFile && inFile.rest.length === 1) return settled(() => lookup(file, inFile.path, local, 0, false)) ?? undefined;
      // (`super::super::u::Item` from `mod a { mod b { … } }`: its first segment after the climb, `u`, as the module it
      // climbs to binds it — X65-39)
      const climbed = inFile !== undefined && (segments[0] === 'self' || segments[0] === 'super');
      const scope = climbed ? inFile.path : here;
      const [first, ...rest] = climbed ? inFile.rest.slice(0, -1) : segments;
      // (the path's first segment as the scope around the reference binds it — a block's `use crate::item as util;`, the
      // inline module's —, innermost first, not by the file's first `use` of the name: X65-56)
      const inScope = (uses: Array<FileFacts['imports'][number]>) => rustUseBindings(uses.filter((raw) => same(raw.modulePath, scope) && inBuild(raw))).get(first!);
      let bound: string | undefined;
      if (line > 0) {
        for (const block of climbed ? [] : rustUseBlocksAround(file, at)) if ((bound = inScope(block.uses)) !== undefined) break;
        bound ??= inScope((loadedFiles.get(file)?.facts.imports ?? []).filter((raw) => (scope.length === 0 ? raw.block === undefined : raw.inlineModule === true)));
      } else bound = rustUseBindings(loadedFiles.get(file)?.facts.imports ?? []).get(first!);
      // (a module a glob in scope brings under another name — `use crate::fac::*;` with fac.rs's `pub use crate::item as
      // util;`: `util::Item` is item.rs's, from fac.rs — X65-34)
      let boundIn = file;
      if (bound === undefined && line > 0 && !climbed && first !== 'crate' && first !== '' && !modules(file).some((module) => same(module.path, [...scope, first!]))) {
        const scoped = [...rustUseBlocksAround(file, at).map((block) => block.uses), (loadedFiles.get(file)?.facts.imports ?? []).filter((raw) => (scope.length === 0 ? raw.block === undefined : raw.inlineModule === true))];
        for (const raw of scoped.flat()) {
          if (!same(raw.modulePath, scope) || !inBuild(raw) || !raw.names.some((name) => name.imported === '*')) continue;
          const glob = rustPathEnd(file, raw);
          // (an inline module the glob's module declares — `use crate::a::*;` then `b::Item`, lib.rs's `pub mod a { pub mod
          // b { … } }`: that module's names, X65-45 c04)
          const inline = glob ? [...glob.rest, first!] : [];
          if (glob && (rustFactsOf(glob.file)?.rustModules ?? []).some((module) => module.block === undefined && same(module.path, inline))) return settled(() => lookupIn(glob.file, [...inline, ...rest], local, 0, true)) ?? undefined;
          if (!glob || glob.rest.length > 0 || glob.file === file) continue;
          const named = rustUseBindings((rustFactsOf(glob.file)?.imports ?? []).filter((entry) => entry.reexport && entry.block === undefined)).get(first!);
          if (named === undefined) continue;
          bound = named;
          boundIn = glob.file;
          break;
        }
      }
      const full = bound === undefined ? qualifier : [bound, ...rest].join('::');
      const from = boundIn !== file ? [] : bound === undefined ? here : scope;
      const end = throughModuleReexports(rustPathEnd(boundIn, { module: full, line: 0, names: [{ imported: local, local }], reexport: false, ...(from.length > 0 ? { modulePath: from } : {}) }));
      // (a path that leads nowhere in the repository — another crate's: not the definition's)
      if (!end) return '';
      if (end.rest.length <= 1) return end.file === definedInFile && local === type ? (home(end.file) ?? definedInFile) : (settled(() => lookupIn(end.file, [], local, 0, false)) ?? undefined);
      // (`crate::item::a::Item`: an inline module of item.rs — X63-03)
      // (`super::Item` in a module file of an inline `mod inner { use crate::util::Item; mod tests2; }`: a module around
      // the reference — its private `use`s too, like `use super::*;` — X65-25)
      return settled(() => lookupIn(end.file, end.rest.slice(0, -1), local, 0, !segments.every((segment) => segment === 'super' || segment === 'self'))) ?? undefined;
    }
    // (`local`: the file's own name for the type by a renaming `use crate::item::Item as It;` — the module that `use`
    // names decides, not an item of the file named like the type: outside round X59-04)
    // (the blocks around the reference that hold a `use` — a function's body, a closure's —, innermost first, then the
    // inline module around it, whose lookup is final: it does not see the file's names)
    if (line > 0) {
      const blocks = new Map<string, Array<FileFacts['imports'][number]>>();
      for (const block of rustUseBlocksAround(file, at)) {
        const uses = block.uses.filter((raw) => same(raw.modulePath, here) && inBuild(raw));
        if (uses.length > 0) blocks.set(block.span.join(':'), uses);
      }
      // (and the generic parameters, block items and block aliases around it, in the same order: X64-01/02/04)
      const locals = rustLocalsNamed(file, local).filter((entry) => !entry.assoc && spanHolds(entry.span!, at) && same(moduleAt(file, [entry.line, entry.column]), here));
      const inner = [...[...blocks.values()].map((uses) => ({ span: uses[0]!.block!, uses })), ...locals.map((entry) => ({ span: entry.span!, entry }))].sort(byStart);
      for (const scope of inner) {
        if ('entry' in scope) return localHome(scope.entry);
        const uses = scope.uses;
        const explicit = uses.filter((raw) => raw.names.some((entry) => entry.local === local && entry.imported !== '*'));
        if (explicit.length > 0) return eitherBuild(explicit.map((raw) => settled(() => followUse(file, raw, local, 0)))) ?? undefined;
        for (const raw of uses) {
          if (!raw.names.some((entry) => entry.imported === '*')) continue;
          const found = settled(() => followGlob(file, raw, local, 0));
          if (found !== null) return found;
        }
      }
    }
    return settled(() => lookup(file, here, local, 0, false)) ?? undefined;
  };
  const boundedParameters = new Map<string, boolean>();
  /**
   * Rust: the `impl` or `trait` item around line `line` (1-based) of `file` — the nearest header above it indented less
   * than the line — as its trait and type (`impl Make for Item` → Make, Item; `impl Item` → Item; `trait T: Make` → T).
   */
  const enclosingItem = (file: string, line: number, column = 0): { trait?: string; type?: string; path?: string } | undefined => {
    // (from the syntax tree when the file's facts have its impls: a one-line `impl Default for Item { fn default() -> Self
    // { Self::new() } }` or an unindented body is the impl around the reference — X63-12)
    const impls = loadedFiles.get(file)?.facts.rustImpls;
    if (impls) {
      let inner: (typeof impls)[number] | undefined;
      for (const impl of impls) if (spanHolds(impl.span, [line, column]) && (!inner || impl.span[0] > inner.span[0] || (impl.span[0] === inner.span[0] && impl.span[1] > inner.span[1]))) inner = impl;
      if (!inner) return undefined;
      return { ...(inner.trait !== undefined ? { trait: inner.trait } : {}), ...(inner.type !== undefined ? { type: inner.type, path: inner.path! } : {}) };
    }
    const text = lines.get(file);
    if (!text) return undefined;
    const indent = (entry: string) => /^\s*/.exec(entry)![0].length;
    const own = indent(text[line - 1] ?? '');
    for (let index = line - 2; index >= 0; index -= 1) {
      const entry = text[index]!;
      if (entry.trim() === '' || indent(entry) >= own) continue;
      if (!/^\s*(?:pub(?:\s*\([^)]*\))?\s+)?(?:unsafe\s+)?(?:impl|trait)\b/.test(entry)) continue;
      const header = text.slice(index, index + 6).join(' ').split('{')[0]!;
      const traitItem = /\btrait\s+([A-Za-z_][A-Za-z0-9_]*)/.exec(header);
      if (traitItem && !/\bimpl\b/.test(header)) return { trait: traitItem[1]! };
      const implItem = /\bimpl\s*(?:<(?:[^<>]|<[^<>]*>)*>)?\s*(?:((?:[A-Za-z_][A-Za-z0-9_]*::)*[A-Za-z_][A-Za-z0-9_]*)\s*(?:<(?:[^<>]|<[^<>]*>)*>)?\s+for\s+)?((?:[A-Za-z_][A-Za-z0-9_]*::)*)([A-Za-z_][A-Za-z0-9_]*)/.exec(header);
      return implItem ? { ...(implItem[1] ? { trait: lastSegment(implItem[1].replace(/::/g, '.')) } : {}), type: implItem[3]!, path: `${implItem[2]!}${implItem[3]!}` } : undefined;
    }
    return undefined;
  };
  // (whether the file bounds a type parameter `type` by a trait of the family — `<T: Make>`, `where T: Clone + Make`, a
  // trait's `type Item: Make;` — in the file, not its item: once per file and type, the file's text searched whole)
  const boundedByTrait = (file: string, type: string): boolean => {
    const boundKey = `${file}\0${type}`;
    let bounded = boundedParameters.get(boundKey);
    if (bounded === undefined) {
      const traitNames = rustTraitNamesIn(file);
      const text = (lines.get(file) ?? []).join('\n');
      // (a bound list's other traits may take generic arguments: `U: Into<String> + Make`, X58-22)
      bounded = new RegExp(`(?<![\\w:])${type}\\s*:(?!:)(?:[\\w\\s:+?']|<[^<>{};=]*(?:<[^<>{};=]*>[^<>{};=]*)*>)*?(?<![\\w])(?:${traitNames})\\b(?!\\s*::)`).test(text);
      boundedParameters.set(boundKey, bounded);
    }
    return bounded;
  };
  // (Rust: the file defining the type of the definition's inherent impl when it is not the definition's file — `use
  // crate::model::Item; impl Item { pub fn new… }` in imp.rs: model.rs — the type a use names by its file; a trait's impl
  // — `impl Make for crate::item::Item` — is not the type's own method)
  const definitionTypeHomes = new Map<string, string | undefined>();
  const isDefinitionHome = (home: string, type: string): boolean => {
    if (home === definedInFile) return true;
    if (!definitionTypeHomes.has(type)) {
      definitionTypeHomes.set(type, undefined);
      const definition = definerSymbols.find((def) => def.name === symbol && def.kind === 'method' && def.container !== undefined && lastSegment(def.container.replace(/<.*$/, '').replace(/::/g, '.')) === type);
      let impl: NonNullable<FileFacts['rustImpls']>[number] | undefined;
      for (const candidate of loadedFiles.get(definedInFile!)?.facts.rustImpls ?? []) if (definition && spanHolds(candidate.span, [definition.line, definition.column]) && (!impl || candidate.span[0] > impl.span[0] || (candidate.span[0] === impl.span[0] && candidate.span[1] > impl.span[1]))) impl = candidate;
      if (definition && impl && impl.trait === undefined) definitionTypeHomes.set(type, rustTypeHome(definedInFile!, type, impl.path ?? type, definition.line, type, definition.column));
    }
    return definitionTypeHomes.get(type) === home;
  };
  const associatedOf = (modulePath: string, file: string, line = 0, column = 0): boolean => {
    const type = /([A-Za-z_][A-Za-z0-9_]*)$/.exec(modulePath)?.[1];
    // (a primitive type's, `u32::build(7)`, is a trait's method like any type's: outside round X59-08)
    if (rustContainers.size === 0 || type === undefined || (!/^[A-Z]/.test(type) && !rustPrimitive.test(modulePath))) return true;
    if (rustContainers.has(type)) {
      // (the type the reference's file means by that name must be the definition's: outside rounds X57-11, X58-03/19/21)
      const home = rustTypeHome(file, type, modulePath, line, type, column);
      // (a type parameter named like the type, `fn f<Item: Make>()`, `Self::Item` of a trait's `type Item: Make;`: the
      // trait's method when bounded by it, no type's own — X64-01/05)
      if (home !== undefined && home.includes('#<')) return rustTraits.size > 0 && boundedByTrait(file, type);
      return home === undefined || isDefinitionHome(home, type);
    }
    // (`Self::new()`: in a file with an impl of the definition's type — the impl a reference is in is not known here)
    // (also a subtrait's default method calling the trait's: `trait MakeNamed: Make { fn fresh() -> Self { Self::build(0) } }`,
    // outside round X58-25)
    // (`Self` is the type of the enclosing `impl` — or the trait, in a trait's default method: outside round X59-15)
    if (type === 'Self' && line > 0) {
      const item = enclosingItem(file, line, column);
      if (item?.trait !== undefined && (rustContainers.has(item.trait) || rustTraitFamily().has(item.trait)) && rustTraitHomeOk(file, item.trait, item.trait, line)) return true;
      if (item?.type !== undefined) {
        // (`impl U` / `impl Al` for `use crate::util::Item as U;` / `type Al = crate::util::Item;`: as `U::new()` is — X65-30)
        if (!rustContainers.has(item.type)) return /^[A-Z]/.test(item.type) && item.type !== 'Self' && associatedOf(item.path!, file, line, column);
        // (the impl's path from where it is written: `impl super::super::u::Item` in `mod a { mod b { … } }` — X65-39)
        const home = rustTypeHome(file, item.type, item.path!, line, item.type, column);
        return home === undefined || isDefinitionHome(home, item.type);
      }
      if (item?.trait !== undefined) return false;
    }
    if (type === 'Self') return loadedFiles.get(file)?.facts.symbols.some((def) => def.kind === 'method' && def.container !== undefined && (rustContainers.has(lastSegment(def.container.replace(/<.*$/, ''))) || rustTraitFamily().has(lastSegment(def.container.replace(/<.*$/, ''))))) ?? true;
    // (`Self::Out::new()` with `type Out = Self;` — or another path — in the impl around it: as its target is — X65-55)
    if (line > 0 && modulePath === `Self::${type}`) {
      let assoc: RustLocal | undefined;
      for (const entry of rustLocalsNamed(file, type)) if (entry.assoc && entry.kind === 'alias' && spanHolds(entry.span!, [line, column]) && (!assoc || entry.span![0] > assoc.span![0] || (entry.span![0] === assoc.span![0] && entry.span![1] > assoc.span![1]))) assoc = entry;
      if (assoc?.target !== undefined && assoc.target !== type && /^[A-Za-z_][A-Za-z0-9_:]*$/.test(assoc.target)) return associatedOf(assoc.target, file, line, column);
    }
    // (`use crate::model::Item as Thing;` … `Thing::new()`: the type under the file's own name for it)
    const renamed = loadedFiles.get(file)?.facts.imports.filter((raw) => raw.inlineModule || !rustBlockElsewhere(raw.block, modulePath, line, column)).flatMap((raw) => raw.names).find((name) => name.local === type && rustContainers.has(lastSegment(name.imported)));
    if (renamed) {
      const imported = lastSegment(renamed.imported);
      if (rustTraits.has(imported) || rustTraitFamily().has(imported)) return rustImportHomeOk(file, type);
      // (a type: the file the `use` leads to must be the definition's — `use crate::item::Item as It;` is item.rs's
      // `Item`, not util.rs's: outside round X59-04)
      const home = rustTypeHome(file, imported, modulePath, line, type, column);
      return home === undefined || isDefinitionHome(home, imported);
    }
    const aliased = rustTypeAliases().get(type);
    if (aliased) {
      // (the name as the scope around the reference binds it — a glob's, a block's renaming —, when that is known and is
      // no file of the definition's type: another type, whatever other files call by that name — X65-62)
      const bound = line > 0 ? rustTypeHome(file, type, modulePath, line, type, column) : undefined;
      if (bound !== undefined && bound !== '' && ![...rustContainers].some((name) => isDefinitionHome(bound, name))) return false;
      return rustAliasDeclarations(file, type, modulePath, aliased, line, column).some((declaration) => {
        const home = rustAliasHome(declaration);
        return home === undefined || isDefinitionHome(home, declaration.type);
      });
    }
    // A trait's method (outside round X57-13): `T::build()` on a type parameter bounded by the trait (`<T: Make>`,
    // `where T: Clone + Make` — in the reference's file, not its item: per file), or `Item::build()` on a type with an
    // `impl Make for Item` in a file that names the method (the impl's own `fn build`, unless the trait's default is used)
    if (rustTraits.size === 0) return false;
    if (boundedByTrait(file, type)) return true;
    // (an implementing type under another name, `pub use item::Item as Thing;`: X59-02)
    const implementedAliases = rustImplementers().has(type) ? undefined : rustTypeAliases([...rustImplementers().keys()].filter((name) => name !== '*')).get(type);
    if (implementedAliases) {
      return rustAliasDeclarations(file, type, modulePath, implementedAliases).some((declaration) => {
        const home = rustAliasHome(declaration);
        const implemented = rustImplementers().get(declaration.type) ?? [];
        return home === undefined || implemented.some((candidate) => candidate === undefined || candidate === home);
      });
    }
    const homes = rustImplementers().get(type) ?? rustImplementers().get('*');
    if (!homes) return false;
    const home = rustTypeHome(file, type, modulePath, line);
    return home === undefined || homes.some((implemented) => implemented === undefined || implemented === home);
  };
  // `#[macro_use] extern crate shelfcore;` in a crate's root brings its exported macros into every module of that crate
  // (X58-07): the root of a file's crate — an integration test or `src/bin/` file is its own — read for that line
  const externRoots = new Map<string, boolean>();
  let allPathSet: Set<string> | undefined;
  const externMacroUse = (file: string): boolean => {
    if (exportedMacroCrate === undefined || !file.endsWith('.rs')) return false;
    allPathSet ??= new Set(listing?.allPaths ?? []);
    let root: string | undefined;
    for (let dir = path.posix.dirname(file); ; dir = path.posix.dirname(dir)) {
      const at = (name: string) => (dir === '.' ? name : `${dir}/${name}`);
      if (allPathSet.has(at('Cargo.toml'))) {
        const relative = dir === '.' ? file : file.slice(dir.length + 1);
        root = /^(?:tests|benches|examples)\/[^/]+\.rs$|^src\/bin\/[^/]+\.rs$/.test(relative) ? file : [at('src/lib.rs'), at('src/main.rs')].find((candidate) => byPath.has(candidate));
        break;
      }
      if (dir === '.' || dir === '/') break;
    }
    if (root === undefined) return false;
    let answer = externRoots.get(root);
    if (answer === undefined) {
      const text = readTexts(context, byPath.has(root) ? [byPath.get(root)!] : []).get(root) ?? '';
      answer = new RegExp(`#\\[\\s*macro_use\\s*\\]\\s*extern\\s+crate\\s+${exportedMacroCrate}\\b`).test(text);
      externRoots.set(root, answer);
    }
    return answer;
  };
  // (`<T as Make>::build`: the trait named must be the family's as the file names it — not another trait of that name,
  // `other::Make`, nor another trait: X59-01; undefined when the path is no such qualified path)
  const rustAsTrait = (file: string, before: string, line: number): boolean | undefined => {
    if (rustTraits.size === 0 || !memberAnywhere) return undefined;
    // (`<T>::build`: T's, like `T::build`)
    const bare = /<\s*([A-Za-z_][A-Za-z0-9_]*)\s*>\s*::\s*$/.exec(before);
    if (bare && (before.length === bare.index || !/[\w>:]/.test(before.charAt(bare.index - 1)))) return associatedOf(bare[1]!, file, line);
    const named = /\bas\s+((?:[A-Za-z_][A-Za-z0-9_]*\s*::\s*)*)([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^<>]*>\s*)?>\s*::\s*$/.exec(before);
    if (!named) return undefined;
    const trait = named[2]!;
    const path = `${named[1]!.replace(/\s+/g, '')}${trait}`;
    // (a qualified path, `<T as crate::make::Make>`, decides by itself; an unqualified name must be one the file gives the family)
    if (named[1] !== '' && rustTraitFamily().has(trait)) return rustTraitHomeOk(file, trait, path, line);
    return new RegExp(`^(?:${rustTraitNamesIn(file)})$`).test(trait);
  };
  // (a generic parameter's associated type bound in its item — `fn f<T: Tr<Item = crate::util::Item>>()`, a `where`
  // clause —: the file defining the bound type, from the parameter's place; undefined when `param` is no generic
  // parameter around the position or binds no `name =`: X65-51)
  const rustParamBinding = (file: string, param: string, name: string, at: [number, number]): string | undefined => {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(param)) return undefined;
    const entry = rustLocalsNamed(file, param).find((candidate) => candidate.kind === 'param' && candidate.assoc !== true && spanHolds(candidate.span!, at));
    if (!entry) return undefined;
    const text = (lines.get(file) ?? []).slice(entry.span![0] - 1, entry.span![2]).join('\n');
    const binding = new RegExp(`(?<![\\w:])${param}\\s*:[^{;]*?(?<![\\w:])${name}\\s*=\\s*((?:[A-Za-z_][A-Za-z0-9_]*::)*([A-Za-z_][A-Za-z0-9_]*))`).exec(text);
    if (!binding) return undefined;
    return rustTypeHome(file, binding[2]!, binding[1]!, entry.line, binding[2]!, entry.column);
  };
  // (`<Self as Tr>::Item::new()`, `<Z as Tr>::Item::new()`: the associated type `Item` of the impl of Tr for that type —
  // its `type Item = crate::item::Item;` —, not the module's `Item`; undefined when no such impl or alias is read: X65-04)
  const rustProjected = (file: string, before: string, line: number, column: number): boolean | undefined => {
    const projected = /<\s*([A-Za-z_][A-Za-z0-9_]*)\s+as\s+(?:[A-Za-z_][A-Za-z0-9_]*\s*::\s*)*([A-Za-z_][A-Za-z0-9_]*)\s*(?:<[^<>]*>\s*)?>\s*::\s*([A-Za-z_][A-Za-z0-9_]*)\s*::\s*$/.exec(before);
    if (!projected) return undefined;
    const [, self, trait, assoc] = projected as unknown as [string, string, string, string];
    const impls: Array<{ file: string; span: ImportSpan }> = [];
    if (self === 'Self') {
      let inner: { span: ImportSpan; trait?: string } | undefined;
      for (const impl of loadedFiles.get(file)?.facts.rustImpls ?? []) if (spanHolds(impl.span, [line, column]) && (!inner || impl.span[0] > inner.span[0] || (impl.span[0] === inner.span[0] && impl.span[1] > inner.span[1]))) inner = impl;
      if (inner?.trait === trait) impls.push({ file, span: inner.span });
    } else {
      for (const item of loadedFiles.values()) for (const impl of item.facts.rustImpls ?? []) if (impl.trait === trait && impl.type === self) impls.push({ file: item.entry.file, span: impl.span });
    }
    // (another associated type than the definition's type name — `<Self as Tr>::Out::new()` with `type Out = Self;` in that
    // impl —: as its target is, read at the alias — X65-55, c20)
    if (!rustContainers.has(assoc)) {
      for (const impl of impls.sort((a, b) => Number(b.file === file) - Number(a.file === file))) {
        const alias = rustLocalsNamed(impl.file, assoc).find((entry) => entry.assoc === true && entry.kind === 'alias' && spanHolds(impl.span, [entry.line, entry.column]));
        if (alias?.target !== undefined && alias.target !== assoc && /^[A-Za-z_][A-Za-z0-9_:]*$/.test(alias.target)) return associatedOf(alias.target, impl.file, alias.line, alias.column);
      }
      return undefined;
    }
    if (impls.length === 0 && self !== 'Self') {
      const bound = rustParamBinding(file, self, assoc, [line, column]);
      if (bound !== undefined) return isDefinitionHome(bound, assoc);
    }
    for (const impl of impls.sort((a, b) => Number(b.file === file) - Number(a.file === file))) {
      const alias = rustLocalsNamed(impl.file, assoc).find((entry) => entry.assoc === true && entry.kind === 'alias' && spanHolds(impl.span, [entry.line, entry.column]));
      if (!alias) continue;
      const home = rustAliasTarget(impl.file, alias);
      return home === undefined ? undefined : isDefinitionHome(home, assoc);
    }
    return undefined;
  };
  const rustValueDefinition = definerSymbols.some((def) => def.name === symbol && (def.kind === 'function' || def.kind === 'method' || def.kind === 'macro' || def.kind === 'constant' || def.kind === 'variable')) && !definerSymbols.some((def) => def.name === symbol && (def.kind === 'module' || def.kind === 'struct' || def.kind === 'enum' || def.kind === 'trait' || def.kind === 'type'));
  // (a child module of a module redefining the macro, declared after the redefinition: X59-06)
  // (one answer per redefining module and child: its text is read once)
  const shadowedChildren = new Map<string, boolean>();
  const macroShadowed = (file: string): boolean =>
    macroShadows.some((shadow) => {
      if (!file.startsWith(shadow.children)) return false;
      const child = file.slice(shadow.children.length).split('/')[0]!.replace(/\.rs$/, '');
      const key = `${shadow.file}\0${child}`;
      let answer = shadowedChildren.get(key);
      if (answer === undefined) {
        const text = readTexts(context, byPath.has(shadow.file) ? [byPath.get(shadow.file)!] : []).get(shadow.file) ?? '';
        const declared = new RegExp(`^[ \\t]*(?:#\\[[^\\]]*\\]\\s*)*(?:pub(?:\\s*\\([^)]*\\))?\\s+)?mod\\s+${child}\\s*;`, 'm').exec(text);
        answer = declared === null || text.slice(0, declared.index).split('\n').length > shadow.line;
        shadowedChildren.set(key, answer);
      }
      return answer;
    });
  // (a bare invocation of a `macro_rules!` macro reaches it by textual scope — below — or by a `use` of it, never by a
  // `mod` declaration: `pub mod net;` in lib.rs does not bring net/mod.rs's macro into lib.rs — X59-06)
  const macroDefinition = definerSymbols.some((def) => def.name === symbol && def.kind === 'macro');
  const usesDefinition = (file: string): boolean => {
    const item = loadedFiles.get(file);
    return item?.facts.imports.some((raw) => !raw.modDecl && raw.names.some((name) => name.imported === '*' || lastSegment(name.imported) === symbol) && importsSource(item, raw)) ?? false;
  };
  const importedByUse = (file: string): boolean => isSource(file) || usesDefinition(file);
  for (const [reference, checkedImported] of rustChecked) {
    const before = textBefore(lines.get(reference.file), reference);
    const modulePath = rustPath(before);
    const invoked = /^\s*!/.test((lines.get(reference.file)?.[reference.line - 1] ?? '').slice(reference.column - 1 + reference.name.length));
    const imported = macroDefinition && modulePath === undefined && invoked ? checkedImported && importedByUse(reference.file) : checkedImported;
    // `crate::defs::make`: the path decides (an associated function `Type::make` of a method definition: any type's);
    // an unqualified `make`: the file's imports do; `<T as Tr>::make`: only for a method, or where the imports reach it.
    const keep =
      reference.kind === 'method-call'
        ? imported || memberAnywhere
        : modulePath === undefined
          ? imported
          : modulePath === null
            ? (rustProjected(reference.file, before, reference.line, reference.column) ?? rustAsTrait(reference.file, before, reference.line) ?? (imported || memberAnywhere))
            : // `W::make()`, `crate::defs::W::make()`: a type's associated function (types are CamelCase, modules snake_case) —
              // the definition's type's, `Self`'s or a trait's (`Tr::make`), not another type's (`MemoryStore::new()` is no
              // use of `Item::new`: outside round X54-08)
              (memberAnywhere && associatedOf(modulePath, reference.file, reference.line, reference.column)) || (!/(?:^|::)[A-Z][A-Za-z0-9_]*$/.test(modulePath) && rustPathReaches!(reference.file, modulePath));
    // (a bare `items!` where `#[macro_use] mod macros;` put the macro in scope: X57-12)
    // (not in a file with a `macro_rules!` of its own of that name, which shadows it there: X58-04)
    const macroInScope =
      modulePath === undefined &&
      ((macroUseScope.some((scope) => (scope.endsWith('/') ? reference.file.startsWith(scope) : reference.file === scope)) && !macroExcluded.some((scope) => (scope.endsWith('/') ? reference.file.startsWith(scope) : reference.file === scope))) || externMacroUse(reference.file)) &&
      (reference.file === definedInFile || !(loadedFiles.get(reference.file)?.facts.symbols.some((def) => def.name === symbol && def.kind === 'macro') ?? false)) &&
      !macroShadowed(reference.file) &&
      /^\s*!/.test((lines.get(reference.file)?.[reference.line - 1] ?? '').slice(reference.column - 1 + reference.name.length));
    // (a path segment of the definition's name — `crate::seed::Seed`, `render::render(…)`'s first `render` — is the
    // module of that name, not a function, method, macro or constant: outside round X58-26; `seed::<T>()` is a call)
    if (!keep && !macroInScope) unqualified.add(reference);
  }
  // (a bare invocation in the other crate of the directory — `src/main.rs` and its modules for a lib.rs macro — is that
  // crate's own macro or none: X59-05)
  for (const reference of macroExcluded.length > 0 ? references : []) {
    // (unless that file imports the definition by a `use`: `use mac::ensure;` in main.rs then `ensure!` — a
    // `#[macro_export]` macro of lib.rs: X59-05 follow-up, found with X59-07)
    if (!macroExcluded.some((scope) => (scope.endsWith('/') ? reference.file.startsWith(scope) : reference.file === scope)) || reference.kind === 'import' || usesDefinition(reference.file) || externMacroUse(reference.file)) continue;
    const line = lines.get(reference.file)?.[reference.line - 1] ?? '';
    if (/^\s*!/.test(line.slice(reference.column - 1 + reference.name.length)) && rustPath(textBefore(lines.get(reference.file), reference)) === undefined) unqualified.add(reference);
  }
  // (a path segment of the definition's name — `crate::seed::Seed`, `render::render(…)`'s first `render` — is the module
  // of that name, not the function, method, macro or constant; `seed::<T>()` is a call — and `use crate::render;` in a
  // path that does not reach the definition's file imports the module `render`: outside round X58-26)
  if (rustValueDefinition && definedInFile !== undefined) {
    const moduleName = path.posix.basename(definedInFile) === 'mod.rs' ? path.posix.basename(path.posix.dirname(definedInFile)) : path.posix.basename(definedInFile, '.rs');
    for (const reference of references) {
      if (!reference.file.endsWith('.rs') || unqualified.has(reference)) continue;
      const line = lines.get(reference.file)?.[reference.line - 1] ?? '';
      const after = line.slice(reference.column - 1 + reference.name.length);
      if (/^\s*::\s*(?!<)/.test(after)) {
        unqualified.add(reference);
        continue;
      }
      if (reference.kind !== 'import' || moduleName !== symbol) continue;
      const prefix = rustPath(textBefore(lines.get(reference.file), reference));
      if (typeof prefix !== 'string' || prefix === '' || !rustResolve) continue;
      const [first, ...rest] = prefix.split('::');
      const bound = rustUseBindings(loadedFiles.get(reference.file)?.facts.imports ?? []).get(first!);
      const parents = rustResolve(reference.file, { module: bound === undefined ? prefix : [bound, ...rest].join('::'), line: 0, names: [], reexport: false });
      // (the path's module is a file that neither is the definition's nor re-exports the name: the name is its child module)
      const reexports = (file: string) => loadedFiles.get(file)?.facts.imports.some((raw) => raw.reexport && raw.names.some((name) => name.local === symbol)) ?? false;
      if (parents.length > 0 && !parents.includes(definedInFile) && !parents.some(reexports)) unqualified.add(reference);
    }
  }
  if (goNaming) {
    for (const reference of references) {
      const naming = goNaming.get(reference.file);
      if (!naming) continue;
      // A struct literal's key names a field: the definition's when it is one, never a function's or a variable's
      // (or a type's: an embedded field `User{Base: …}` is named by its type — X51-03)
      if (reference.fieldKey) {
        if (!fieldDefinition && !typeDefinition) unqualified.add(reference);
        continue;
      }
      // (a method, or an interface's method or a field the file declares: any `x.Name` may use it — no types here;
      // an unqualified use names it only inside its package)
      if (memberAnywhere && reference.kind === 'method-call') continue;
      const qualifier = selectorQualifier(textBefore(lines.get(reference.file), reference));
      // (Go has no implicit receiver: a bare `Name` is no method or field, nor is the package's own `pkg.Name`)
      // (`pkg.Name` as the extraction tells it — a local named like the package is an object: X51-02/09)
      if (memberOnly && (qualifier === undefined || reference.packageMember || reference.kind === 'call')) {
        unqualified.add(reference);
        continue;
      }
      // (a local named like the package is an object: X52-12)
      const names = qualifier === undefined ? naming.unqualified : !goTopLevel || (qualifier !== null && naming.qualifiers.has(qualifier) && !reference.localObject);
      if (!names) unqualified.add(reference);
      // (`utility.Make()` through an unaliased import of a package named unlike its directory: the extraction took
      // `utility` for a value; it is the package — a call)
      else if (reference.kind === 'method-call' && qualifier !== undefined && qualifier !== null && naming.qualifiers.has(qualifier) && !reference.localObject) reference.kind = 'call';
    }
  }
  if (pythonModuleLevel) {
    // E46 (check-test-cascade): `car.make`, `self.make`: an attribute of an object no import binds is not the module's `make` (outside attack
    // X47-22: check-test-cascade failed a wave on `assert car.make == …`). Kept: `defs.make` after `import pkg.defs
    // as defs`, `pkg.defs.make`, any chain whose start is not a plain name (`f().make`), files with a star import.
    // The root must be bound, where the reference is, by an import that reaches the definition: `from pkg import other
    // as models; models.Foo()` names other's Foo even when pkg's __init__ re-exports the definition (outside round X51-13).
    const views = new Map<string, ReturnType<typeof importViews>>();
    for (const item of loaded) if (item.entry.lang === 'python') views.set(item.entry.file, importViews(item));
    for (const reference of references) {
      const view = views.get(reference.file)?.find((candidate) => !candidate.holds || candidate.holds(reference.line, reference.column));
      if (view === undefined || reference.kind === 'import' || reference.kind === 'reexport') continue;
      if (view.item.facts.imports.some((raw) => raw.names.some((name) => name.local === '*'))) continue;
      const root = attributeRoot(textBefore(lines.get(reference.file), reference));
      if (root === undefined || root === null) continue;
      const binding = view.item.facts.imports.find((raw) => raw.names.some((name) => name.local === root));
      if (!binding || !pythonRootReaches(view.item, binding, root)) unqualified.add(reference);
    }
  }
  // Rust, a macro definition (with definedIn): its invocations `items!(…)` and the paths that import it, not a field or
  // a function named like it (`self.items`: outside round X54-11)
  if (definerSymbols.length > 0 && definerSymbols.some((def) => def.name === symbol && def.kind === 'macro') && !definerSymbols.some((def) => def.name === symbol && def.kind !== 'macro')) {
    for (const reference of references) {
      if (reference.kind === 'import' || reference.kind === 'reexport' || !reference.file.endsWith('.rs')) continue;
      const after = (lines.get(reference.file)?.[reference.line - 1] ?? '').slice(reference.column - 1 + reference.name.length);
      if (!/^\s*!/.test(after)) unqualified.add(reference);
    }
  }
  // Python, with definedIn: a segment of an import's module path (`from app.db import connect`, `import app.db`) names a
  // module or package, never a function or class defined somewhere (outside round X57-05: a use of main.py's `db`, and
  // detect-cascades proposed a high "import of renamed symbol" edit of the module path)
  if (opts.definedIn !== undefined) {
    for (const reference of references) {
      if (reference.kind !== 'import' || !reference.file.endsWith('.py')) continue;
      const before = textBefore(lines.get(reference.file), reference);
      if (/(?:^|;)\s*from\s+\.*(?:[\p{L}_][\p{L}\p{N}_]*\s*\.\s*)*$/u.test(before) || /(?:^|;)\s*import\s+(?:[^#;]*,\s*)?(?:[\p{L}_][\p{L}\p{N}_]*\s*\.\s*)+$/u.test(before)) unqualified.add(reference);
    }
  }
  if (unqualified.size > 0) references.splice(0, references.length, ...references.filter((reference) => !unqualified.has(reference)));
  for (const reference of references) reference.context = lineAt(lines.get(reference.file), reference.line, reference.column);
  // A Python function of that name may be a pytest fixture: its uses are parameters named like it (pytest-fixtures.ts).
  // So may another function registered under the name by `@pytest.fixture(name="…")` (outside round X57-02): when a
  // test file or conftest.py holds the name, the files are read for one.
  if (loaded.some((item) => item.entry.lang === 'python' && (item.facts.symbols.some((def) => def.name === symbol && def.kind === 'function') || /(?:^|\/)(?:test_[^/]*|[^/]*_test|conftest)\.py$/.test(item.entry.file)))) {
    const python = loaded.filter((item) => item.entry.lang === 'python').map((item) => item.entry.file);
    for (const use of fixtureUsesIn(context.root, python, symbol, opts.definedIn?.replace(/^\.\//, ''), prefetched)) if (!reportIn || reportIn.has(use.file)) references.push(use);
  }
  references.sort((a, b) => (a.file !== b.file ? (a.file < b.file ? -1 : 1) : a.line - b.line || a.column - b.column));
  return references;
}
