import type { Git } from '../git/git-port.js';
import type { ImplManifest, WiringDeclaration } from '../protocol/schema/impl-schema.js';
import { blobSpec, readBlobs } from './read-blobs.js';
import type { ReferenceIndex } from './reference-index.js';
import { isBinaryText, lexSource, lineAt, type LexedSource } from './source-lexer.js';

/**
 * E35 Layer 3B: every `wiring:` declaration's `must_be_called_from` file, read from git at `ref`,
 * must call (or, for `append`/`register`/`inject`/`prop-pass` obligations, at least reference)
 * its `symbol`. Language-aware and on code only (a call in a comment or string does not count):
 * - all languages: `symbol(`, `.symbol(`, `symbol?.(`, `symbol<T>(`, `symbol[T](`, not a definition
 *   (`function symbol(`, `def symbol(`, `fn symbol(`, `func symbol(`);
 * - TS/JS: JSX prop `symbol={…}`/`symbol="…"`, `props.symbol`, JSX element `<Symbol`;
 * - Python: decorator `@symbol` / `@module.symbol`;
 * - Rust: `::symbol` paths, `symbol!(` macros.
 * For `append`, `register`, `inject` and `prop-pass` obligations a value reference outside import
 * lines also satisfies (`handlers = append(handlers, MyHandler)` registers without calling).
 * Declarations are checked regardless of wave (as Go does) unless `wave` is given.
 */

/** One unmet declaration (impl-manifest.schema.json `WiringGap`). */
export interface WiringGap {
  declaration: WiringDeclaration;
  reason: string;
  /** Always `error` for declared but missing wiring (E35). */
  severity: 'error';
}

/** impl-manifest.schema.json `WiringValidationData`. */
export interface WiringReport {
  gaps: WiringGap[];
  valid: boolean;
  summary: string;
}

export interface ValidateWiringOptions {
  manifest: ImplManifest;
  git: Git;
  /** Where the wiring must be visible: the merge result or a branch. */
  ref: string;
  /** A reference index built at `ref` earlier in the run: files that do not even mention the symbol are decided without reading them. */
  index?: ReferenceIndex;
  /** Only the declarations of this wave. */
  wave?: number;
}

const valuePatterns = new Set(['append', 'register', 'inject', 'prop-pass']);

/** E35 Layer 3B; see the module comment. */
export async function validateWiring(options: ValidateWiringOptions): Promise<WiringReport> {
  const declarations = (options.manifest.wiring ?? []).filter((declaration) => options.wave === undefined || declaration.wave === options.wave);
  const index = options.index && (options.index.ref === options.ref || options.index.commit === options.ref) ? options.index : undefined;
  const texts = await readBlobs(
    options.git,
    declarations.filter((declaration) => (declaration.must_be_called_from ?? '') !== '').map((declaration) => blobSpec(options.ref, declaration.must_be_called_from!)),
  );

  const gaps: WiringGap[] = [];
  const lexed = new Map<string, LexedSource>();
  for (const declaration of declarations) {
    const file = declaration.must_be_called_from ?? '';
    const symbol = declaration.symbol ?? '';
    const text = file === '' ? undefined : texts.get(blobSpec(options.ref, file));
    if (text === undefined || isBinaryText(text)) {
      gaps.push({ declaration, reason: `could not read file ${file}: ${text === undefined ? `not found at ${options.ref}` : 'binary file'}`, severity: 'error' });
      continue;
    }
    // The index tokenizes exactly like the checks below: no token in the file, no possible call.
    const knownMissing = index !== undefined && index.hasFile(file) && !index.fileMentions(file, symbol);
    let source = lexed.get(file);
    if (!knownMissing && !source) {
      source = lexSource(file, text);
      lexed.set(file, source);
    }
    if (knownMissing || !source || symbol === '' || !symbolWired(source, symbol, declaration.integration_pattern)) {
      gaps.push({ declaration, reason: `symbol ${JSON.stringify(symbol)} not found as a call in ${file}`, severity: 'error' });
    }
  }
  const valid = gaps.length === 0;
  return {
    gaps,
    valid,
    summary: valid ? `all ${declarations.length} wiring declarations satisfied` : `${gaps.length} wiring gap(s) found in ${declarations.length} declarations`,
  };
}

/** True when the (lexed) file calls — or for value patterns references — `symbol` in code. */
export function symbolWired(source: LexedSource, symbol: string, integrationPattern?: string): boolean {
  const code = source.code;
  const name = escapeRegExp(symbol);
  const before = '(?<![\\w$])';
  const after = '(?![\\w$])';
  const definition = /(?:\bfunction\s*\*?\s*|\bdef\s+|\bfn\s+|\bfunc\s+(?:\([^)]*\)\s*)?|\bclass\s+|\binterface\s+|\btype\s+)$/;
  const callPattern = new RegExp(`${before}${name}\\s*(?:<[^<>()\\n]*>\\s*)?(?:\\[[^\\]\\n]*\\]\\s*)?(?:\\?\\.\\s*)?\\(`, 'g');
  if (someOutsideDefinitions(source, callPattern, definition)) return true;
  const language = source.language;
  const patterns: RegExp[] = [];
  if (language === 'typescript' || language === 'javascript') {
    // JSX attribute `symbol={…}` / `symbol="…"` (no space before `=`: `symbol = {` is an assignment).
    const jsxProp = new RegExp(`${before}${name}=[{"']`, 'g');
    if (someOutsideDefinitions(source, jsxProp, /\b(?:const|let|var)\s+$/)) return true;
    patterns.push(new RegExp(`\\bprops\\s*(?:\\?\\.|\\.)\\s*${name}${after}`), new RegExp(`<${name}(?=[\\s/>])`));
  } else if (language === 'python') {
    patterns.push(new RegExp(`@\\s*(?:[\\w.]+\\.)?${name}${after}`));
  } else if (language === 'rust') {
    patterns.push(new RegExp(`::\\s*${name}${after}`), new RegExp(`${before}${name}!\\s*[([{]`));
  }
  if (patterns.some((pattern) => pattern.test(code))) return true;
  if (integrationPattern !== undefined && valuePatterns.has(integrationPattern)) return valueReferenced(source, symbol);
  return false;
}

/** True when `pattern` (global) matches somewhere not preceded, on its line, by `definition`. */
function someOutsideDefinitions(source: LexedSource, pattern: RegExp, definition: RegExp): boolean {
  for (const match of source.code.matchAll(pattern)) {
    const lineStart = source.lineStarts[lineAt(source, match.index) - 1]!;
    if (!definition.test(source.code.slice(lineStart, match.index))) return true;
  }
  return false;
}

/** A use of `symbol` as a value: an identifier occurrence outside import lines and definitions. */
function valueReferenced(source: LexedSource, symbol: string): boolean {
  const code = source.code;
  const imports = importRanges(source);
  const occurrence = new RegExp(`(?<![\\w$])${escapeRegExp(symbol)}(?![\\w$])`, 'g');
  const definition = /(?:\bfunction\s*\*?\s*|\bdef\s+|\bfn\s+|\bfunc\s+(?:\([^)]*\)\s*)?|\bclass\s+|\binterface\s+|\btype\s+|\b(?:const|let|var|static)\s+)$/;
  for (const match of code.matchAll(occurrence)) {
    if (imports.some(([start, end]) => match.index >= start && match.index < end)) continue;
    const lineStart = source.lineStarts[lineAt(source, match.index) - 1]!;
    if (definition.test(code.slice(lineStart, match.index))) continue;
    return true;
  }
  return false;
}

/** Offsets of import statements (their names are not uses). */
function importRanges(source: LexedSource): Array<[number, number]> {
  const patterns: Record<string, RegExp> = {
    typescript: /(^|\n)[ \t]*(?:import\b[^;]*?\bfrom\b|import\s+[\w$]+\s*=|export\s*(?:\*|\{[^}]*\})\s*from\b)/g,
    javascript: /(^|\n)[ \t]*(?:import\b[^;]*?\bfrom\b|export\s*(?:\*|\{[^}]*\})\s*from\b)|\brequire\s*\(/g,
    python: /(^|\n)[ \t]*(?:from\s+[\w.]+\s+)?import\b(?:\([^)]*\)|[^\n])*/g,
    rust: /(^|\n)[ \t]*(?:pub(?:\s*\([^)]*\))?\s+)?use\b[^;]*;/g,
    go: /(^|\n)import\s*(?:\([^)]*\)|[^\n]*)/g,
  };
  const pattern = patterns[source.language];
  if (!pattern) return [];
  return [...source.code.matchAll(pattern)].map((match) => [match.index, match.index + match[0].length] as [number, number]);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
